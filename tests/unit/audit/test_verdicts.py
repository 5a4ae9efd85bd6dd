"""What the counts decide: the exit code (report.ok), each checkpointed group's failover verdict from
its topics' counts, and the notes for partitions a side no longer has."""
from __future__ import annotations

import pytest

from mirrorspark.audit.plan import PartitionRuns
from mirrorspark.audit.report import AuditReport, PartitionAudit
from mirrorspark.audit.verdicts import absent_partitions, checkpointed_groups, group_verdicts, problems_by_topic
from mirrorspark.formats import Checkpoint
from mirrorspark.integrity.loss import LossReport
from mirrorspark.offsets.ranges import RangeRow
from mirrorspark.partition import OffsetRun

ORDERS = PartitionRuns(source_topic="orders", remote_topic="primary.orders", partition=0,
                       runs=(RangeRow(OffsetRun(0, 0, 100), exact_gap_after=True),))
PAYMENTS = PartitionRuns(source_topic="payments", remote_topic="primary.payments", partition=0,
                         runs=(RangeRow(OffsetRun(0, 0, 60), exact_gap_after=True),))


def found(plan: PartitionRuns, **counts: int) -> PartitionAudit:
    return PartitionAudit(source_topic=plan.source_topic, remote_topic=plan.remote_topic, partition=plan.partition,
                          runs=len(plan.runs), source_range=(0, 9), target_range=(0, 9), **counts)


def report(*partitions: PartitionAudit) -> AuditReport:
    return AuditReport(flow="primary->backup", state="file:/s", partitions=list(partitions), data_loss=[], groups=[])


@pytest.mark.parametrize("counts, ok", [
    ({"matched": 10}, True),
    ({"matched": 8, "unverified": 1, "source_removed": 1}, True),   # not judged, and nothing says they are wrong
    ({"matched": 9, "missing": 1}, False),
    ({"matched": 10, "duplicated": 1}, False),
    ({"matched": 9, "differing": 1}, False),
])
def test_only_missing_duplicated_or_differing_records_fail_the_audit(counts, ok):
    assert report(found(ORDERS, source_records=10, **counts)).ok is ok
    assert report(found(ORDERS, matched=10), found(PAYMENTS, **counts)).ok is ok  # any partition decides
    assert report().ok  # nothing compared: nothing wrong


def test_problems_are_summed_per_source_topic():
    partitions = [found(ORDERS, missing=2, differing=1, unverified=5),
                  found(PartitionRuns(source_topic="orders", remote_topic="primary.orders", partition=1,
                                      runs=(RangeRow(OffsetRun(0, 0, 1), exact_gap_after=True),)),
                        missing=3, duplicated=4),
                  found(PAYMENTS, matched=60)]
    assert problems_by_topic(partitions) == {"orders": {"missing": 5, "duplicated": 4, "differing": 1},
                                             "payments": {"missing": 0, "duplicated": 0, "differing": 0}}


def checkpoint(group: str, topic: str, upstream: int) -> tuple[Checkpoint, int]:
    return Checkpoint(group, topic, 0, upstream, upstream), 1_000_000  # emitted at 1,000 s


def test_groups_are_the_ones_checkpointed_for_an_audited_remote_topic():
    checkpoints = [checkpoint("b", "primary.orders", 1), checkpoint("a", "primary.payments", 1),
                   checkpoint("a", "primary.orders", 1), checkpoint("c", "primary.other", 1)]
    assert checkpointed_groups([ORDERS, PAYMENTS], checkpoints) == ["a", "b"]
    assert checkpointed_groups([PAYMENTS], checkpoints) == ["a"]


def verdicts(committed, losses=()):
    checkpoints = [checkpoint("readsorders", "primary.orders", 100),
                   checkpoint("readspayments", "primary.payments", 50)]
    partitions = [found(ORDERS, missing=2, differing=1), found(PAYMENTS, matched=60)]
    return group_verdicts(source_alias="primary", plans=[ORDERS, PAYMENTS], partitions=partitions,
                          checkpoints=checkpoints, committed=committed,
                          ends={("orders", 0): 110, ("payments", 0): 60}, losses=list(losses), interval=60.0,
                          now=1_030.0)


def test_a_group_is_judged_on_the_counts_of_the_topics_it_reads():
    orders, payments = verdicts({"readsorders": {("orders", 0): 100}, "readspayments": {("payments", 0): 50}})
    assert (orders.group, orders.safe, payments.group, payments.safe) == ("readsorders", False, "readspayments", True)
    assert [r.text for r in orders.reasons] == [
        "checkpoints: 1 partition(s), newest 30 s old (emitted every 60 s), matching the group's commits on primary",
        # replicated up to the run's end (100): the 10 records after it would be left behind
        "lag on primary: 10 record(s) not consumed yet, 10 of them not replicated yet (they would be left behind)",
        "data loss: none reported for its topics",
        "audit: 2 missing, 0 duplicated, 1 differing record(s) in its topics"]
    assert [(r.ok, r.text) for r in payments.reasons[1:]] == [
        (True, "lag on primary: 10 record(s) not consumed yet, all of them replicated"),
        (True, "data loss: none reported for its topics"),
        (True, "audit: no missing, duplicated or differing records in its topics")]


def test_unreadable_commits_and_reported_loss_fail_only_the_groups_concerned():
    loss = LossReport(flow="primary->backup", topic="payments", partition=0, first=42, last=42, records=1,
                      reason="retention", time=1_000.0)
    orders, payments = verdicts({"readsorders": None, "readspayments": {("payments", 0): 50}}, [loss])
    assert [r.ok for r in orders.reasons] == [False, False, True, False]
    assert orders.reasons[1].text == "lag on primary: unknown (the group's commits could not be read)"
    assert [r.ok for r in payments.reasons] == [True, True, False, True]
    assert payments.reasons[2].text.startswith("data loss: 1 record(s) of its topics were never replicated")


def test_a_partition_missing_on_either_side_is_noted_once_per_side():
    notes = absent_partitions([ORDERS, PAYMENTS], source_alias="primary", target_alias="backup",
                              source_bounds={("orders", 0): (0, 100)},
                              target_bounds={("primary.orders", 0): (0, 100), ("primary.payments", 0): (0, 60)})
    assert notes == ["payments[0] does not exist on primary"]
    assert absent_partitions([ORDERS], source_alias="primary", target_alias="backup", source_bounds={},
                             target_bounds={}) == ["orders[0] does not exist on primary",
                                                   "primary.orders[0] does not exist on backup"]
