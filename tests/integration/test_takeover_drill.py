"""Taking over from real MirrorMaker 2 (connect-mirror from Maven Central), against real brokers.

Records carry a sequence number (header ``seq``). MM2 copies part of a topic that keeps growing and
is killed (-9) in the middle of the copy, so it has written records it never committed.
``mirrorspark migrate from-mm2 --execute`` then places each partition just after the last record
MM2 wrote, and ``mirrorspark run`` copies the rest: counted exactly, nothing lost, nothing copied
twice, and a consumer group failed over afterwards re-reads nothing and skips nothing.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from helpers.java import QUIET_LOG4J, classpath
from helpers.kafka import create_topic, lost_and_duplicated, seqs, wait_for_count
from helpers.offsets import commit_on
from helpers.processes import run_cli, running_mirrorspark
from helpers.records import numbered
from helpers.waiting import wait_until

from mirrorspark.control.admin import admin_client
from mirrorspark.local.cluster import java_executable
from mirrorspark.takeover.mm2_state import worker_group_state

pytestmark = pytest.mark.broker

PARTITIONS, TOTAL = 3, 30_000


def config_text(clusters: dict[str, str], topic: str) -> str:
    """One file for both: MM2's dedicated mode reads it, and so does mirrorspark (own aliases, so the
    MM2 state topics are this test's alone)."""
    return ("clusters = north, south\n"
            f"north.bootstrap.servers = {clusters['primary']}\nsouth.bootstrap.servers = {clusters['backup']}\n"
            f"north->south.enabled = true\nnorth->south.topics = {topic}\n"
            "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
            "heartbeats.topic.replication.factor = 1\n"
            "offset-syncs.topic.replication.factor = 1\noffset.storage.replication.factor = 1\n"
            "config.storage.replication.factor = 1\nstatus.storage.replication.factor = 1\n"
            "emit.checkpoints.interval.seconds = 1\nsync.topic.acls.enabled = false\n"
            "south.offset.flush.interval.ms = 5000\n")  # a worker setting: per target cluster in MM2


