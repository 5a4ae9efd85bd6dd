"""MM2's offset scenarios against real brokers: failover with zero re-delivery, checkpoints."""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from helpers.config import TRIGGERS, trigger_settings, write_config
from helpers.kafka import create_topic, produce, read_all, wait_for_count
from helpers.offsets import checkpoints, commit_on, consume, read_from
from helpers.processes import cli_json, run_cli, running_mirrorspark
from helpers.records import records
from helpers.waiting import wait_until

from mirrorspark.control.admin import admin_client, topic_partitions
from mirrorspark.formats import Checkpoint, OffsetSync
from mirrorspark.offsets.checkpoint_store import read_compacted_topic

pytestmark = pytest.mark.broker


@TRIGGERS
def test_failover_zero_redelivery(clusters, unique, tmp_path, trigger):
    topic, group = f"fo-{unique}", f"group-{unique}"
    create_topic(clusters["primary"], topic, 3)
    sent = records(300, 3, unique)
    produce(clusters["primary"], topic, sent)
    consumed = consume(clusters["primary"], group, topic, 130)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          "emit.checkpoints.interval.seconds = 1\n" + trigger_settings(trigger))
    with running_mirrorspark(config, tmp_path / "state"):
        wait_for_count(clusters["backup"], f"primary.{topic}", 300)
        # each partition's commit on primary, which exact translation gives on backup (a new topic, no
        # markers); an early checkpoint may be behind it while the offset syncs catch up, never ahead
        exact = {(f"primary.{topic}", p): n for p in range(3)
                 if (n := sum(int(k.split(b"-")[1]) % 3 == p for k in consumed))}
        translated = wait_until(lambda: (c := checkpoints(clusters["backup"], "primary", group)) == exact and c,
                                f"checkpoints {exact}")
    start = {(f"primary.{topic}", p): translated.get((f"primary.{topic}", p), 0) for p in range(3)}
    rest = read_from(clusters["backup"], group, start)
    assert len(rest) + len(consumed) == 300
    assert set(rest) | set(consumed) == {r["key"] for r in sent}  # nothing skipped
    assert not set(rest) & set(consumed)  # zero re-delivery
    syncs = [OffsetSync.from_record(k, v) for k, v, *_ in
             read_compacted_topic({"bootstrap.servers": clusters["primary"]}, "mm2-offset-syncs.backup.internal")]
    assert {s.partition for s in syncs if s.topic == topic} == {0, 1, 2}


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


def target_group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    from mirrorspark.control.groups import RdkafkaGroups
    found = RdkafkaGroups(admin=admin_client({"bootstrap.servers": bootstrap}), cluster=bootstrap).committed(group)
    return {key: offset for key, (offset, _) in found.items()}


def test_group_sync_empty_partition_nothing_mirrored_and_translation_behind_replication(clusters, unique, tmp_path):
    """MM2's testOneWayReplicationWithAutoOffsetSync, testReplicationWithEmptyPartition,
    testNoCheckpointsIfNoRecordsAreMirrored and testOffsetTranslationBehindReplicationFlow."""
    topic, empty, group, lagging = f"gs-{unique}", f"nothing-{unique}", f"sync-{unique}", f"lag-{unique}"
    create_topic(clusters["primary"], topic, 3)
    create_topic(clusters["primary"], empty, 1)
    produce(clusters["primary"], topic, records(300, 2, unique))  # partition 2 stays empty
    consume(clusters["primary"], group, topic, 300)
    commit_on(clusters["primary"], group, {(empty, 0): 0})
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}, {empty}\n"
                          "emit.checkpoints.interval.seconds = 1\nsync.group.offsets.enabled = true\n"
                          "sync.group.offsets.interval.seconds = 1\n")
    remote = f"primary.{topic}"
    with running_mirrorspark(config, tmp_path / "state"):
        wait_for_count(clusters["backup"], remote, 300)
        synced = wait_until(lambda: (o := target_group_offsets(clusters["backup"], group)) and
                            o.get((remote, 1)) == 150 and o, "group offsets synced to backup")
        assert synced == {(remote, 0): 150, (remote, 1): 150}  # exact; no empty partition, nothing unmirrored
        assert (f"primary.{empty}", 0) not in checkpoints(clusters["backup"], "primary", group)

        produce(clusters["primary"], topic, records(2000, 2, "more"))
        wait_for_count(clusters["backup"], remote, 2300)
        commit_on(clusters["primary"], lagging, {(topic, 0): 1035, (topic, 1): 1035})  # 90% of 1150
        wait_until(lambda: checkpoints(clusters["backup"], "primary", lagging) ==
                   {(remote, 0): 1035, (remote, 1): 1035}, "exact checkpoints of a group behind the flow")
        commit_on(clusters["primary"], lagging, {(topic, 0): 115, (topic, 1): 115})  # rewind to 10%
        wait_until(lambda: checkpoints(clusters["backup"], "primary", lagging) ==
                   {(remote, 0): 115, (remote, 1): 115}, "checkpoints following the upstream rewind")
        table = run_cli("offsets", "translate", "--config", str(config), "--group", lagging,
                        "--from", "primary", "--to", "backup")
    assert table.returncode == 0 and "translated@to" in table.stdout and remote in table.stdout


