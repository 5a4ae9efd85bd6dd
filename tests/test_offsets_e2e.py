"""MM2's offset scenarios against real brokers: failover with zero re-delivery, checkpoints."""
from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from conftest import run_cli, running_mirrorspark, write_config
from kafka_tools import create_topic, produce, wait_for_count
from test_topologies_and_topics import records, wait_until

from mirrorspark.offsets.checkpoint_store import CheckpointStore, read_compacted_topic
from mirrorspark.offsets.formats import OffsetSync

pytestmark = pytest.mark.broker


def consume(bootstrap: str, group: str, topic: str, n: int) -> list[bytes]:
    """Read ``n`` records of ``topic`` as ``group`` and commit each; return their keys."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    keys: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(keys) < n and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and not msg.error():
            keys.append(msg.key())
            consumer.commit(msg, asynchronous=False)
    consumer.close()
    assert len(keys) == n
    return keys


def checkpoints(bootstrap: str, source: str, group: str) -> dict[tuple[str, int], int]:
    store = CheckpointStore()
    store.load({"bootstrap.servers": bootstrap}, f"{source}.checkpoints.internal")
    return {(c.topic, c.partition): c.downstream for c in store.for_group(group)}


def read_from(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> list[bytes]:
    """Everything from the given offsets to the end, as a consumer that failed over would."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(t, p, o) for (t, p), o in offsets.items()])
    keys, eof = [], set()
    deadline = time.monotonic() + 60
    while len(eof) < len(offsets) and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            eof.add((msg.topic(), msg.partition()))
            continue
        keys.append(msg.key())
    consumer.close()
    return keys


def test_failover_zero_redelivery(clusters, unique, tmp_path):
    topic, group = f"fo-{unique}", f"group-{unique}"
    create_topic(clusters["primary"], topic, 3)
    sent = records(300, 3, unique)
    produce(clusters["primary"], topic, sent)
    consumed = consume(clusters["primary"], group, topic, 130)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          "emit.checkpoints.interval.seconds = 1\n")
    with running_mirrorspark(config, tmp_path / "state"):
        wait_for_count(clusters["backup"], f"primary.{topic}", 300)
        committed = {p for p in range(3) if any(int(k.split(b"-")[1]) % 3 == p for k in consumed)}
        translated = wait_until(lambda: (c := checkpoints(clusters["backup"], "primary", group)) and
                                {p for _, p in c} == committed and c, "checkpoints for every committed partition")
    start = {(f"primary.{topic}", p): translated.get((f"primary.{topic}", p), 0) for p in range(3)}
    rest = read_from(clusters["backup"], group, start)
    assert len(rest) + len(consumed) == 300
    assert set(rest) | set(consumed) == {r["key"] for r in sent}  # nothing skipped
    assert not set(rest) & set(consumed)  # zero re-delivery
    syncs = [OffsetSync.from_record(k, v) for k, v in
             read_compacted_topic({"bootstrap.servers": clusters["primary"]}, "mm2-offset-syncs.backup.internal")]
    assert {s.topic for s in syncs} == {topic} and {s.partition for s in syncs} == {0, 1, 2}


def cli_json(*args: str) -> dict:
    done = run_cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_failover_and_failback_with_the_cli(clusters, unique, tmp_path):
    """active/active; the group fails over to backup and back to primary with `mirrorspark failover`,
    reading every record exactly once; a live consumer on the target makes --execute refuse."""
    topic, group = f"fb-{unique}", f"fbgroup-{unique}"
    create_topic(clusters["primary"], topic, 2)
    sent = records(200, 2, unique)
    produce(clusters["primary"], topic, sent)
    seen = consume(clusters["primary"], group, topic, 80)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          "primary->backup.enabled = true\nbackup->primary.enabled = true\n"
                          f"topics = {topic}\nemit.checkpoints.interval.seconds = 1\n")
    remote = f"primary.{topic}"
    base = ["failover", "--config", str(config), "--group", group]
    with running_mirrorspark(config, tmp_path / "state"):
        wait_for_count(clusters["backup"], remote, 200)
        plan = wait_until(lambda: (p := cli_json(*base, "--from", "primary", "--to", "backup"))["partitions"]
                          and sum(r["checkpoint_upstream"] for r in p["partitions"]) == 80 and p,
                          "a failover plan covering the group's commits")
        assert plan["from_reachable"] and not plan["executed"]
        assert all(r["behind_checkpoint"] == 0 and r["not_replicated"] == 0 for r in plan["partitions"])

        blocker = Consumer({"bootstrap.servers": clusters["backup"], "group.id": group})
        blocker.subscribe([remote])
        wait_until(lambda: blocker.poll(0.5) is None and blocker.assignment(), "the blocking consumer to join")
        refused = run_cli(*base, "--from", "primary", "--to", "backup", "--execute")
        blocker.close()
        assert refused.returncode == 1 and "active members on cluster 'backup'" in refused.stderr

        done = cli_json(*base, "--from", "primary", "--to", "backup", "--execute")
        assert done["executed"] and len(done["committed"]) == len(plan["partitions"])
        seen += consume(clusters["backup"], group, remote, 70)  # the application now runs on backup

        back = wait_until(lambda: (p := cli_json(*base, "--from", "backup", "--to", "primary"))["partitions"]
                          and sum(r["translated"] for r in p["partitions"]) == 150 and p,
                          "failback checkpoints on primary")
        assert {r["topic"] for r in back["partitions"]} == {topic}
        cli_json(*base, "--from", "backup", "--to", "primary", "--execute")
    seen += consume(clusters["primary"], group, topic, 50)  # and back on primary
    assert sorted(seen) == sorted(r["key"] for r in sent)  # every record exactly once
