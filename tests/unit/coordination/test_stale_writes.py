"""A paused writer's late sends: parsed from the JVM's list, twins counted, reported and counted in metrics."""
from __future__ import annotations

import logging
import time
from types import SimpleNamespace

import pytest

from mirrorspark.coordination import stale_writes
from mirrorspark.coordination.stale_writes import LateWrites, StaleReport, digest, parse, twins
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.pipeline.flow import Flow
from mirrorspark.pipeline.flow_assembly import FlowContext

LATE = ('{"flushed":true,"partitions":[{"topic":"primary.t","partition":0,"from":44,"dropped":0,"offsets":[45,46]},'
        '{"topic":"primary.t","partition":1,"from":-1,"dropped":3,"offsets":[]}]}')


def test_the_jvm_list_is_parsed_with_its_scan_start_and_what_it_did_not_keep():
    flushed, items = parse(LATE)
    assert flushed
    assert items == [LateWrites("primary.t", 0, 44, (45, 46), 0), LateWrites("primary.t", 1, -1, (), 3)]
    assert [i.count for i in items] == [2, 3]


def test_a_copy_is_the_same_key_value_and_headers():
    one = digest(b"k", b"v", [("seq", b"7")])
    assert one == digest(b"k", b"v", [("seq", "7")])
    for other in (digest(b"k", b"v", [("seq", b"8")]), digest(None, b"v", [("seq", b"7")]),
                  digest(b"kv", b"", [("seq", b"7")]), digest(b"k", b"v", []), digest(b"k", None, [("seq", b"7")]),
                  digest(b"k", b"v", [("seq", b"7"), ("mirrorspark.path", b"primary")])):
        assert other != one


def test_late_records_with_a_twin_in_the_range_are_the_ones_copied_twice():
    # 10..12 written in time; the new writer copied source records a..d at 13..16; the late records at
    # 17 and 18 are copies of b and c; 19 is a late record nobody else wrote (no twin).
    content = {10: b"x", 11: b"y", 12: b"z", 13: b"a", 14: b"b", 15: b"c", 16: b"d", 17: b"b", 18: b"c", 19: b"e"}
    assert twins(sorted(content.items()), {17, 18, 19}) == 2
    assert twins(sorted(content.items()), set()) == 0
    # the twin may come after the late record too (a new writer behind the stale one)
    assert twins([(1, b"q"), (2, b"r"), (3, b"q")], {1}) == 1


def test_each_copy_by_the_new_writer_pairs_with_one_late_record():
    # The source holds the same record twice; the new writer copied it once, the late sends hold both.
    assert twins([(1, b"q"), (2, b"q"), (3, b"q")], {2, 3}) == 1
    assert twins([(1, b"q"), (2, b"q")], {1, 2}) == 0  # two late records alike are no copy by another writer


def _watch(counted: list, collect=lambda flush_ms: None, window: float = 60.0, clock=time.monotonic):
    return stale_writes.LateWatch(flow="primary->backup", conf={}, window=window, collect=collect,
                                  count_recopied=counted.append, clock=clock)


def test_the_first_search_counts_the_copies_in_metrics_and_says_so(monkeypatch, caplog):
    found = StaleReport(late=2, doubled={("primary.t", 0): 2}, unchecked=0)
    monkeypatch.setattr(stale_writes, "count", lambda conf, items: found)
    counted: list = []
    watch = _watch(counted)
    watch.add(LATE)
    with caplog.at_level(logging.INFO, logger="mirrorspark.coordination.stale_writes"):
        assert watch.search() is found
    assert counted == [{("primary.t", 0): 2}]
    assert watch.settled()  # both late records kept have their twin, the producer sent all it held
    line = next(r for r in caplog.records if "copied twice" in r.getMessage())
    assert line.levelno == logging.WARNING
    assert "flow primary->backup: 2 record(s)" in line.getMessage()
    assert "primary.t[0]: 2" in line.getMessage() and "mirrorspark_records_recopied_total" in line.getMessage()