def monotonic(bootstrap: str, source: str, group: str) -> bool:
    latest: dict[tuple[str, int], int] = {}
    for key, value, *_ in read_compacted_topic({"bootstrap.servers": bootstrap}, f"{source}.checkpoints.internal"):
        cp = Checkpoint.from_record(key, value)
        if cp.group != group:
            continue
        if cp.downstream < latest.get((cp.topic, cp.partition), -1):
            return False
        latest[(cp.topic, cp.partition)] = cp.downstream
    return True


def test_restart_keeps_checkpoints_monotonic_with_offset_syncs_on_target(clusters, unique, tmp_path):
    """MM2's testRestartReplication and testOffsetSyncsTopicsOnTarget."""
    topic, group = f"rs-{unique}", f"rsgroup-{unique}"
    create_topic(clusters["primary"], topic, 1)
    produce(clusters["primary"], topic, records(100, 1, "one"))
    consume(clusters["primary"], group, topic, 50)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          "emit.checkpoints.interval.seconds = 1\n"
                          "primary->backup.offset-syncs.topic.location = target\n")
    remote = f"primary.{topic}"
    for expected in (50, 150):
        with running_mirrorspark(config, tmp_path / "state"):
            wait_until(lambda e=expected: checkpoints(clusters["backup"], "primary", group) == {(remote, 0): e},
                       f"checkpoint at {expected}")
        if expected == 50:
            produce(clusters["primary"], topic, records(100, 1, "two"))
            consume(clusters["primary"], group, topic, 100)
    assert monotonic(clusters["backup"], "primary", group)
    on_target = read_compacted_topic({"bootstrap.servers": clusters["backup"]}, "mm2-offset-syncs.primary.internal")
    assert topic in {OffsetSync.from_record(k, v).topic for k, v, *_ in on_target}
    on_source = read_compacted_topic({"bootstrap.servers": clusters["primary"]}, "mm2-offset-syncs.backup.internal")
    assert topic not in {OffsetSync.from_record(k, v).topic for k, v, *_ in on_source}


