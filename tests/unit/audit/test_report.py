"""The report: one job row made a partition's findings, its JSON (``--json``) and its readable form."""
from __future__ import annotations

import json
from decimal import Decimal

from mirrorspark.audit.job import partition_result
from mirrorspark.audit.plan import PartitionRuns
from mirrorspark.audit.report import AuditReport, PartitionAudit
from mirrorspark.cli.audit_command import render
from mirrorspark.integrity.failover_verdict import GroupVerdict, Reason
from mirrorspark.integrity.loss import LossReport
from mirrorspark.offsets.ranges import RangeRow
from mirrorspark.partition import OffsetRun

PLAN = PartitionRuns(source_topic="orders", remote_topic="primary.orders", partition=1,
                     runs=(RangeRow(OffsetRun(100, 10, 5), exact_gap_after=True),
                           RangeRow(OffsetRun(110, 20, 5), exact_gap_after=False)))
ROW = {"topic": "orders", "partition": 1, "source_records": 10, "target_records": 11, "matched": 7, "missing": 1,
       "duplicated": 2, "differing": 1, "unverified": 1, "source_removed": 0, "first_missing": 104,
       "first_duplicated": 25, "first_differing": 111,
       "source_sum": Decimal(-1), "target_sum": Decimal(2**64 + 5)}


def test_a_row_becomes_the_partitions_findings_with_inclusive_ranges_and_64_bit_checksums():
    audit = partition_result(PLAN, ROW)
    assert (audit.source_topic, audit.remote_topic, audit.partition, audit.runs) == ("orders", "primary.orders", 1, 2)
    assert (audit.source_range, audit.target_range) == ((100, 114), (10, 24))
    assert (audit.matched, audit.missing, audit.duplicated, audit.differing, audit.unverified) == (7, 1, 2, 1, 1)
    assert (audit.first_missing, audit.first_duplicated, audit.first_differing) == (104, 25, 111)
    # A sum of signed 64-bit hashes, taken modulo 2**64: -1 is all ones, 2**64 + 5 wraps to 5.
    assert (audit.source_checksum, audit.target_checksum) == ("ffffffffffffffff", "0000000000000005")
    assert audit.problems == 4


def test_no_row_means_nothing_was_read_on_either_side():
    audit = partition_result(PLAN, None)
    assert (audit.source_records, audit.target_records, audit.problems, audit.first_missing) == (0, 0, 0, None)
    assert audit.source_checksum == audit.target_checksum == "0" * 16
    nothing_summed = partition_result(PLAN, {**ROW, "source_sum": None})  # Spark's sum of no rows
    assert nothing_summed.source_checksum == "0" * 16


def sample() -> AuditReport:
    clean = PartitionAudit(source_topic="payments", remote_topic="primary.payments", partition=0, runs=1,
                           source_range=(0, 59), target_range=(0, 59), source_records=60, target_records=60,
                           matched=60, source_checksum="00000000000000aa", target_checksum="00000000000000aa")
    loss = LossReport(flow="primary->backup", topic="orders", partition=1, first=42, last=43, records=2,
                      reason="retention", time=1.0)
    verdict = GroupVerdict("app", (Reason(True, "checkpoints: fine"), Reason(False, "audit: 1 missing")))
    return AuditReport(flow="primary->backup", state="file:/s/primary/backup",
                       partitions=[partition_result(PLAN, ROW), clean], data_loss=[loss], groups=[verdict],
                       checkpoints_skipped=3, seconds=12.345, notes=["orders[2] does not exist on backup"])


def test_the_json_keeps_its_keys_order_and_totals():
    body = json.loads(json.dumps(sample().as_dict()))
    assert list(body) == ["flow", "state", "ok", "totals", "partitions", "data_loss", "groups", "checkpoints_skipped",
                          "seconds", "notes"]
    assert body["ok"] is False and body["seconds"] == 12.3 and body["checkpoints_skipped"] == 3
    assert body["totals"] == {"source_records": 70, "target_records": 71, "matched": 67, "missing": 1,
                              "duplicated": 2, "differing": 1, "unverified": 1, "source_removed": 0}
    first = body["partitions"][0]
    assert list(first) == ["source_topic", "remote_topic", "partition", "runs", "source_range", "target_range",
                           "source_records", "target_records", "matched", "missing", "duplicated", "differing",
                           "unverified", "source_removed", "first_missing", "first_duplicated", "first_differing",
                           "source_checksum", "target_checksum"]
    assert first["source_range"] == [100, 114] and first["target_checksum"] == "0000000000000005"
    assert body["data_loss"][0]["first"] == 42
    assert body["groups"] == [{"group": "app", "safe": False, "reasons": [
        {"ok": True, "text": "checkpoints: fine"}, {"ok": False, "text": "audit: 1 missing"}]}]


def test_the_readable_form_names_each_problems_first_offset_then_loss_notes_verdicts_and_a_summary():
    lines = render(sample())
    assert lines[0] == "flow primary->backup (state file:/s/primary/backup)"
    table = lines[1].splitlines()
    assert table[0].split() == ["topic", "part", "remote", "source-range", "target-range", "source", "target",
                                "missing", "dup", "diff", "unverified", "src-removed", "source-sum", "target-sum"]
    assert table[1].split() == ["orders", "1", "primary.orders", "100..114", "10..24", "10", "11", "1", "2", "1", "1",
                                "0", "ffffffffffffffff", "0000000000000005"]
    assert lines[2:] == [
        "orders[1]: first missing source offset 104; first duplicated target offset 25; "
        "first differing source offset 111",
        "data loss reported: flow primary->backup: DATA LOSS: 2 record(s) of orders[1] at source offsets 42..43 are "
        "lost: retention",
        "note: orders[2] does not exist on backup",
        "note: 3 malformed checkpoint record(s) skipped",
        "group app: NOT SAFE to fail over",
        "  ok    checkpoints: fine",
        "  FAIL  audit: 1 missing",
        "audit primary->backup: 70 source / 71 target record(s) in 2 partition(s): 1 missing, 2 duplicated, "
        "1 differing (12.3 s)"]


def test_a_clean_report_without_groups_says_so():
    clean = AuditReport(flow="primary->backup", state="file:/s", partitions=[partition_result(PLAN, None)],
                        data_loss=[], groups=[])
    assert clean.ok
    assert render(clean)[2:] == [
        "no consumer group has checkpoints for these topics",
        "audit primary->backup: 0 source / 0 target record(s) in 1 partition(s): 0 missing, 0 duplicated, "
        "0 differing (0.0 s)"]
