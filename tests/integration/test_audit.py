"""``mirrorspark audit`` against real brokers: a clean copy audits clean with exact counts; a target
changed behind the replicator's back is caught with exact counts."""
from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import TopicPartition
from helpers.config import write_config
from helpers.kafka import create_topic, produce, wait_for_count
from helpers.offsets import checkpoints, commit_on
from helpers.processes import run_cli, running_mirrorspark
from helpers.waiting import wait_until

from mirrorspark.control.admin import admin_client
from mirrorspark.integrity.loss import LossLog
from mirrorspark.offsets.range_log import RangeLog
from mirrorspark.offsets.ranges import RangeRow
from mirrorspark.partition import OffsetRun
from mirrorspark.state.files import LocalFiles

FLOW = "primary->backup"


def range_row(upstream: int, downstream: int, count: int, exact_gap_after: bool) -> RangeRow:
    """A run as the range log keeps it."""
    return RangeRow(OffsetRun(upstream, downstream, count), exact_gap_after)


def numbered(first: int, n: int, tag: str, partition: int | None = None) -> list[dict]:
    """Records ``first .. first+n-1`` with a ``seq`` header (alternating partitions unless given)."""
    now = int(time.time() * 1000)
    return [{"partition": i % 2 if partition is None else partition, "key": f"{tag}-{i}".encode(),
             "value": f"{tag}-value-{i}".encode(), "timestamp": now + i,
             "headers": [("seq", str(i).encode()), ("tag", tag.encode())]} for i in range(first, first + n)]


def audit(config, state, topics: str) -> tuple[int, dict]:
    """``audit --json`` of ``topics`` only (the flow also replicates the heartbeats topic)."""
    done = run_cli("audit", str(config), "--flow", FLOW, "--state-dir", str(state), "--json", "--topics", topics,
                   timeout=240)
    assert done.returncode in (0, 1) and done.stdout.startswith("{"), done.stderr
    return done.returncode, json.loads(done.stdout)


def by_partition(report: dict) -> dict[int, dict]:
    return {p["partition"]: p for p in report["partitions"]}


@pytest.mark.long
@pytest.mark.broker
def test_audit_clean_copy_then_exact_counts_of_a_tampered_target(clusters, unique, tmp_path):
    """300 records (150 per partition) are replicated and audit clean. Then, with mirrorspark stopped,
    the target is changed in ways whose counts are known exactly:

    - duplicated (partition 1): a record is written directly into the remote partition (target
      offset 150), then one more source record is replicated by a short run, which writes it at 151;
      no run maps target offset 150 -> exactly 1 duplicated.
    - differing (partition 0): Kafka records are immutable, so "changed behind the replicator's back"
      is simulated by the one thing the audit trusts: a source record (offset 150) and a record equal
      to it but for its ``seq`` header written directly at target offset 150, paired by extending the
      range log's run by one (as if the replicator had written it) -> exactly 1 differing.
    - missing (partition 0): the first 5 records of the remote partition are deleted (deleteRecords)
      -> source offsets 0..4 have no target record -> exactly 5 missing.
    - unverified (partition 1): the range log is thinned as it is after too many runs (the run of
      offsets 50..99 forgotten, the gap marked unknown) -> those 50 source and 50 target records are
      neither missing nor duplicated but unverified.

    A loss report for the topic and the audit's findings make the group's failover verdict unsafe.
    """
    topic, group = f"audit-{unique}", f"auditgroup-{unique}"
    remote = f"primary.{topic}"
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, numbered(0, 300, unique))
    commit_on(clusters["primary"], group, {(topic, 0): 60, (topic, 1): 40})
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"{FLOW}.enabled = true\n{FLOW}.topics = {topic}\nemit.checkpoints.interval.seconds = 1\n")
    state = tmp_path / "state"
    with running_mirrorspark(config, state):
        wait_for_count(clusters["backup"], remote, 300)
        wait_until(lambda: sum(checkpoints(clusters["backup"], "primary", group).values()) == 100,
                   "checkpoints of the group's 100 commits")

    code, clean = audit(config, state, topic)
    assert code == 0 and clean["ok"]
    assert clean["totals"] == {"source_records": 300, "target_records": 300, "matched": 300, "missing": 0,
                               "duplicated": 0, "differing": 0, "unverified": 0, "source_removed": 0}
    for p in (0, 1):
        row = by_partition(clean)[p]
        assert (row["remote_topic"], row["source_range"], row["target_range"]) == (remote, [0, 149], [0, 149])
        assert (row["source_records"], row["target_records"], row["matched"]) == (150, 150, 150)
        assert row["source_checksum"] == row["target_checksum"] != "0" * 16
    [verdict] = clean["groups"]
    assert verdict["group"] == group and verdict["safe"], verdict
    assert any(r["text"] == "lag on primary: 200 record(s) not consumed yet, all of them replicated"
               for r in verdict["reasons"])

    # duplicated: a direct write into remote partition 1, then one more record replicated after it
    produce(clusters["backup"], remote, [{"partition": 1, "key": b"intruder", "value": b"not from primary"}])
    produce(clusters["primary"], topic, numbered(300, 1, unique, partition=1))
    with running_mirrorspark(config, state):
        wait_for_count(clusters["backup"], remote, 302)

    # differing: source offset 150 of partition 0 paired with a different record at target offset 150
    original = numbered(301, 1, unique, partition=0)[0]
    produce(clusters["primary"], topic, [original])
    produce(clusters["backup"], remote, [original | {"headers": [("seq", b"999"), ("tag", unique.encode())]}])
    folder = state / "flows" / "primary" / "backup"
    ranges_log = RangeLog(LocalFiles(folder / "offset-ranges"))
    ranges = ranges_log.load()
    assert ranges.rows(topic, 0) == [range_row(0, 0, 150, True)]
    assert ranges.rows(topic, 1) == [range_row(0, 0, 150, True), range_row(150, 151, 1, True)]
    ranges.restore(topic, 0, [range_row(0, 0, 151, True)])
    # unverified (partition 1): history thinned as after too many runs (run 50..99 forgotten)
    ranges.restore(topic, 1, [range_row(0, 0, 50, False), range_row(100, 100, 50, True), range_row(150, 151, 1, True)])
    ranges_log.save(ranges, [(topic, 0), (topic, 1)])

    # missing: the first 5 records of remote partition 0 deleted
    admin = admin_client({"bootstrap.servers": clusters["backup"]})
    for future in admin.delete_records([TopicPartition(remote, 0, 5)]).values():
        future.result(timeout=30)
    LossLog(LocalFiles(folder), FLOW).report(topic, 1, 42, 42, "simulated for the audit test")

    code, found = audit(config, state, r"audit-\w+")
    assert code == 1 and not found["ok"]
    assert found["totals"] == {"source_records": 302, "target_records": 298, "matched": 246, "missing": 5,
                               "duplicated": 1, "differing": 1, "unverified": 100, "source_removed": 0}
    p0, p1 = by_partition(found)[0], by_partition(found)[1]
    assert (p0["source_range"], p0["target_range"], p0["source_records"], p0["target_records"]) == \
        ([0, 150], [0, 150], 151, 146)
    assert (p0["missing"], p0["first_missing"], p0["differing"], p0["first_differing"], p0["duplicated"]) == \
        (5, 0, 1, 150, 0)
    assert (p1["source_range"], p1["target_range"], p1["source_records"], p1["target_records"], p1["runs"]) == \
        ([0, 150], [0, 151], 151, 152, 3)
    assert (p1["duplicated"], p1["first_duplicated"], p1["missing"], p1["differing"]) == (1, 150, 0, 0)
    assert (p1["matched"], p1["unverified"]) == (101, 100)
    assert p0["source_checksum"] != p0["target_checksum"] and p1["source_checksum"] != p1["target_checksum"]
    [verdict] = found["groups"]
    failed = {r["text"].split(":")[0]: r["text"] for r in verdict["reasons"] if not r["ok"]}
    assert not verdict["safe"] and set(failed) == {"data loss", "audit"}, verdict
    assert failed["audit"] == "audit: 5 missing, 1 duplicated, 1 differing record(s) in its topics"
    assert "simulated for the audit test" in failed["data loss"]

    table = run_cli("audit", str(config), "--flow", FLOW, "--state-dir", str(state), "--topics", "nothing-.*")
    assert table.returncode == 2 and "--topics 'nothing-.*' matches none" in table.stderr