def test_transactional_source_gaps_never_skip_and_offset_syncs_can_be_off(clusters, unique, tmp_path):
    """MM2's transactions variant: commit markers leave gaps upstream; translation must neither skip
    a record nor (with mirrorspark's ranges) re-deliver one. A second flow with
    emit.offset-syncs.enabled=false replicates without any offset-syncs topic (MM2's test 5)."""
    topic, group = f"txo-{unique}", f"txgroup-{unique}"
    create_topic(clusters["primary"], topic, 1)
    producer = Producer({"bootstrap.servers": clusters["primary"], "transactional.id": f"txo-{unique}"})
    producer.init_transactions(30)
    sent = records(100, 1, unique)
    for start in range(0, 100, 10):
        producer.begin_transaction()
        for rec in sent[start:start + 10]:
            producer.produce(topic, **rec)
        producer.commit_transaction(30)
    seen = consume(clusters["primary"], group, topic, 45)
    (tmp_path / "mm2.properties").write_text(
        "clusters = primary, backup, third\n"
        + "".join(f"{n}.bootstrap.servers = {b}\n" for n, b in clusters.items())
        + "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
        "primary->backup.offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n"
        f"primary->backup.enabled = true\nprimary->third.enabled = true\ntopics = {topic}\n"
        "emit.checkpoints.interval.seconds = 1\nprimary->third.emit.offset-syncs.enabled = false\n")
    remote = f"primary.{topic}"
    with running_mirrorspark(tmp_path / "mm2.properties", tmp_path / "state"):
        wait_until(lambda: len(read_from(clusters["backup"], "reader", {(remote, 0): 0})) == 100, "100 records")
        translated = wait_until(lambda: checkpoints(clusters["backup"], "primary", group), "a checkpoint")
        wait_for_count(clusters["third"], remote, 100)
    rest = read_from(clusters["backup"], group, translated)
    assert set(rest) | set(seen) == {r["key"] for r in sent}  # nothing skipped
    redelivered = len(set(rest) & set(seen))
    print(f"transactional failover re-delivery: {redelivered} records")
    assert redelivered == 0
    # Another test's flow into the shared third cluster may have created the topic: none of this
    # topic's partitions has a sync in it.
    if "mm2-offset-syncs.third.internal" in topic_partitions(admin_client({"bootstrap.servers": clusters["primary"]})):
        to_third = read_compacted_topic({"bootstrap.servers": clusters["primary"]}, "mm2-offset-syncs.third.internal")
        assert topic not in {OffsetSync.from_record(k, v).topic for k, v, *_ in to_third}


def test_transforms_filter_and_drop_headers_and_translation_stays_exact_around_dropped_records(
        clusters, unique, tmp_path):
    """MM2's Single Message Transforms in the sink: a Filter guarded by a HasHeaderKey predicate drops
    every third record, DropHeaders removes a header from the others. Groups committed just after a
    dropped record and just before one translate to the next copied record: nothing skipped, nothing
    read twice (MM2 would translate both to its last offset sync before them)."""
    topic = f"smt-{unique}"
    create_topic(clusters["primary"], topic, 1)
    sent = []
    for i in range(30):
        headers = [("secret", b"s3cr3t"), ("seq", str(i).encode())] + ([("drop-me", b"1")] if i % 3 == 0 else [])
        sent.append({"partition": 0, "key": f"k{i}".encode(), "value": f"v{i}".encode(), "headers": headers})
    produce(clusters["primary"], topic, sent)
    after_dropped, before_dropped = f"smt-a-{unique}", f"smt-b-{unique}"
    commit_on(clusters["primary"], after_dropped, {(topic, 0): 13})  # 12 was dropped: 13 is the next copied
    commit_on(clusters["primary"], before_dropped, {(topic, 0): 12})  # the next to read is the dropped 12
    (tmp_path / "mm2.properties").write_text(
        "clusters = primary, backup\n"
        f"primary.bootstrap.servers = {clusters['primary']}\nbackup.bootstrap.servers = {clusters['backup']}\n"
        "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
        "offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n"
        f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
        f"primary->backup.groups = smt-.-{unique}\nemit.checkpoints.interval.seconds = 1\n"
        "transforms = dropMarked, noSecret\n"
        "transforms.dropMarked.type = org.apache.kafka.connect.transforms.Filter\n"
        "transforms.dropMarked.predicate = marked\n"
        "transforms.noSecret.type = org.apache.kafka.connect.transforms.DropHeaders\n"
        "transforms.noSecret.headers = secret\n"
        "predicates = marked\n"
        "predicates.marked.type = org.apache.kafka.connect.transforms.predicates.HasHeaderKey\n"
        "predicates.marked.name = drop-me\n")
    remote = f"primary.{topic}"
    with running_mirrorspark(tmp_path / "mm2.properties", tmp_path / "state"):
        wait_for_count(clusters["backup"], remote, 20)
        translated = {group: wait_until(lambda g=group: checkpoints(clusters["backup"], "primary", g),
                                        f"a checkpoint of {group}") for group in (after_dropped, before_dropped)}
    copied = read_all(clusters["backup"], remote)
    assert [int(dict(r.headers)["seq"]) for r in copied] == [i for i in range(30) if i % 3]
    assert all("secret" not in dict(r.headers) for r in copied)
    # Source 13 (and the dropped 12 before it) is the 9th copied record: target offset 8.
    assert translated[after_dropped] == {(remote, 0): 8}
    assert translated[before_dropped] == {(remote, 0): 8}