def start_mm2(work: Path) -> subprocess.Popen:
    (work / "log4j2.properties").write_text(QUIET_LOG4J)
    log = (work / "mm2.log").open("wb")
    return subprocess.Popen([java_executable(), "-Xms128m", "-Xmx384m", "-XX:+UseSerialGC",
                             f"-Dlog4j2.configurationFile={work / 'log4j2.properties'}", "-cp", classpath(),
                             "org.apache.kafka.connect.mirror.MirrorMaker", str(work / "mm2.properties")],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def migrate(config: Path, state: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_cli("migrate", "from-mm2", "--config", str(config), "--state-dir", str(state), "--json", *extra,
                   timeout=300)


def feed(bootstrap: str, topic: str, stop: threading.Event, rate: int = 1_500) -> None:
    """TOTAL numbered records at about ``rate`` per second, while MM2 copies and after it stops."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    for start in range(0, TOTAL, rate // 10):
        if stop.is_set():
            break
        for r in numbered(start, min(TOTAL, start + rate // 10), PARTITIONS, size=50):
            producer.produce(topic, r["value"], r["key"], partition=r["partition"], headers=r["headers"])
        producer.poll(0)
        time.sleep(0.1)
    producer.flush(60)


def worker_group_gone(bootstrap: str, group: str) -> bool:
    state = worker_group_state(admin_client({"bootstrap.servers": bootstrap}), group)
    return state.name in ("EMPTY", "DEAD")


@pytest.mark.long
def test_takeover_after_mm2_is_killed_mid_copy_loses_nothing_and_copies_nothing_twice(clusters, unique, tmp_path):
    topic, group = f"tk-{unique}", f"tk-group-{unique}"
    remote = f"north.{topic}"
    create_topic(clusters["primary"], topic, PARTITIONS)
    config = tmp_path / "mm2.properties"
    config.write_text(config_text(clusters, topic))
    state = tmp_path / "state"
    stop_feeding = threading.Event()
    feeder = threading.Thread(target=feed, args=(clusters["primary"], topic, stop_feeding), daemon=True)
    feeder.start()
    mm2 = start_mm2(tmp_path)
    try:
        wait_for_count(clusters["backup"], remote, 6_000, timeout=240)
        running = migrate(config, state)  # refused while MM2 runs: nothing written
        assert running.returncode == 1 and "still runs" in running.stderr, running.stderr
        assert "Traceback" not in running.stderr and not (state / "north" / "south" / "takeover.json").exists()
        time.sleep(3)  # MM2 keeps copying (and committing every 5 s) a little longer
    finally:
        os.killpg(mm2.pid, signal.SIGKILL)  # kill -9 in the middle of the copy
        mm2.wait(30)
    copied_by_mm2 = sum(1 for _ in seqs(clusters["backup"], remote))
    wait_until(lambda: worker_group_gone(clusters["backup"], "north-mm2"), "MM2's worker group to expire", 90)

    done = migrate(config, state, "--execute")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)["flows"][0]
    rows = [r for r in plan["partitions"] if r["topic"] == topic]
    assert len(rows) == PARTITIONS and plan["copied_twice"] == 0
    assert all("record(s) compared" in r["method"] and r["lost"] == 0 for r in rows), rows
    uncommitted = sum(r["written_after_commit"] for r in rows)
    assert sum(r["target_end"] for r in rows) == copied_by_mm2
    print(f"takeover: MM2 copied {copied_by_mm2} records, {uncommitted} of them after its last offset commit; "
          f"plan: {[(r['partition'], r['mm2_committed'], r['resume']) for r in rows]}")

    feeder.join(120)
    with running_mirrorspark(config, state) as mirror:
        wait_for_count(clusters["backup"], remote, TOTAL, timeout=240)
        time.sleep(3)
        landed = seqs(clusters["backup"], remote)
        # A consumer group on the source, checkpointed by mirrorspark, then failed over.
        # Partition 0 stopped early in what MM2 copied, 1 just before where MM2 stopped, 2 in what
        # mirrorspark copied: the mapping covers all three (MM2's offset syncs, the compared tail, ours).
        positions = {(topic, 0): 3_000, (topic, 1): min(r["resume"] for r in rows) - 5, (topic, 2): 9_500}
        commit_on(clusters["primary"], group, positions)
        wait_until(lambda: (p := failover(config, group))["partitions"] and
                   sum(r["checkpoint_upstream"] for r in p["partitions"]) == sum(positions.values()) and p,
                   "checkpoints of the group", 90)
        assert "from MirrorMaker 2" in mirror.output() or "resume where MM2 stopped" in mirror.output()
    lost, duplicated = lost_and_duplicated(range(TOTAL), landed)
    print(f"takeover drill: {len(landed)} on the target, lost {len(lost)}, duplicated {duplicated}")
    assert not lost and duplicated == 0 and len(landed) == TOTAL
    committed = failover(config, group, "--execute")
    offsets = {(c["topic"], c["partition"]): c["offset"] for c in committed["committed"]}
    assert len(offsets) == PARTITIONS
    reader = Consumer({"bootstrap.servers": clusters["backup"], "group.id": f"{group}-check",
                       "enable.auto.commit": False})
    first = {}
    for (t, p), offset in offsets.items():
        reader.assign([TopicPartition(t, p, offset)])
        msg = reader.poll(10)
        first[p] = int(dict(msg.headers())["seq"])
    reader.close()
    # The group had read seq < positions on each source partition: the next record read is exactly the next one.
    expected = {p: min(s for s in range(TOTAL) if s % PARTITIONS == p and s // PARTITIONS >= positions[(topic, p)])
                for p in range(PARTITIONS)}
    assert first == expected, (first, expected)  # 0 re-delivered, 0 skipped


def failover(config: Path, group: str, *extra: str) -> dict:
    done = run_cli("failover", "--config", str(config), "--group", group, "--from", "north", "--to", "south",
                   "--json", *extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def mm2_offset_record(alias: str, topic: str, partition: int, offset: int) -> tuple[bytes, bytes]:
    key = json.dumps(["MirrorSourceConnector", {"cluster": alias, "partition": partition, "topic": topic}])
    return key.encode(), json.dumps({"offset": offset}).encode()


def bad_input_setup(clusters: dict[str, str], tmp_path: Path, alias: str, topic: str) -> Path:
    config = tmp_path / "mm2.properties"
    config.write_text(config_text(clusters, topic).replace("north", alias))
    return config


@pytest.mark.parametrize("case", ["missing", "unreadable", "other-policy"])
def test_takeover_refuses_what_it_cannot_trust_and_writes_nothing(clusters, unique, tmp_path, case):
    alias = f"m{unique[:6]}{case[0]}"
    topic = f"tkbad-{unique}"
    create_topic(clusters["primary"], topic, 1)
    config = bad_input_setup(clusters, tmp_path, alias, topic)
    offsets_topic = f"mm2-offsets.{alias}.internal"
    if case != "missing":
        create_topic(clusters["backup"], offsets_topic, 1)
        producer = Producer({"bootstrap.servers": clusters["backup"]})
        if case == "unreadable":
            producer.produce(offsets_topic, b"{not json", b"\xff\xfe", partition=0)
        else:
            key, value = mm2_offset_record(alias, topic, 0, 10)
            producer.produce(offsets_topic, value, key, partition=0)
            # MM2 ran with IdentityReplicationPolicy: `topic`, not `alias.topic`
            create_topic(clusters["backup"], topic, 1)
        assert producer.flush(10) == 0
    state = tmp_path / "state"
    done = migrate(config, state, "--execute", "--wait", "1")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    expected = {"missing": f"{offsets_topic} does not exist on cluster 'south'",
                "unreadable": "holds no MirrorSourceConnector offsets",
                "other-policy": "so its policy differs"}[case]
    assert expected in done.stderr, done.stderr
    assert not list(state.rglob("takeover.json")) and not list(state.rglob("offset-ranges"))