@pytest.mark.broker
def test_a_real_time_flow_stopped_mid_batch_records_the_batch_and_audits_at_once(clusters, unique, tmp_path):
    """Real-time batches of 60 s: the stop ends the batch in flight and records it before the query
    stops, so `audit` right after the stop matches every copy, and the next start has nothing of an
    interrupted run to compare. Cut off, the batch was known only at the next start, and a flow's
    first batch not at all (ADR 0027 section 17). A group that read some of the records has exact
    checkpoints right after the stop: the stop's last checkpoint round follows the recorded batch
    (until then nothing of the batch was translatable: no checkpoint, or one behind what it read)."""
    topic, remote, group = f"rtstop-{unique}", f"primary.rtstop-{unique}", f"rtstop-group-{unique}"
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, numbered(0, 40, unique))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"{FLOW}.enabled = true\n{FLOW}.topics = {topic}\nmirrorspark.trigger = realtime\n"
                          "mirrorspark.realtime.batch.seconds = 60\nspark.master = local[2]\n"
                          "emit.checkpoints.interval.seconds = 1\n")
    state = tmp_path / "state"
    started = time.monotonic()
    with running_mirrorspark(config, state):
        wait_for_count(clusters["backup"], remote, 40)
        commit_on(clusters["primary"], group, {(topic, 0): 7, (topic, 1): 12})
        time.sleep(2)  # a checkpoint round or two, to which nothing of the open batch is known yet
    assert time.monotonic() - started < 60, "the first real-time batch would have ended by itself"
    # A fresh copy keeps the offsets: the exact translation of each is the same offset.
    assert checkpoints(clusters["backup"], "primary", group) == {(remote, 0): 7, (remote, 1): 12}
    code, report = audit(config, state, topic)
    assert code == 0 and report["totals"]["matched"] == 40, report
    produce(clusters["primary"], topic, numbered(40, 10, unique))
    with running_mirrorspark(config, state) as mirror:
        wait_for_count(clusters["backup"], remote, 50)
        said = mirror.output()
    assert "resumes an interrupted run" not in said, said
    code, report = audit(config, state, topic)
    assert code == 0 and report["totals"]["matched"] == 50 and report["totals"]["duplicated"] == 0, report
