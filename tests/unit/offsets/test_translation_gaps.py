"""Translation never runs ahead of the data across a gap the writer could not pair (issue 42, finding 4):
an exactly-once batch run again after a crash skips rows already committed, and those whose target
offset its progress no longer knows come as a break (``OffsetRuns`` count 0). Whether the break comes
first, between runs or last in a batch, a consumer committed inside the gap is translated at or
behind the records the target holds, after a restart too (MM2's rule: never ahead)."""
from __future__ import annotations

from mirrorspark.offsets.range_log import RangeLog
from mirrorspark.offsets.ranges import OffsetRanges
from mirrorspark.offsets.sync_writer import OffsetSyncWriter
from mirrorspark.partition import OffsetRun
from mirrorspark.sink_report import WrittenRun
from mirrorspark.state.files import LocalFiles

SOURCE_OF = {"A.t": "t"}
BREAK = WrittenRun.of("A.t", 0, -1, -1, 0)


class Producer:
    def produce(self, topic, value, key, partition, on_delivery) -> None:
        on_delivery(None, None)

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        return 0


def writer(ranges: OffsetRanges, log: RangeLog) -> OffsetSyncWriter:
    return OffsetSyncWriter("A->B", ranges, lambda touched: log.save(ranges, touched), "syncs", Producer())


def run(upstream: int, downstream: int, count: int) -> WrittenRun:
    return WrittenRun.of("A.t", 0, upstream, downstream, count)


def test_a_break_that_ends_a_batch_keeps_the_gap_before_the_next_batch_inexact_after_a_restart(tmp_path):
    """Batch 1 copied 0..99 at 1000..; batch 2, run again after a crash, paired 100..149 from the progress
    but not 150..179 (committed by an earlier transaction of the interrupted attempt, at 1150..1179);
    batch 3, after a restart, starts at 180. A consumer committed at 160 reads from 1150 at the latest."""
    log = RangeLog(LocalFiles(tmp_path))
    ranges = OffsetRanges()
    writer(ranges, log).on_batch([run(0, 1000, 100)], SOURCE_OF)
    writer(ranges, log).on_batch([run(100, 1100, 50), BREAK], SOURCE_OF)
    restarted = log.load()
    writer(restarted, log).on_batch([run(180, 1180, 20)], SOURCE_OF)
    for committed in (150, 160, 179):
        translated = restarted.translate("t", 0, committed)
        assert translated is not None and translated <= 1000 + committed, (committed, translated)
    assert restarted.translate("t", 0, 120) == 1120  # exact where the pairs are known
    assert restarted.translate("t", 0, 185) == 1185


def test_a_break_first_or_between_runs_translates_inside_the_gap_behind_the_data(tmp_path):
    log = RangeLog(LocalFiles(tmp_path))
    ranges = OffsetRanges()
    sync_writer = writer(ranges, log)
    sync_writer.on_batch([run(0, 1000, 100)], SOURCE_OF)
    # 100..129 committed before and unknown, 130..139 known, 140..159 unknown, then new rows.
    sync_writer.on_batch([BREAK, run(130, 1130, 10), BREAK, run(160, 1160, 5)], SOURCE_OF)
    for committed in range(100, 160):
        translated = ranges.translate("t", 0, committed)
        assert translated is not None and translated <= 1000 + committed, (committed, translated)
    assert ranges.translate("t", 0, 135) == 1135 and ranges.translate("t", 0, 162) == 1162


def test_a_gap_with_no_break_stays_exact():
    """Offsets no record holds (transaction markers, compaction) between reported runs: exact, as before."""
    ranges = OffsetRanges()
    ranges.add("t", 0, [OffsetRun(0, 0, 10), OffsetRun(12, 10, 5)])
    assert ranges.translate("t", 0, 11) == 10
