"""The pieces of data-integrity handling that need no broker: Spark's offset log, resume marks,
gap arithmetic."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mirrorspark.integrity.batch_guard import GONE, BatchGuard, DataLossStop
from mirrorspark.integrity.loss import LossLog, load
from mirrorspark.integrity.spark_offsets import OffsetLogUnreadable, SparkOffsetLog
from mirrorspark.integrity.write_marks import WriteMarks
from mirrorspark.sink_report import WrittenRun
from mirrorspark.state.files import LocalFiles, StateError


def offsets_entry(positions: dict) -> str:
    return "v1\n" + json.dumps({"batchWatermarkMs": 0}) + "\n" + json.dumps(positions)


def spark_log(tmp_path: Path, planned: dict[int, dict], committed: list[int]) -> SparkOffsetLog:
    for batch, positions in planned.items():
        (tmp_path / "offsets").mkdir(exist_ok=True)
        (tmp_path / "offsets" / str(batch)).write_text(offsets_entry(positions))
        (tmp_path / "offsets" / f".{batch}.crc").write_bytes(b"crc")
    (tmp_path / "commits").mkdir(exist_ok=True)
    for batch in committed:
        (tmp_path / "commits" / str(batch)).write_text("v1\n{}")
    return SparkOffsetLog(LocalFiles(tmp_path))


def test_offset_log_pending_batch_and_rewind(tmp_path):
    log = spark_log(tmp_path, {0: {"t": {"0": 5}}, 1: {"t": {"0": 9}, "u": {"0": 3}}, 2: {"t": {"0": 12}}}, [0, 1])
    assert log.pending() == 2
    assert log.committed_positions() == {("t", 0): 9, ("u", 0): 3}
    log.rewind("t", {0: 0, 1: 0})
    assert log.entry(0)[1] == {("t", 0): 5}  # older than the last committed batch: untouched
    assert log.entry(1)[1] == {("t", 0): 0, ("t", 1): 0, ("u", 0): 3}
    assert log.entry(2)[1] == {("t", 0): 0, ("t", 1): 0}
    assert not (tmp_path / "offsets" / ".2.crc").exists() and (tmp_path / "offsets" / ".0.crc").exists()
    (tmp_path / "commits" / "2").write_text("v1\n{}")
    assert log.pending() is None


@pytest.mark.parametrize("damage", ["v1\n{}\nnot json", "v1\n{}\n", None])
def test_an_unreadable_offset_log_entry_is_an_error_naming_the_file(tmp_path, damage):
    log = spark_log(tmp_path, {0: {"t": {"0": 5}}, 1: {"t": {"0": 9}}}, [0, 1])
    if damage is None:
        (tmp_path / "offsets" / "1").unlink()
    else:
        (tmp_path / "offsets" / "1").write_text(damage)
    reads = [lambda: log.entry(1), log.committed_positions]
    if damage is not None:  # a missing entry is not among those rewind rewrites
        reads.append(lambda: log.rewind("t", {0: 0}))
    for read in reads:
        with pytest.raises(OffsetLogUnreadable, match=r"offsets/1 (is missing|has no source offsets)"):
            read()
    assert log.entry(0)[1] == {("t", 0): 5}


def test_write_marks_resume_from_the_right_batch_and_count_recopies(tmp_path):
    files = LocalFiles(tmp_path)
    marks = WriteMarks(files)
    marks.learn_targets({("r", 0): 7})
    again = marks.batch_written(0, "line-0", [WrittenRun.of("r", 0, 0, 7, 10)], {"r": "t"})
    assert again == {} and marks.target_end == {"r\t0": 17}
    assert WriteMarks(files).resume_from(1, "line-1") == {("r", 0): 17}  # batch 1 interrupted: from 17
    assert WriteMarks(files).resume_from(0, "line-0") == {("r", 0): 7}   # batch 0 written, not committed
    assert WriteMarks(files).resume_from(0, "other") == {("r", 0): 17}   # another query's batch 0
    # A batch re-reading source offsets 5.. after an unclean stop: 5 re-copies.
    assert marks.batch_written(1, "line-1", [WrittenRun.of("r", 0, 5, 17, 10)], {"r": "t"}) == {("r", 0): 5}
    # The re-run of a batch already folded in counts nothing here (the sink counts it).
    assert marks.batch_written(1, "line-1", [WrittenRun.of("r", 0, 5, 17, 10)], {"r": "t"}) == {}


@pytest.mark.parametrize("damage", ["", "  \n", '{"source_next": {"t\\t0": 1', "null",
                                    '{"source_next": {"t\\t0": "x"}}'])
def test_empty_or_damaged_write_marks_stop_the_flow_naming_the_file(tmp_path, damage):
    # A zero-length write-marks.json (a power loss) read as "no marks" would re-send an interrupted batch
    # whole, uncounted: refused instead, naming the file.
    (tmp_path / WriteMarks.FILE).write_text(damage)
    with pytest.raises(StateError, match=re.escape(f"{tmp_path}/{WriteMarks.FILE} is unreadable")):
        WriteMarks(LocalFiles(tmp_path))


def test_no_write_marks_yet_is_no_marks(tmp_path):
    marks = WriteMarks(LocalFiles(tmp_path))
    assert (marks.source_next, marks.target_end, marks.batch) == ({}, {}, None)


def test_an_interrupted_batch_tells_the_sink_what_the_earlier_attempt_wrote(tmp_path, caplog):
    caplog.set_level("INFO", logger="mirrorspark.integrity.batch_guard")
    marks = WriteMarks(LocalFiles(tmp_path))
    marks.learn_targets({("r", 0): 7, ("r", 1): 5})
    now = {("r", 0): 25, ("r", 1): 5}  # the attempt wrote 18 records to partition 0, none to 1
    guard = BatchGuard(flow_name="a->b", marks=marks, loss=LossLog(LocalFiles(tmp_path), "a->b"),
                       source_starts=lambda parts: {}, target_ends=lambda parts: {p: now[p] for p in parts},
                       fail_on_loss=False)
    ends = {("t", 0): 30, ("t", 1): 9}
    assert guard.before_write(0, "line", {}, ends, {"t": "r"}, rerun=True) == "r\t0\t7\t25"
    assert "18 target record(s) an earlier attempt wrote" in caplog.text
    assert guard.before_write(0, "line", {}, ends, {"t": "r"}, rerun=False) == ""


def test_gaps_are_loss_only_below_the_source_log_start(tmp_path):
    loss = LossLog(LocalFiles(tmp_path), "a->b")
    log_starts = {("t", 0): 40, ("t", 1): 0}
    guard = BatchGuard(flow_name="a->b", marks=WriteMarks(LocalFiles(tmp_path)), loss=loss,
                       source_starts=lambda parts: {p: log_starts[p] for p in parts},
                       target_ends=lambda parts: {p: 0 for p in parts}, fail_on_loss=False)
    starts, ends = {("t", 0): 10, ("t", 1): 10, ("t", 2): 50}, {("t", 0): 100, ("t", 1): 100, ("t", 2): 20}
    # partition 0 read from 40 (retention), partition 1 from 12 (a compacted or marker gap, log start 0)
    guard.after_write(starts, ends, {"t": "r"}, {("r", 0): 40, ("r", 1): 12, ("r", 2): 20})
    reports = {(r.partition, r.first, r.last, r.records) for r in load(LocalFiles(tmp_path))}
    assert reports == {(0, 10, 39, 30), (2, 20, 49, 30)}  # partition 2 went back from 50 to 20
    reasons = {r.partition: r.reason for r in loss.reports}
    assert reasons[0] == GONE and "went back" in reasons[2]


def test_fail_mode_stops_before_writing_past_a_gap(tmp_path):
    loss = LossLog(LocalFiles(tmp_path), "a->b")
    guard = BatchGuard(flow_name="a->b", marks=WriteMarks(LocalFiles(tmp_path)), loss=loss,
                       source_starts=lambda parts: {p: 15 for p in parts},
                       target_ends=lambda parts: {p: 0 for p in parts}, fail_on_loss=True)
    with pytest.raises(DataLossStop, match="5 record"):
        guard.before_write(1, "line", {("t", 0): 10}, {("t", 0): 30}, {"t": "r"}, rerun=False)
    assert loss.total() == 5


def test_a_batch_never_writes_into_a_remote_partition_that_went_back(tmp_path):
    """A remote topic deleted (or re-created) on the target: its end is below what the flow wrote.
    Newer records must not go in before the refill, so the batch refuses and the flow restarts."""
    from mirrorspark.integrity.batch_guard import RemoteTopicGone

    marks = WriteMarks(LocalFiles(tmp_path))
    marks.learn_targets({("r", 0): 0, ("r", 1): 0})
    marks.batch_written(0, "line-0", [WrittenRun.of("r", 0, 0, 0, 1500), WrittenRun.of("r", 1, 0, 0, 1500)], {"r": "t"})
    now: dict = {("r", 0): 1500, ("r", 1): 1500}
    asked: list = []

    def target_ends(parts):
        asked.append(sorted(parts))
        return {p: now[p] for p in parts if p in now}

    guard = BatchGuard(flow_name="a->b", marks=marks, loss=LossLog(LocalFiles(tmp_path), "a->b"),
                       source_starts=lambda parts: {}, target_ends=target_ends, fail_on_loss=False)
    starts = {("t", 0): 1500, ("t", 1): 1500}
    assert guard.before_write(1, "line-1", starts, {("t", 0): 1600, ("t", 1): 1500}, {"t": "r"}, rerun=False) == ""
    assert asked == [[("r", 0)]]  # only the partition the batch writes to, one request
    now = {("r", 1): 0}  # deleted: partition 0 gone, partition 1 re-created empty
    with pytest.raises(RemoteTopicGone, match=r"r\[0\] \(end gone, this flow wrote up to 1500\).*refill"):
        guard.before_write(2, "line-2", starts, {("t", 0): 1600, ("t", 1): 1600}, {"t": "r"}, rerun=False)
    with pytest.raises(RemoteTopicGone, match=r"r\[1\] \(end 0"):
        guard.before_write(2, "line-2", starts, {("t", 0): 1500, ("t", 1): 1600}, {"t": "r"}, rerun=False)
    asked.clear()
    assert guard.before_write(2, "line-2", starts, starts, {"t": "r"}, rerun=False) == ""  # nothing to write
    assert asked == []


def test_a_batch_is_not_written_once_the_flow_lease_is_gone(tmp_path):
    from mirrorspark.integrity.batch_guard import Fenced

    holding = [True]
    asked: list[list] = []
    guard = BatchGuard(flow_name="a->b", marks=WriteMarks(LocalFiles(tmp_path)),
                       loss=LossLog(LocalFiles(tmp_path), "a->b"), source_starts=lambda parts: {},
                       target_ends=lambda parts: asked.append(parts) or {p: 0 for p in parts}, fail_on_loss=False,
                       writing=lambda: holding[0])
    assert guard.before_write(1, "line", {("t", 0): 0}, {("t", 0): 5}, {"t": "r"}, rerun=False) == ""
    holding[0] = False
    asked.clear()
    with pytest.raises(Fenced, match=r"a->b: fenced.*batch 2 is not written"):
        guard.before_write(2, "line", {("t", 0): 5}, {("t", 0): 9}, {"t": "r"}, rerun=False)
    assert asked == []  # refused before it even looks at the target


def test_a_remote_partition_just_created_is_not_written_before_its_end_is_recorded(tmp_path):
    """The target's client may not list a partition created moments before (measured: a third of 3,000
    for seconds). Its end is asked again until it is listed, so a first write interrupted is compared
    from it at the restart instead of being sent again uncounted."""
    marks = WriteMarks(LocalFiles(tmp_path))
    listed: list[set] = [{("r", 0)}, {("r", 0)}, {("r", 0), ("r", 1)}]  # partition 1 listed at the third ask
    asked: list = []

    def target_ends(parts):
        asked.append(sorted(parts))
        now = listed[min(len(asked), len(listed)) - 1]
        return {p: 0 for p in parts if p in now}

    guard = BatchGuard(flow_name="a->b", marks=marks, loss=LossLog(LocalFiles(tmp_path), "a->b"),
                       source_starts=lambda parts: {}, target_ends=target_ends, fail_on_loss=False)
    assert guard.before_write(0, "line-0", {}, {("t", 0): 5, ("t", 1): 5}, {"t": "r"}, rerun=False) == ""
    assert asked == [[("r", 0), ("r", 1)], [("r", 1)], [("r", 1)]]
    assert WriteMarks(LocalFiles(tmp_path)).unknown_targets([("r", 0), ("r", 1)]) == []


def test_a_remote_partition_the_target_never_lists_restarts_the_flow_before_writing(tmp_path):
    from mirrorspark.integrity.batch_guard import RemoteTopicGone

    files = LocalFiles(tmp_path)
    guard = BatchGuard(flow_name="a->b", marks=WriteMarks(files), loss=LossLog(files, "a->b"),
                       source_starts=lambda parts: {}, target_ends=lambda parts: {p: 3 for p in parts if p[1] == 0},
                       fail_on_loss=False, listing_wait=0.3)
    with pytest.raises(RemoteTopicGone, match=r"r\[1\] are not listed by the target 0.3 s after.*restarts to create"):
        guard.before_write(0, "line-0", {}, {("t", 0): 5, ("t", 1): 5}, {"t": "r"}, rerun=False)
    assert WriteMarks(LocalFiles(tmp_path)).unknown_targets([("r", 0), ("r", 1)]) == [("r", 1)], \
        "what was listed is recorded"
