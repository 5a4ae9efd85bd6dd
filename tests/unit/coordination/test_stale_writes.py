"""A paused writer's late sends: parsed from the JVM's list, twins counted, reported and counted in metrics."""
from __future__ import annotations

import logging

import pytest

from mirrorspark.coordination import stale_writes
from mirrorspark.coordination.stale_writes import LateWrites, StaleReport, digest, parse, twins

LATE = ('{"flushed":true,"partitions":[{"topic":"primary.t","partition":0,"from":44,"dropped":0,"offsets":[45,46]},'
        '{"topic":"primary.t","partition":1,"from":-1,"dropped":3,"offsets":[]}]}')


def test_the_jvm_list_is_parsed_with_its_scan_start_and_what_it_did_not_keep():
    flushed, items = parse(LATE)
    assert flushed
    assert items == [LateWrites("primary.t", 0, 44, (45, 46), 0), LateWrites("primary.t", 1, -1, (), 3)]
    assert [i.count for i in items] == [2, 3]


def test_a_copy_is_the_same_key_value_headers_and_timestamp():
    one = digest(b"k", b"v", [("seq", b"7")], 1000)
    assert one == digest(b"k", b"v", [("seq", "7")], 1000)
    for other in (digest(b"k", b"v", [("seq", b"8")], 1000), digest(b"k", b"v", [("seq", b"7")], 1001),
                  digest(None, b"v", [("seq", b"7")], 1000), digest(b"kv", b"", [("seq", b"7")], 1000),
                  digest(b"k", b"v", [], 1000), digest(b"k", None, [("seq", b"7")], 1000)):
        assert other != one


def test_late_records_with_a_twin_in_the_range_are_the_ones_copied_twice():
    # 10..12 written in time; the new writer copied source records a..d at 13..16; the late records at
    # 17 and 18 are copies of b and c; 19 is a late record nobody else wrote (no twin).
    content = {10: b"x", 11: b"y", 12: b"z", 13: b"a", 14: b"b", 15: b"c", 16: b"d", 17: b"b", 18: b"c", 19: b"e"}
    assert twins(sorted(content.items()), {17, 18, 19}) == 2
    assert twins(sorted(content.items()), set()) == 0
    # the twin may come after the late record too (a new writer behind the stale one)
    assert twins([(1, b"q"), (2, b"r"), (3, b"q")], {1}) == 1


def test_report_counts_the_copies_in_metrics_and_says_so(monkeypatch, caplog):
    found = StaleReport(late=2, doubled={("primary.t", 0): 2}, unchecked=0)
    monkeypatch.setattr(stale_writes, "count", lambda conf, items: found)
    counted: list = []
    with caplog.at_level(logging.INFO, logger="mirrorspark.coordination.stale_writes"):
        assert stale_writes.report("primary->backup", LATE, {}, counted.append) is found
    assert counted == [{("primary.t", 0): 2}]
    line = next(r for r in caplog.records if "copied twice" in r.getMessage())
    assert line.levelno == logging.WARNING
    assert "flow primary->backup: 2 record(s)" in line.getMessage()
    assert "primary.t[0]: 2" in line.getMessage() and "mirrorspark_records_recopied_total" in line.getMessage()


@pytest.mark.parametrize("unchecked, flushed, level", [(0, True, logging.INFO), (3, True, logging.WARNING),
                                                       (0, False, logging.WARNING)])
def test_late_records_with_no_copy_are_news_unless_some_went_unchecked(monkeypatch, caplog, unchecked, flushed,
                                                                        level):
    monkeypatch.setattr(stale_writes, "count", lambda conf, items: StaleReport(2, {}, unchecked))
    text = LATE.replace('"flushed":true', f'"flushed":{str(flushed).lower()}')
    counted: list = []
    with caplog.at_level(logging.INFO, logger="mirrorspark.coordination.stale_writes"):
        stale_writes.report("a->b", text, {}, counted.append)
    assert counted == []
    line = next(r for r in caplog.records if "lost the flow" in r.getMessage())
    assert line.levelno == level
    assert ("mirrorspark audit" in line.getMessage()) == (level == logging.WARNING)


def test_nothing_late_says_nothing(caplog):
    with caplog.at_level(logging.INFO):
        assert stale_writes.report("a->b", '{"flushed":true,"partitions":[]}', {}, lambda c: None) is None
        assert stale_writes.report("a->b", None, {}, lambda c: None) is None
    assert not caplog.records
