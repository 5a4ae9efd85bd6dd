"""MM2's binary formats (hand-computed bytes) and the exact offset mapping's translation rules."""
from __future__ import annotations

import random
import threading
import time

import pytest

from mirrorspark.formats import Checkpoint, Heartbeat, OffsetSync, RecordFormatError
from mirrorspark.offsets import range_log
from mirrorspark.offsets.range_log import RangeLog
from mirrorspark.offsets.ranges import OffsetRanges, RangeRow
from mirrorspark.partition import OffsetRun
from mirrorspark.state.files import LocalFiles


def test_offset_sync_bytes():
    sync = OffsetSync("t", 2, 5, 7)
    assert sync.key_bytes() == b"\x00\x01t\x00\x00\x00\x02"
    assert sync.value_bytes() == b"\x00" * 7 + b"\x05" + b"\x00" * 7 + b"\x07"
    assert OffsetSync.from_record(sync.key_bytes(), sync.value_bytes()) == sync


def test_checkpoint_bytes_and_errors():
    cp = Checkpoint("g", "A.t", 1, 10, 4, "m")
    assert cp.key_bytes() == b"\x00\x01g\x00\x03A.t\x00\x00\x00\x01"
    assert cp.value_bytes() == b"\x00\x00" + (10).to_bytes(8, "big") + (4).to_bytes(8, "big") + b"\x00\x01m"
    assert Checkpoint.from_record(cp.key_bytes(), cp.value_bytes()) == cp
    with pytest.raises(RecordFormatError, match="version 1"):
        Checkpoint.from_record(cp.key_bytes(), b"\x00\x01" + cp.value_bytes()[2:])
    with pytest.raises(RecordFormatError, match="truncated"):
        Checkpoint.from_record(cp.key_bytes(), cp.value_bytes()[:9])


def test_heartbeat_bytes():
    hb = Heartbeat("A", "B", 1700000000000)
    assert hb.key_bytes() == b"\x00\x01A\x00\x01B"
    assert hb.value_bytes() == b"\x00\x00" + (1700000000000).to_bytes(8, "big") and len(hb.value_bytes()) == 10
    assert Heartbeat.from_record(hb.key_bytes(), hb.value_bytes()) == hb


def test_contiguous_batches_merge_into_one_run_and_translate_exactly():
    ranges = OffsetRanges()
    for start in range(0, 1000, 100):
        ranges.add("t", 0, [OffsetRun(start, start + 50, 100)])
    assert ranges.rows("t", 0) == [RangeRow(OffsetRun(0, 50, 1000), exact_gap_after=True)]
    assert [ranges.translate("t", 0, u) for u in (0, 1, 999, 1000, 5000)] == [50, 51, 1049, 1050, 1050]
    assert ranges.translate("t", 1, 0) is None and ranges.latest("t", 0) == (999, 1049)


def test_gaps_from_compaction_or_transaction_markers_translate_to_the_next_record():
    ranges = OffsetRanges()
    ranges.add("t", 0, [OffsetRun(0, 0, 10), OffsetRun(12, 10, 5)])
    assert [ranges.translate("t", 0, u) for u in (9, 10, 11, 12, 13, 17)] == [9, 10, 10, 10, 11, 15]


def test_rewrite_after_restart_newest_mapping_wins():
    ranges = OffsetRanges()
    ranges.add("t", 0, [OffsetRun(0, 0, 150)])
    ranges.add("t", 0, [OffsetRun(100, 150, 100)])
    assert ranges.translate("t", 0, 120) == 170 and ranges.translate("t", 0, 50) == 50
    assert ranges.translate("t", 0, 99) == 99 and ranges.translate("t", 0, 100) == 150


def test_starting_after_records_that_were_not_replicated():
    ranges = OffsetRanges()
    ranges.add("t", 0, [OffsetRun(40, 0, 10)])
    assert ranges.translate("t", 0, 39) is None and ranges.translate("t", 0, 40) == 0


def test_thinning_bounds_memory_and_never_translates_ahead():
    rng = random.Random(7)
    ranges, truth = OffsetRanges(max_runs_per_partition=16), {}
    upstream = downstream = 0
    for _ in range(400):
        upstream += rng.randint(0, 3)  # gaps in the source
        count = rng.randint(1, 5)
        ranges.add("t", 0, [OffsetRun(upstream, downstream, count)])
        for i in range(count):
            truth[upstream + i] = downstream + i
        upstream, downstream = upstream + count, downstream + count + rng.randint(0, 1)  # foreign writes
    assert len(ranges.rows("t", 0)) <= 16
    written = sorted(truth)
    recent = ranges.rows("t", 0)[-4].run.upstream
    for committed in range(written[0], written[-1] + 2):
        got = ranges.translate("t", 0, committed)
        following = [truth[u] for u in written if u >= committed]
        correct = following[0] if following else truth[written[-1]] + 1
        assert got is not None and got <= correct, committed  # never ahead, never skips
        if committed >= recent:
            assert got == correct, committed  # recent history stays exact


