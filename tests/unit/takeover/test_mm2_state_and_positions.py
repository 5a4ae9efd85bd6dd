"""Units of the MM2 takeover that need no broker: MM2's Connect offset records, runs of MM2's last writes."""
from __future__ import annotations

import json

import pytest

from mirrorspark.partition import OffsetRun
from mirrorspark.state.files import LocalFiles
from mirrorspark.takeover import positions
from mirrorspark.takeover.mm2_state import TakeoverRefused, parse_source_offset
from mirrorspark.takeover.plan import load_positions
from mirrorspark.takeover.positions import runs_of, starting_offsets


def key(connector: str, **partition) -> bytes:
    return json.dumps([connector, partition]).encode()


def test_mm2_source_connector_offsets_are_read_and_others_ignored():
    k = key("MirrorSourceConnector", cluster="A", topic="t", partition=2)
    assert parse_source_offset(k, b'{"offset":41}', "A") == (("t", 2), 41)
    assert parse_source_offset(k, None, "A") == (("t", 2), None)  # a tombstone
    assert parse_source_offset(key("MirrorCheckpointConnector", group="g", topic="A.t", partition=0),
                               b'{"offset":0}', "A") is None
    for bad_key, value in ((b"\xff", b"{}"), (b"[]", b"{}"), (k, b"not json"), (k, b'{"other":1}'),
                           (key("MirrorSourceConnector", cluster="B", topic="t", partition=0), b'{"offset":1}')):
        with pytest.raises((ValueError, KeyError, TypeError)):
            parse_source_offset(bad_key, value, "A")


def test_runs_of_mm2s_last_writes_follow_source_gaps():
    assert runs_of([10, 11, 12, 15, 16], downstream=100) == [OffsetRun(10, 100, 3), OffsetRun(15, 103, 2)]
    assert runs_of([], 0) == []


def test_takeover_positions_round_trip_and_a_damaged_file_is_refused(tmp_path):
    folder = LocalFiles(tmp_path)
    assert load_positions(folder) == {}
    folder.write("takeover.json", json.dumps({"positions": starting_offsets({("t", 0): 5, ("t", 1): 7})}))
    assert load_positions(folder) == {("t", 0): 5, ("t", 1): 7}
    folder.write("takeover.json", "{broken")
    with pytest.raises(TakeoverRefused, match=r"takeover\.json is damaged"):
        load_positions(folder)


def test_offset_syncs_before_the_compared_tail_map_only_the_synced_records():
    """Surviving syncs of a compacted topic prove no one-for-one copy in between: as MM2 does, a
    committed offset between two syncs translates to one past the earlier one (never ahead)."""
    from mirrorspark.offsets.ranges import OffsetRanges
    from mirrorspark.takeover.positions import history

    syncs = [(0, 0), (100, 100), (250, 200), (300, 250), (400, 350)]
    runs = history(syncs, (300, 250), target_start=0)
    assert runs == [(OffsetRun(0, 0, 1), False), (OffsetRun(100, 100, 1), False), (OffsetRun(250, 200, 1), False)]
    ranges = OffsetRanges()
    for run, continues in [*runs, (OffsetRun(300, 250, 10), False)]:
        ranges.add("t", 0, [run], contiguous_with_previous=continues)
    assert ranges.translate("t", 0, 180) == 101 and ranges.translate("t", 0, 305) == 255


def _logs(monkeypatch, source: dict[int, bytes], target: dict[int, bytes],
          source_times: dict[int, int] | None = None) -> None:
    """``read_from`` over two in-memory partitions (offset -> value); the CreateTime is 1000 plus the
    value's length, or the source record's in ``source_times``."""
    def read_from(conf, topic, partition, start, count, timeout=60.0):
        log = source if conf["side"] == "source" else target

        def created(o: int) -> int:
            return (source_times or {}).get(o, 1000 + len(log[o])) if log is source else 1000 + len(log[o])
        return [(o, b"k", log[o], (), created(o)) for o in sorted(log) if o >= start][:count]
    monkeypatch.setattr(positions, "read_from", read_from)