@pytest.mark.parametrize("unchecked, flushed, level", [(0, True, logging.INFO), (3, True, logging.WARNING),
                                                       (0, False, logging.WARNING)])
def test_late_records_with_no_copy_are_news_unless_some_went_unchecked(monkeypatch, caplog, unchecked, flushed,
                                                                        level):
    monkeypatch.setattr(stale_writes, "count", lambda conf, items: StaleReport(2, {}, unchecked))
    monkeypatch.setattr(stale_writes, "ROUNDS", (0.001,))
    text = LATE.replace('"flushed":true', f'"flushed":{str(flushed).lower()}')
    counted: list = []
    watch = _watch(counted, collect=lambda flush_ms: text.replace('"offsets":[45,46]', '"offsets":[]'), window=0.05)
    watch.add(text)
    with caplog.at_level(logging.INFO, logger="mirrorspark.coordination.stale_writes"):
        watch.run()
    assert counted == []
    first = next(r for r in caplog.records if "lost the flow" in r.getMessage())
    assert first.levelno == logging.INFO and "the search goes on" in first.getMessage()
    final = next(r for r in caplog.records if "when the search ended" in r.getMessage())
    assert final.levelno == level and "copied twice" not in final.getMessage()
    assert ("mirrorspark audit" in final.getMessage()) == (level == logging.WARNING)


def test_nothing_late_starts_no_search(caplog):
    with caplog.at_level(logging.INFO):
        for text in ('{"flushed":true,"partitions":[]}', None):
            watch = _watch([])
            watch.add(text)
            assert not watch.pending()
    assert not caplog.records


def test_the_window_is_the_old_producers_delivery_timeout_and_a_lease_timeout():
    assert stale_writes.window(lease_timeout=10.0, producer={}) == 130.0
    assert stale_writes.window(lease_timeout=10.0, producer={"delivery.timeout.ms": " 30000"}) == 40.0
    assert stale_writes.window(lease_timeout=10.0, producer={"delivery.timeout.ms": "soon"}) == 130.0


class FakeTarget:
    """Target partitions read by ``count``: per (topic, partition), records of (key, value, headers, timestamp)."""

    def __init__(self, partitions: dict) -> None:
        self.partitions = partitions

    def consumer(self, conf):
        return FakeReader(self)


class FakeMessage:
    def __init__(self, offset: int, record: tuple) -> None:
        self._offset, (self._key, self._value, self._headers, self._timestamp) = offset, record

    def error(self):
        return None

    def offset(self) -> int:
        return self._offset

    def key(self):
        return self._key

    def value(self):
        return self._value

    def headers(self):
        return self._headers

    def timestamp(self):
        return self._timestamp


class FakeReader:
    def __init__(self, target: FakeTarget) -> None:
        self.target = target
        self.at: tuple[str, int, int] | None = None

    def get_watermark_offsets(self, tp, timeout):
        return 0, len(self.target.partitions[(tp.topic, tp.partition)])

    def assign(self, tps):
        self.at = (tps[0].topic, tps[0].partition, tps[0].offset)

    def consume(self, count, timeout):
        assert self.at is not None
        topic, partition, start = self.at
        records = self.target.partitions[(topic, partition)]
        self.at = (topic, partition, len(records))
        return [FakeMessage(o, records[o]) for o in range(start, len(records))]

    def close(self):
        pass


LOG_APPEND_TIME, CREATE_TIME = 2, 1