def test_range_log_round_trip(tmp_path):
    log = RangeLog(LocalFiles(tmp_path / "offset-ranges"))
    ranges = OffsetRanges()
    ranges.add("t", 0, [OffsetRun(0, 0, 10), OffsetRun(12, 10, 5)])
    ranges.add("u", 3, [OffsetRun(7, 9, 1)])
    log.save(ranges, ranges.partitions())
    loaded = RangeLog(LocalFiles(tmp_path / "offset-ranges")).load()
    assert loaded.rows("t", 0) == ranges.rows("t", 0)
    assert loaded.rows("u", 3) == [RangeRow(OffsetRun(7, 9, 1), exact_gap_after=True)]
    assert loaded.translate("t", 0, 11) == 10


def test_range_log_files_are_read_into_named_rows_and_written_back_byte_for_byte(tmp_path):
    """The file format is the state of running flows: rows ``[upstream, downstream, count, exact]``."""
    text = ('{"snapshot":false,"partitions":[["t",0,[[0,0,10,false],[12,10,5,true]],'
            '{"remote":"A.t@id1","floor":null,"reset":false}]]}')
    files = LocalFiles(tmp_path / "in")
    files.write("00000000000000000000.json", text)
    ranges = RangeLog(files).load()
    assert ranges.rows("t", 0) == [RangeRow(OffsetRun(0, 0, 10), exact_gap_after=False),
                                   RangeRow(OffsetRun(12, 10, 5), exact_gap_after=True)]
    written = LocalFiles(tmp_path / "out")
    RangeLog(written).save(ranges, [("t", 0)])
    assert written.read("00000000000000000000.json") == text


def test_range_log_replays_batches_and_snapshots_bound_the_files(tmp_path, monkeypatch):
    monkeypatch.setattr(range_log, "SNAPSHOT_EVERY", 5)
    files = LocalFiles(tmp_path / "offset-ranges")
    log = RangeLog(files)
    ranges = OffsetRanges()
    for batch in range(23):  # partition 0 every batch, partition 1 every third batch
        ranges.add("t", 0, [OffsetRun(batch * 10, batch * 10 + 3, 10)])
        touched = [("t", 0)]
        if batch % 3 == 0:
            ranges.add("t", 1, [OffsetRun(batch, 1000 + batch, 1)])
            touched.append(("t", 1))
        log.save(ranges, touched)
        if batch in (7, 15, 22):  # a restart at any point sees exactly what was saved
            reloaded = RangeLog(files)
            again = reloaded.load()
            assert again.rows("t", 0) == ranges.rows("t", 0) and again.rows("t", 1) == ranges.rows("t", 1)
            log = reloaded
    assert len(files.list()) <= 5


