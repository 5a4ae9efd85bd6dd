"""Drill: a remote topic deleted on the target under a checkpointed group, against real brokers.

A group is checkpointed at 900 of 1,500 records per partition; the remote topic is deleted on the
target; 1,500 more records per partition are produced. The re-created remote topic is refilled from
the source's first record, in order, before the new ones: the target holds every record once, the
checkpoints translate 900 -> 900 in the new topic, failover commits them, and the failed-over
consumer re-reads 0 and skips 0. Nothing is reported lost (the source still has every record). A
malformed record planted in the checkpoints topic beforehand is skipped, counted and named.
"""
from __future__ import annotations

import json
from typing import ClassVar

import pytest
from confluent_kafka import Producer
from helpers.kafka import create_topic, lost_and_duplicated, produce, seqs, wait_for_count
from helpers.offsets import commit_on, read_from
from helpers.processes import run_cli, running_mirrorspark
from helpers.records import numbered
from helpers.rest import detail, metric, rest
from helpers.waiting import wait_until

from mirrorspark.client.failover import CheckpointAhead, FailoverPlan, PartitionPlan, execute_failover
from mirrorspark.control.admin import admin_client, ensure_compacted_topic, topic_partitions
from mirrorspark.control.groups import GroupDescription
from mirrorspark.formats import Checkpoint

pytestmark = pytest.mark.broker

PER_PARTITION, COMMITTED = 1_500, 900


def failover_json(config, group: str, *extra: str) -> dict:
    done = run_cli("failover", "--config", str(config), "--group", group, "--from", "east", "--to", "west",
                   "--json", *extra)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


@pytest.mark.long
def test_remote_topic_recreated_under_a_checkpointed_group_skips_nothing_after_failover(clusters, unique, tmp_path):
    topic, group = f"xl-{unique}", f"xl-group-{unique}"
    remote = f"east.{topic}"
    # Aliases of their own, so the checkpoints topic (east.checkpoints.internal) is this test's alone.
    checkpoints_topic = "east.checkpoints.internal"
    target = admin_client({"bootstrap.servers": clusters["backup"]})
    ensure_compacted_topic(target, checkpoints_topic, 1)
    planted = Producer({"bootstrap.servers": clusters["backup"]})
    bad = Checkpoint("gg", remote, 0, 1, 1)  # point 4: a checkpoint whose group name is not UTF-8
    planted.produce(checkpoints_topic, bad.value_bytes(), bad.key_bytes().replace(b"gg", b"\xff\xfe"), partition=0)
    assert planted.flush(10) == 0
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, numbered(0, 2 * PER_PARTITION, 2))
    commit_on(clusters["primary"], group, {(topic, 0): COMMITTED, (topic, 1): COMMITTED})
    config = tmp_path / "mm2.properties"
    config.write_text(
        "clusters = east, west\n"
        f"east.bootstrap.servers = {clusters['primary']}\nwest.bootstrap.servers = {clusters['backup']}\n"
        "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
        "offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n"
        f"east->west.enabled = true\neast->west.topics = {topic}\n"
        "emit.checkpoints.interval.seconds = 1\n")  # the topic refresh keeps MM2's default, 10 minutes
    state = tmp_path / "state"

    def translated() -> dict[int, int]:
        plan = failover_json(config, group)
        return {r["partition"]: r["translated"] for r in plan["partitions"] if r["topic"] == remote}

    with running_mirrorspark(config, state) as mirror:
        wait_for_count(clusters["backup"], remote, 2 * PER_PARTITION)
        wait_until(lambda: translated() == {0: COMMITTED, 1: COMMITTED}, "checkpoints 900 -> 900", 60)
        target.delete_topics([remote])[remote].result(30)
        produce(clusters["primary"], topic, numbered(2 * PER_PARTITION, 4 * PER_PARTITION, 2))
        # Seen by the identity check before a checkpoint round, or by the next batch (whose target went
        # back), not by the (10-minute) topic refresh: the flow restarts, re-creates and refills it.
        wait_until(lambda: topic_partitions(target).get(remote) == 2, "the remote topic re-created", 180)
        wait_for_count(clusters["backup"], remote, 4 * PER_PARTITION, timeout=180)
        wait_until(lambda: translated() == {0: COMMITTED, 1: COMMITTED}, "checkpoints in the refilled topic", 60)
        flow = detail(state, "east->west")
        skipped = metric(rest(state, "/metrics"), "mirrorspark_internal_records_skipped_total",
                         topic=checkpoints_topic)
        done = failover_json(config, group, "--execute", "--state-dir", str(state))
        output = mirror.output()

    landed = seqs(clusters["backup"], remote)
    lost, duplicated = lost_and_duplicated(range(4 * PER_PARTITION), landed)
    committed = {(c["topic"], c["partition"]): c["offset"] for c in done["committed"]}
    read = [int(key) for key in read_from(clusters["backup"], group, committed)]  # numbered(): key = seq
    # Offsets 900.. of each partition: seq 2 * 900 on (numbered() spreads seqs over the 2 partitions).
    unread = range(2 * COMMITTED, 4 * PER_PARTITION)
    skipped_records, twice = lost_and_duplicated(unread, read)
    reread = twice + sum(1 for seq in read if seq not in unread)  # consumed on the source already
    print(f"refill drill: target lost {len(lost)}, duplicated {duplicated}; failover skipped {len(skipped_records)}, "
          f"re-read {reread}, reported lost {flow['records_lost']}")
    assert not lost and duplicated == 0
    assert committed == {(remote, 0): COMMITTED, (remote, 1): COMMITTED}
    assert not skipped_records and reread == 0 and sorted(read) == list(unread)
    assert flow["records_lost"] == 0 and flow["state"] == "running"
    assert "is refilled from" in output
    assert skipped == 1 and f"{checkpoints_topic}[0] offset 0 is not a checkpoint" in output


