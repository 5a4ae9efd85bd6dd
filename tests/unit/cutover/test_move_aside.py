"""``reconcile``'s moves in the flow's state: the offset mapping marks the records moved aside so a
group failing back resumes after them and the next copy continues the mapping exactly; Spark's
positions move past them in the committed and the pending batch, other partitions untouched; the
records found on the target past the mapping become runs."""
from __future__ import annotations

import json

from mirrorspark.cutover.reconcile import pair_runs
from mirrorspark.integrity.spark_offsets import SparkOffsetLog
from mirrorspark.offsets.range_log import RangeLog
from mirrorspark.offsets.ranges import OffsetRanges
from mirrorspark.offsets.sync_writer import OffsetSyncWriter
from mirrorspark.partition import OffsetRun
from mirrorspark.sink_report import WrittenRun
from mirrorspark.state.files import LocalFiles


class Syncs:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def produce(self, topic, value, key, partition, on_delivery) -> None:
        self.sent.append(key)
        on_delivery(None, None)

    def poll(self, timeout: float) -> int:
        return 0


def test_records_moved_aside_are_skipped_by_translation_both_ways_and_the_next_copy_continues(tmp_path):
    ranges = OffsetRanges()
    ranges.add("t", 0, [OffsetRun(0, 0, 100)])  # 0..99 copied to 0..99; 100..149 only on the source
    assert ranges.copied_end("t", 0) == (100, 100, None)
    assert ranges.move_aside("t", 0, [OffsetRun(100, 100, 5)], 150)  # 100..104 were on the target unreported
    assert ranges.copied_end("t", 0) == (105, 105, 150)
    assert ranges.inverse("t", 0, 105) == 150          # fails back past the records moved aside
    assert ranges.inverse("t", 0, 104) == 104          # inside the copy: exact
    assert ranges.translate("t", 0, 120) == 105        # a source position among them: the copy's end
    assert ranges.first_unread("t", 0, 105) == 150
    assert ranges.latest("t", 0) is None               # the next run starts with an offset sync
    assert ranges.move_aside("t", 0, [], 160)          # again, further (the source took more): one marker
    assert [r.run for r in ranges.rows("t", 0)] == [OffsetRun(0, 0, 105), OffsetRun(160, 105, 0)]
    assert not ranges.move_aside("t", 0, [], 100)      # nothing between the copy's end and 100

    log = RangeLog(LocalFiles(tmp_path / "ranges"))
    log.save(ranges, [("t", 0)])
    again = log.load()                                 # a restart reads the marker back
    assert again.inverse("t", 0, 105) == 160 and again.copied_end("t", 0) == (105, 105, 160)

    syncs = Syncs()
    writer = OffsetSyncWriter("A->B", again, lambda touched: log.save(again, touched), "syncs", syncs)
    writer.on_batch([WrittenRun.of("A.t", 0, 160, 105, 10)], {"A.t": "t"})
    assert [r.run for r in again.rows("t", 0)] == [OffsetRun(0, 0, 105), OffsetRun(160, 105, 10)]
    assert again.inverse("t", 0, 105) == 160 and again.inverse("t", 0, 110) == 165
    assert again.translate("t", 0, 130) == 105 and again.translate("t", 0, 162) == 107
    assert len(syncs.sent) == 2  # the first record after the gap is synced (MM2's translators see it)


def entry(positions: dict) -> str:
    return "v1\n" + json.dumps({"batchWatermarkMs": 0}) + "\n" + json.dumps(positions)


def test_spark_positions_move_forward_only_for_the_partitions_named_in_the_committed_and_pending_batches(tmp_path):
    checkpoint = LocalFiles(tmp_path)
    checkpoint.child("offsets").write("0", entry({"t": {"0": 50, "1": 40}, "u": {"0": 7}}))
    checkpoint.child("offsets").write("1", entry({"t": {"0": 90, "1": 80}, "u": {"0": 9}}))
    checkpoint.child("offsets").write("2", entry({"t": {"0": 120, "1": 85}, "u": {"0": 9}}))
    checkpoint.child("commits").write("0", "v1\n{}")
    checkpoint.child("commits").write("1", "v1\n{}")
    spark = SparkOffsetLog(checkpoint)
    moved = spark.advance({("t", 0): 150, ("t", 1): 60, ("x", 0): 5})
    assert moved == {("t", 0): (90, 150)}              # t[1] is past 60 already; x is not read
    assert spark.committed_positions() == {("t", 0): 150, ("t", 1): 80, ("u", 0): 9}
    assert spark.entry(2)[1] == {("t", 0): 150, ("t", 1): 85, ("u", 0): 9}  # the re-run reads nothing of t[0]
    assert spark.entry(0)[1] == {("t", 0): 50, ("t", 1): 40, ("u", 0): 7}   # history untouched
    assert spark.advance({("t", 0): 150}) == {}        # again: nothing to do


def test_pairs_found_on_the_target_become_runs_where_both_sides_advance_together():
    assert pair_runs([(10, 3), (11, 4), (12, 5), (14, 6), (15, 8)]) == [
        OffsetRun(10, 3, 3), OffsetRun(14, 6, 1), OffsetRun(15, 8, 1)]
    assert pair_runs([]) == []


def test_the_moved_aside_ledger_merges_ranges_per_partition_and_an_unreadable_one_is_an_error(tmp_path):
    import pytest

    from mirrorspark.offsets import moved_aside
    from mirrorspark.state.files import StateError

    files = LocalFiles(tmp_path)
    assert moved_aside.load(files) == {}
    moved_aside.record(files, "t", 0, 100, 150)
    moved_aside.record(files, "t", 0, 100, 160)   # a second run that found more: one range
    moved_aside.record(files, "t", 1, 40, 45)
    moved_aside.record(files, "t", 0, 300, 310)   # a later failover: another range
    assert moved_aside.load(files) == {("t", 0): [(100, 160), (300, 310)], ("t", 1): [(40, 45)]}
    (tmp_path / moved_aside.FILE).write_text("[{\"topic\": \"t\"}]")
    with pytest.raises(StateError, match=r"moved-aside\.json cannot be read"):
        moved_aside.load(files)