@pytest.mark.parametrize("kind", [LOG_APPEND_TIME, CREATE_TIME], ids=["log-append-time", "create-time-by-producer"])
def test_a_late_copy_is_a_twin_whatever_timestamp_the_target_gave_it(monkeypatch, kind):
    # On a LogAppendTime target the broker stamps each copy when it lands; without a source timestamp
    # the producer stamps it when sent: the late copies of b and c carry other times than the new writer's.
    def record(name: bytes, ms: int) -> tuple:
        return name, b"value-" + name, [("seq", name)], (kind, ms)

    target = FakeTarget({("primary.t", 0): [record(b"a", 1000), record(b"b", 1001), record(b"c", 1002),
                                            record(b"b", 5000), record(b"c", 5001), record(b"e", 5002)]})
    monkeypatch.setattr(stale_writes, "consumer", target.consumer)
    found = stale_writes.count({}, [LateWrites("primary.t", 0, 0, (3, 4, 5), 0)])
    assert found.doubled == {("primary.t", 0): 2} and found.unchecked == 0


def test_twins_the_new_writer_makes_after_the_old_writer_left_are_counted_too(monkeypatch):
    # The old writer leaves before the new one has copied the source records its late sends carry:
    # the first search finds no twin, a later one finds it.
    searches: list[int] = []

    def count(conf, items):
        searches.append(len(searches))
        return StaleReport(late=2, doubled={("primary.t", 0): 1} if len(searches) > 1 else {}, unchecked=0)

    monkeypatch.setattr(stale_writes, "count", count)
    monkeypatch.setattr(stale_writes, "ROUNDS", (0.01,), raising=False)
    metrics = MirrorMetrics()
    flow = SimpleNamespace(name="primary->backup", source=SimpleNamespace(alias="primary"),
                           target=SimpleNamespace(alias="backup"), target_producer=dict,
                           options=SimpleNamespace(lease_enabled=False, lease_timeout=10.0, emit_offset_syncs=False))
    shared = SimpleNamespace(metrics=metrics, scheduler=SimpleNamespace(cancel=lambda lanes: None))
    seat = Flow(context=FlowContext(config=flow, policy=None, shared=shared, instance="me"))  # type: ignore[arg-type]
    late = iter([LATE])
    seat.lease = SimpleNamespace(group="g", late_writes=lambda flush_ms=10_000: next(late, None), stop=lambda: None)
    counted: list = []
    query = SimpleNamespace(stop=lambda commit_timeout: None,
                            metrics=SimpleNamespace(set_running=lambda running: None, count_recopied=counted.append))
    seat.parts = SimpleNamespace(query=query, probe=SimpleNamespace(close=lambda: None),
                                     offsets=SimpleNamespace(close=lambda: None))
    try:
        seat.leave()
        deadline = time.monotonic() + 5
        while not counted and time.monotonic() < deadline:
            time.sleep(0.01)
        assert counted == [{("primary.t", 0): 1}], searches
    finally:
        seat.close()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_later_searches_add_only_the_copies_not_counted_yet_and_stop_once_each_has_its_twin(monkeypatch, caplog):
    found = iter([{}, {("primary.t", 0): 1}, {("primary.t", 0): 1}, {("primary.t", 0): 2}])
    monkeypatch.setattr(stale_writes, "count", lambda conf, items: StaleReport(2, next(found), 0))
    monkeypatch.setattr(stale_writes, "ROUNDS", (0.001,))
    counted: list = []
    watch = _watch(counted)
    watch.add(LATE.replace('"dropped":3', '"dropped":0'))
    with caplog.at_level(logging.INFO, logger="mirrorspark.coordination.stale_writes"):
        watch.run()
    assert counted == [{("primary.t", 0): 1}, {("primary.t", 0): 1}]
    assert watch.searches == 4 and watch.settled()  # nothing left to look for: no fifth search
    more = [r for r in caplog.records if "more late record(s)" in r.getMessage()]
    assert len(more) == 2 and all(r.levelno == logging.WARNING for r in more)