def test_a_copy_cut_before_its_first_offset_sync_is_anchored_at_both_logs_starts(monkeypatch):
    # the writer was stopped during its first batch: 4 records on the target, no offset sync at all
    source = {o: b"v%d" % o for o in range(10, 30)}
    target = {i: b"v%d" % (10 + i) for i in range(4)}
    _logs(monkeypatch, source, {i: v for i, v in target.items()})
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [], 0, 4, 10)
    assert (found.resume, found.method) == (14, "log starts 10->0 and 4 record(s) compared")
    assert [r for r, _ in found.runs] == [OffsetRun(10, 0, 4)]


def test_records_that_differ_from_the_source_start_give_no_anchor(monkeypatch):
    source = {o: b"v%d" % o for o in range(10, 30)}
    _logs(monkeypatch, source, {0: b"v10", 1: b"other", 2: b"v12"})
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [], 0, 3, 10)
    assert not found.method.startswith(("offset sync", "log starts"))


def test_retention_past_the_copys_last_sync_resumes_after_the_records_the_source_still_has(monkeypatch):
    # synced 20->5; the target holds source 20..27 at 5..12; retention then removed source offsets below 25
    source = {o: b"v%d" % o for o in range(25, 40)}
    target = {5 + i: b"v%d" % (20 + i) for i in range(8)}
    _logs(monkeypatch, source, target)
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(20, 5)], 5, 13, 25)
    assert found.resume == 28 and found.lost == 0 and found.method.startswith(positions.PAST_LOG_START)
    assert [r for r, _ in found.runs] == [OffsetRun(25, 10, 3)]


def test_retention_past_the_whole_copy_resumes_at_the_source_start_counting_what_it_removed(monkeypatch):
    source = {o: b"v%d" % o for o in range(40, 50)}
    target = {5 + i: b"v%d" % (20 + i) for i in range(8)}  # source 20..27: 28..39 were never copied
    _logs(monkeypatch, source, target)
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(20, 5)], 5, 13, 40)
    assert (found.resume, found.lost) == (40, 12) and found.method.startswith(positions.PAST_LOG_START)


def test_a_sync_whose_record_the_source_still_has_but_differs_gives_no_anchor(monkeypatch):
    source = {o: b"v%d" % o for o in range(20, 40)}
    target = {5: b"v20", 6: b"other"}
    _logs(monkeypatch, source, target)
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(20, 5)], 5, 7, 20)
    assert not found.method.startswith(("offset sync", "log starts", positions.PAST_LOG_START))


def test_repeating_records_past_the_log_start_give_no_resume_point(monkeypatch):
    # the copy's last records repeat (same key and value): which of them the source still has is a guess
    source = {o: b"same" for o in range(25, 40)}
    target = {5 + i: b"same" for i in range(8)}
    _logs(monkeypatch, source, target)
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(20, 5)], 5, 13, 25)
    assert not found.method.startswith(positions.PAST_LOG_START)


def test_a_copy_that_may_reach_past_the_log_start_without_a_match_gives_no_resume_point(monkeypatch):
    # synced 20->5 and 8 copies after it: they may hold source offsets up to 27 or more, past the start 25
    source = {o: b"new%d" % o for o in range(25, 40)}
    target = {5 + i: b"v%d" % (20 + i) for i in range(8)}
    _logs(monkeypatch, source, target)
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(20, 5)], 5, 13, 25)
    assert not found.method.startswith(positions.PAST_LOG_START)


def test_a_source_topic_recreated_since_the_newest_sync_is_copied_from_its_first_record(monkeypatch):
    # the old topic's 20..27 at 5..12, synced at 20->5 and 27->12 (the last record of its last batch); the
    # topic was deleted and made again: its end (10) is not past the sync's source offset, and none of
    # its records is on the target yet
    source = {o: b"new%d" % o for o in range(0, 10)}
    target = {5 + i: b"v%d" % (20 + i) for i in range(8)}
    _logs(monkeypatch, source, target)
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(20, 5), (27, 12)], 5, 13,
                             0, source_end=10)
    assert (found.resume, found.lost) == (0, 0) and found.method.startswith(positions.NEW_GENERATION)