def test_range_log_saves_from_two_threads_never_share_a_file_or_lose_rows(tmp_path, monkeypatch):
    """The batch thread and the control thread both save: each save gets a file number of its own,
    no snapshot deletes a file being written, and a reload sees every partition's last rows."""
    monkeypatch.setattr(range_log, "SNAPSHOT_EVERY", 7)
    written: list[str] = []

    class SlowFiles(LocalFiles):
        def write(self, name: str, text: str) -> None:
            written.append(name)
            time.sleep(0.002)  # a slow disk widens the window between numbering and writing
            super().write(name, text)

    files = SlowFiles(tmp_path / "offset-ranges")
    log, ranges = RangeLog(files), OffsetRanges()

    def batches(partition: int) -> None:
        for batch in range(40):
            ranges.add("t", partition, [OffsetRun(batch * 10, batch * 10, 10)])
            log.save(ranges, [("t", partition)])

    threads = [threading.Thread(target=batches, args=(p,)) for p in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(written) == len(set(written)) == 80, "two saves took one file number"
    again = RangeLog(files).load()
    assert again.rows("t", 0) == ranges.rows("t", 0) and again.rows("t", 1) == ranges.rows("t", 1)


def test_range_log_damaged_newest_file_falls_back_to_the_older_state(tmp_path):
    files = LocalFiles(tmp_path / "offset-ranges")
    log, ranges = RangeLog(files), OffsetRanges()
    ranges.add("t", 0, [OffsetRun(0, 100, 10)])
    log.save(ranges, [("t", 0)])
    older = ranges.rows("t", 0)
    ranges.add("t", 0, [OffsetRun(10, 110, 10)])
    log.save(ranges, [("t", 0)])
    files.write(files.list()[-1], "[1, 2]")  # valid JSON, not a range-log body
    damaged = RangeLog(files).load()
    assert damaged.rows("t", 0) == older
    assert damaged.translate("t", 0, 15) == 110  # one past the last saved record: behind, never ahead


def test_inverse_translation_for_failback():
    ranges = OffsetRanges()
    ranges.add("t", 0, [OffsetRun(0, 100, 10), OffsetRun(12, 115, 5)])  # target 110..114 written by someone else
    assert [ranges.inverse("t", 0, d) for d in (99, 100, 109, 110, 114, 115, 119, 120)] == \
        [None, 0, 9, 10, 10, 12, 16, 17]


def test_runs_are_bound_to_the_remote_topic_and_a_new_one_starts_a_new_mapping(tmp_path):
    """Point 1 of the hardening issue: runs of a deleted remote topic never translate into its successor."""
    ranges = OffsetRanges()
    ranges.add("t", 0, [OffsetRun(0, 0, 1_500)])
    assert not ranges.bind("t", 0, "A.t@id1", floor=0)  # the first binding adopts the runs
    assert ranges.translate("t", 0, 900, "A.t@id1") == 900
    assert ranges.translate("t", 0, 900, "A.t@id2") is None  # another topic now: nothing, never the old answer
    assert ranges.bind("t", 0, "A.t@id2", floor=0)  # re-created: a new mapping
    binding = ranges.binding("t", 0)
    assert (binding.remote, binding.floor, binding.reset_checkpoints) == ("A.t@id2", 0, True)
    assert ranges.translate("t", 0, 900, "A.t@id2") == 0  # before the new runs: the new topic's start
    ranges.add("t", 0, [OffsetRun(1_500, 0, 1_500)], contiguous_with_previous=False)
    assert ranges.translate("t", 0, 900, "A.t@id2") == 0
    assert ranges.translate("t", 0, 2_000, "A.t@id2") == 500
    ranges.checkpoints_reset("t", 0)
    log = RangeLog(LocalFiles(tmp_path))
    log.save(ranges, ranges.partitions())
    loaded = RangeLog(LocalFiles(tmp_path)).load()
    assert loaded.binding("t", 0) == ranges.binding("t", 0)
    assert loaded.translate("t", 0, 900, "A.t@id2") == 0 and loaded.translate("t", 0, 900, "B.t@id3") is None


def test_a_fresh_binding_keeps_mm2s_no_checkpoint_before_the_first_run():
    ranges = OffsetRanges()
    ranges.bind("t", 0, "A.t@id1", floor=0)
    ranges.add("t", 0, [OffsetRun(500, 0, 10)])
    assert ranges.translate("t", 0, 100, "A.t@id1") is None
    assert not ranges.binding("t", 0).reset_checkpoints


def test_truncated_remote_partition_cuts_the_runs_at_its_new_end():
    ranges = OffsetRanges()
    ranges.bind("t", 0, "A.t@id1", floor=0)
    ranges.add("t", 0, [OffsetRun(0, 0, 100), OffsetRun(200, 100, 100)])
    ranges.truncate("t", 0, 150)
    assert ranges.translate("t", 0, 299, "A.t@id1") == 150  # never past the end that is left
    assert ranges.translate("t", 0, 220, "A.t@id1") == 120
    assert ranges.binding("t", 0).reset_checkpoints


def test_invalid_utf8_in_an_internal_record_is_a_format_error_and_is_skipped_counted(caplog):
    good = Checkpoint("g", "A.t", 0, 5, 5)
    bad_key = good.key_bytes().replace(b"g", b"\xff", 1)  # the group name is not UTF-8 any more
    with pytest.raises(RecordFormatError, match="not UTF-8"):
        Checkpoint.from_record(bad_key, good.value_bytes())
    from mirrorspark.offsets.checkpoint_store import decode_checkpoints

    found, skipped = decode_checkpoints("A.checkpoints.internal", [(bad_key, good.value_bytes(), 0, 7, 1),
                                                                   (good.key_bytes(), good.value_bytes(), 0, 8, 2),
                                                                   (good.key_bytes(), None, 0, 9, 3)])
    assert found == [(good, 2)] and skipped == 1  # the tombstone (offset 9) is not malformed
    assert "A.checkpoints.internal[0] offset 7 is not a checkpoint" in caplog.text