def test_the_search_ends_with_its_window(monkeypatch, caplog):
    clock = Clock()

    def count(conf, items):  # never a twin; each search takes 40 s of the window
        clock.now += 40
        return StaleReport(2, {}, 0)

    monkeypatch.setattr(stale_writes, "count", count)
    monkeypatch.setattr(stale_writes, "ROUNDS", (0.001,))
    watch = _watch([], window=100.0, clock=clock)
    watch.add(LATE.replace('"dropped":3', '"dropped":0'))
    with caplog.at_level(logging.INFO, logger="mirrorspark.coordination.stale_writes"):
        watch.run()
    assert watch.searches == 3
    final = next(r for r in caplog.records if "when the search ended" in r.getMessage())
    assert final.levelno == logging.INFO and "2 had no twin" in final.getMessage()


def test_late_records_acknowledged_after_the_first_list_are_searched_too(monkeypatch):
    seen: list[list[LateWrites]] = []

    def count(conf, items):
        seen.append(sorted(items, key=lambda i: (i.topic, i.partition)))
        return StaleReport(sum(i.count for i in items), {}, 0)

    monkeypatch.setattr(stale_writes, "count", count)
    later = ('{"flushed":true,"partitions":[{"topic":"primary.t","partition":0,"from":40,"dropped":1,'
             '"offsets":[50]},{"topic":"primary.u","partition":2,"from":7,"dropped":0,"offsets":[9]}]}')
    watch = _watch([], collect=lambda flush_ms: later)
    watch.add(LATE.replace('"flushed":true', '"flushed":false'))
    assert watch.pending()
    watch.search()
    watch.search()
    assert seen[-1] == [LateWrites("primary.t", 0, 40, (45, 46, 50), 1), LateWrites("primary.t", 1, -1, (), 3),
                        LateWrites("primary.u", 2, 7, (9,), 0)]


def test_a_process_stopping_mid_window_says_what_went_unpaired(monkeypatch, caplog):
    monkeypatch.setattr(stale_writes, "count", lambda conf, items: StaleReport(2, {}, 0))
    watch = _watch([], window=600.0)
    watch.add(LATE.replace('"dropped":3', '"dropped":0'))
    with caplog.at_level(logging.INFO, logger="mirrorspark.coordination.stale_writes"):
        watch.start()
        deadline = time.monotonic() + 5
        while watch.searches == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        watch.stop()
    assert not watch.running()
    final = next(r for r in caplog.records if "cut short" in r.getMessage())
    assert final.levelno == logging.WARNING and "2 late record(s) could not be checked" in final.getMessage()


def test_a_range_grown_past_the_limit_is_read_as_far_as_the_limit(monkeypatch):
    # The new writer went on writing while the search was repeated: its twins come first, near the
    # late records; what lies beyond the limit is not read, and only late records there go unchecked.
    records = [(b"a", b"1", [], (1, 0)), (b"b", b"1", [], (1, 0)), (b"a", b"1", [], (1, 0))]
    records += [(b"n%d" % i, b"1", [], (1, 0)) for i in range(20)] + [(b"z", b"1", [], (1, 0))]
    monkeypatch.setattr(stale_writes, "consumer", FakeTarget({("primary.t", 0): records}).consumer)
    found = stale_writes.count({}, [LateWrites("primary.t", 0, 0, (2, 23), 0)], limit=10)
    assert found.doubled == {("primary.t", 0): 1} and found.unchecked == 1


WITH_SOURCE = ('{"flushed":true,"partitions":[{"topic":"primary.t","partition":0,"from":44,"dropped":0,'
               '"upstream":1002,"offsets":[45,46]}]}')