def test_failover_refuses_a_checkpoint_past_the_log_end_and_commits_nothing():
    rows = [PartitionPlan("A.t", 0, "t", 900, 900, end=300), PartitionPlan("A.t", 1, "t", 10, 10, end=300)]
    plan = FailoverPlan("g", "A", "B", "EMPTY", rows, source_reachable=False)
    with pytest.raises(CheckpointAhead, match=r"A\.t\[0\] checkpoint 900 > end 300"):
        execute_failover(None, plan)  # refused before any client is built
    assert rows[0].as_dict()["past_end"] and not rows[1].as_dict()["past_end"]


def test_failover_leaves_out_checkpoints_of_remote_partitions_that_are_gone(monkeypatch):
    import mirrorspark.client.failover as failover

    rows = [PartitionPlan("A.gone", 0, "gone", 5, 5, end=None), PartitionPlan("A.t", 0, "t", 7, 7, end=10)]
    plan = FailoverPlan("g", "A", "B", "EMPTY", rows, source_reachable=False)
    committed: dict = {}

    class Config:
        clusters: ClassVar[dict[str, None]] = {"B": None}
    class Groups:  # the target's groups: g idle, its commits kept here
        def __init__(self, *, admin, cluster: str) -> None: ...

        def describe(self, group: str) -> GroupDescription:
            return GroupDescription(state="EMPTY", members=0)

        def commit(self, group: str, offsets: dict) -> None:
            committed.update(offsets)

    monkeypatch.setattr(failover, "_connection", lambda config, alias: {})
    monkeypatch.setattr(failover, "admin_client", lambda conf: None)
    monkeypatch.setattr(failover, "RdkafkaGroups", Groups)
    assert execute_failover(Config(), plan) == {("A.t", 0): 7}
    assert committed == {("A.t", 0): (7, "")} and rows[0].as_dict()["missing"]