def test_a_recreated_source_topics_records_already_copied_are_found_after_the_old_ones(monkeypatch):
    # the new topic's 0..2 were copied at 13..15, after the old topic's copies, before any new sync
    source = {o: b"new%d" % o for o in range(0, 10)}
    target = {**{5 + i: b"v%d" % (20 + i) for i in range(8)}, 13: b"new0", 14: b"new1", 15: b"new2"}
    _logs(monkeypatch, source, target)
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(27, 12)], 5, 16, 0,
                             source_end=10)
    assert (found.resume, found.lost) == (3, 0) and found.method.startswith(positions.NEW_GENERATION)
    assert [r for r, _ in found.runs] == [OffsetRun(0, 13, 3)]


def test_a_recreated_source_topics_records_retention_removed_before_a_copy_are_counted(monkeypatch):
    source = {o: b"new%d" % o for o in range(4, 10)}  # the new topic's 0..3 removed before anyone copied them
    target = {5 + i: b"v%d" % (20 + i) for i in range(8)}
    _logs(monkeypatch, source, target)
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(27, 12)], 5, 13, 4,
                             source_end=10)
    assert (found.resume, found.lost) == (4, 4) and found.method.startswith(positions.NEW_GENERATION)


def test_a_source_that_grew_past_the_sync_with_other_records_of_the_same_time_is_not_taken_for_a_new_topic(
        monkeypatch):
    # the end (40) is past the sync's source offset and the records differ, but not written after the
    # copies (a transformation changed the copies, or old timestamps): nothing says the topic is new
    source = {o: b"other%d" % o for o in range(0, 40)}
    target = {5 + i: b"v%d" % (20 + i) for i in range(8)}
    _logs(monkeypatch, source, target, source_times=dict.fromkeys(source, 1000))
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(20, 5)], 5, 13, 0,
                             source_end=40)
    assert not found.method.startswith((positions.NEW_GENERATION, positions.PAST_LOG_START, "offset sync"))


def test_a_recreated_source_topic_that_grew_past_the_old_ones_newest_sync_is_copied_from_its_first_record(
        monkeypatch):
    # the old topic's 20..27 at 5..12, synced at 20->5 and 27->12; the new topic holds 0..39, written after
    # the copies, none of them copied yet: the records at both syncs' source offsets differ and are newer
    source = {o: b"new%d" % o for o in range(0, 40)}
    target = {5 + i: b"v%d" % (20 + i) for i in range(8)}
    times = dict.fromkeys(source, 5000)
    _logs(monkeypatch, source, target, source_times=times)
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(20, 5), (27, 12)], 5, 13,
                             0, source_end=40)
    assert (found.resume, found.lost) == (0, 0) and found.method.startswith(positions.NEW_GENERATION)
    # one of the two syncs' records the same as its copy: one log (a truncation and new writes), not a new topic
    source[27] = b"v27"
    del times[27]
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(20, 5), (27, 12)], 5, 13,
                             0, source_end=40)
    assert not found.method.startswith(positions.NEW_GENERATION)


def test_a_source_log_cut_short_by_an_unclean_election_is_not_taken_for_a_new_topic(monkeypatch):
    # the copy of 0..27 at 0..27, synced at 2->2 and 27->27; the source's log was truncated to 0..9 (an
    # unclean leader election): its end is below the newest sync, but the sync at 2 still maps equal records
    source = {o: b"v%d" % o for o in range(0, 10)}
    target = {o: b"v%d" % o for o in range(28)}
    _logs(monkeypatch, source, target)
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(2, 2), (27, 27)], 0, 28, 0,
                             source_end=10)
    assert not found.method.startswith(positions.NEW_GENERATION)


def test_unknown_copies_after_the_newest_sync_of_a_recreated_topic_give_no_resume_point(monkeypatch):
    # after the old topic's last sync 27->12, a copy that is none of the new topic's first records
    source = {o: b"new%d" % o for o in range(0, 10)}
    target = {**{5 + i: b"v%d" % (20 + i) for i in range(8)}, 13: b"lost-sync"}
    _logs(monkeypatch, source, target)
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(27, 12)], 5, 14, 0,
                             source_end=10)
    assert not found.method.startswith(positions.NEW_GENERATION)