def test_past_its_window_the_search_waits_for_a_writer_to_copy_past_the_late_records(monkeypatch, caplog):
    """The ninth soak run: the new writer, the target down and itself taken over twice, copied 6 of 120 late
    records again after the 130 s window had ended; nobody said so. The search now waits for the offset
    syncs to pass the late records' source offsets, then looks once more."""
    clock = Clock()
    searches: list[int] = []

    def count(conf, items):
        clock.now += 40
        searches.append(1)
        return StaleReport(2, {("primary.t", 0): 1} if passed else {}, 0)

    passed: list[list[LateWrites]] = []
    answers = iter([False, False, True])

    def copied_past(items):
        clock.now += 30
        if next(answers):
            passed.append(items)
            return True
        return False

    monkeypatch.setattr(stale_writes, "count", count)
    monkeypatch.setattr(stale_writes, "ROUNDS", (0.001,))
    counted: list = []
    watch = stale_writes.LateWatch(flow="primary->backup", conf={}, window=100.0, collect=lambda flush_ms: None,
                                   count_recopied=counted.append, copied_past=copied_past, clock=clock)
    watch.add(WITH_SOURCE)
    with caplog.at_level(logging.INFO, logger="mirrorspark.coordination.stale_writes"):
        watch.run()
    assert len(searches) == 4, "three within the window, none while the writer is behind, one once it passed"
    assert passed == [[LateWrites("primary.t", 0, 44, (45, 46), 0, 1002)]]
    assert counted == [{("primary.t", 0): 1}]
    final = next(r for r in caplog.records if "when the search ended" in r.getMessage())
    assert "after a writer had copied past them" in final.getMessage()


def test_a_writer_that_never_copies_past_them_ends_the_wait_with_the_unpaired_in_doubt(monkeypatch, caplog):
    clock = Clock()

    def count(conf, items):
        clock.now += 40
        return StaleReport(2, {}, 0)

    def copied_past(items):
        clock.now += 30
        return False

    monkeypatch.setattr(stale_writes, "count", count)
    monkeypatch.setattr(stale_writes, "ROUNDS", (0.001,))
    watch = stale_writes.LateWatch(flow="primary->backup", conf={}, window=100.0, collect=lambda flush_ms: None,
                                   count_recopied=lambda _c: None, copied_past=copied_past, writer_wait=300.0,
                                   clock=clock)
    watch.add(WITH_SOURCE)
    with caplog.at_level(logging.INFO, logger="mirrorspark.coordination.stale_writes"):
        watch.run()
    final = next(r for r in caplog.records if "before any writer had copied past them" in r.getMessage())
    assert final.levelno == logging.WARNING and "2 late record(s) could not be checked" in final.getMessage()


def test_without_source_offsets_or_syncs_the_window_alone_ends_the_search(monkeypatch):
    monkeypatch.setattr(stale_writes, "count", lambda conf, items: StaleReport(2, {}, 0))
    monkeypatch.setattr(stale_writes, "ROUNDS", (0.001,))
    asked: list = []
    clock = Clock()
    watch = stale_writes.LateWatch(flow="primary->backup", conf={}, window=0.0, collect=lambda flush_ms: None,
                                   count_recopied=lambda _c: None, copied_past=asked.append, clock=clock)
    watch.add(LATE.replace('"dropped":3', '"dropped":0'))  # an older JVM's list: no source offsets
    watch.run()
    assert asked == [] and watch.searches == 1


def test_a_scan_start_past_the_late_records_is_another_remote_topics_and_the_partition_is_read_from_its_start(
        monkeypatch):
    """The tenth soak run (dst->src): the writer wrote into a remote topic re-created a few seconds before
    it was stopped; the JVM's highest in-time offset was the deleted topic's (10,001), past the new topic's
    late records (offsets 8-13). The search started at the first late record and missed the new writer's
    copies written before them (offsets 2-7): 6 copies made twice, none said."""
    copies = [(b"k%d" % i, b"v", [("seq", b"%d" % i)], (1, 0)) for i in range(6)]
    records = [(b"old", b"v", [], (1, 0))] * 2 + copies + copies
    monkeypatch.setattr(stale_writes, "consumer", FakeTarget({("dst.r", 0): records}).consumer)
    found = stale_writes.count({}, [LateWrites("dst.r", 0, 10_001, tuple(range(8, 14)), 0)])
    assert found.doubled == {("dst.r", 0): 6}