def test_the_old_topics_copies_after_its_newest_sync_do_not_hold_a_recreated_topic_back(monkeypatch):
    """The fault soak: the writer copied the old topic's 28..29 after its last sync 27->12, then the topic was
    deleted and made again, and grew past that sync. Those copies are older than the new topic's first
    record: the old topic's, so the new one is copied from its first record. Before, both instances
    refused the start, forever, and the flow copied nothing."""
    source = {o: b"new%d" % o for o in range(0, 40)}
    target = {**{5 + i: b"v%d" % (20 + i) for i in range(8)}, 13: b"v28", 14: b"v29"}
    _logs(monkeypatch, source, target, source_times=dict.fromkeys(source, 5000))
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(20, 5), (27, 12)], 5, 15,
                             0, source_end=40)
    assert (found.resume, found.lost) == (0, 0) and found.method.startswith(positions.NEW_GENERATION)
    # its end not yet past the sync: the same
    small = {o: v for o, v in source.items() if o < 10}
    _logs(monkeypatch, small, target, source_times=dict.fromkeys(small, 5000))
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(20, 5), (27, 12)], 5, 15,
                             0, source_end=10)
    assert (found.resume, found.lost) == (0, 0) and found.method.startswith(positions.NEW_GENERATION)


def test_a_log_cut_short_then_written_past_the_newest_sync_is_not_taken_for_a_new_topic(monkeypatch):
    # the copy of 0..27 at 0..27, synced at 20->20 and 27->27; the source's log was cut to 0..14 (an unclean
    # leader election) and written again up to 39: the records at both syncs differ and are newer, but its
    # first records are the old ones, older than the copies: one log, so nothing is copied again from 0
    source = {**{o: b"v%d" % o for o in range(0, 15)}, **{o: b"again%d" % o for o in range(15, 40)}}
    target = {o: b"v%d" % o for o in range(28)}
    _logs(monkeypatch, source, target, source_times={o: 5000 for o in range(15, 40)})
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, [(20, 20), (27, 27)], 0,
                             28, 0, source_end=40)
    assert not found.method.startswith(positions.NEW_GENERATION)



def test_older_generations_syncs_do_not_make_the_current_topic_look_new(monkeypatch):
    """The fault soak: the remote partition holds an older topic's copies 0..99 (synced at 40->40 and 99->99),
    then the current topic's 0..19 at 100..119 (synced at 19->119); retention removed the current topic's
    records below 20 and it has grown to 60. The older syncs' source offsets (40) hold the current topic's
    records, which differ and are newer: before, that made the current topic look re-created and the start
    was refused; it resumes at the source's start, the copy being complete up to it."""
    source = {o: b"cur%d" % o for o in range(20, 60)}
    target = {**{o: b"old%d" % o for o in range(100)}, **{100 + o: b"cur%d" % o for o in range(20)}}
    times = dict.fromkeys(source, 9000)
    _logs(monkeypatch, source, target, source_times=times)
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None,
                             [(40, 40), (99, 99), (19, 119)], 0, 120, 20, source_end=60)
    assert not found.method.startswith(positions.NEW_GENERATION)
    assert found.method.startswith(positions.PAST_LOG_START) and (found.resume, found.lost) == (20, 0)


def test_syncs_of_a_remote_topic_deleted_and_filled_again_do_not_anchor_the_new_ones_copy(monkeypatch):
    # The remote topic held source 0..59 at 0..59 (syncs 0->0, 50->50); deleted, then filled again from
    # source 100 (retention removed the rest): 100..139 at 0..39, synced 100->0 and 130->30. The old
    # generation's 50->50 lies past the new copy's end; were the new topic longer, its target offset
    # would point into the new copy at another record, and the stateless start was refused.
    source = {o: b"v%d" % o for o in range(100, 160)}
    target = {i: b"v%d" % (100 + i) for i in range(55)}
    _logs(monkeypatch, source, target)
    syncs = [(0, 0), (50, 50), (100, 0), (130, 30)]
    assert positions.current_remote_generation(syncs) == [(100, 0), (130, 30)]
    # a source topic re-created: its offsets go back, the remote topic's go on
    assert positions.current_remote_generation([(0, 0), (10, 5), (3, 9)]) == [(0, 0), (10, 5), (3, 9)]
    found = positions.locate({"side": "source"}, {"side": "target"}, "t", 0, "A.t", None, syncs, 0, 55, 100)
    assert found.resume == 155 and found.method.startswith("offset sync 100->0"), found.method
    assert all(run.upstream >= 100 for run, _ in found.runs)  # no run of the old generation's offsets
