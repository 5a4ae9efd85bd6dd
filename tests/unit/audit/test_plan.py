"""The runs an audit compares: spans, thinned gaps, damaged range logs, the --topics match and the
read windows clipped to what each log still holds."""
from __future__ import annotations

import re

import pytest

from mirrorspark.audit.plan import PartitionRuns, read_window, select_partitions
from mirrorspark.offsets.ranges import OffsetRanges, RangeRow
from mirrorspark.partition import OffsetRun
from mirrorspark.policy import policy_for_flow
from mirrorspark.policy.topic_selection import TopicSelection
from mirrorspark.state.files import StateError


def row(upstream: int, downstream: int, count: int, exact_gap_after: bool) -> RangeRow:
    return RangeRow(OffsetRun(upstream, downstream, count), exact_gap_after)


def runs(*rows: tuple[int, int, int, bool]) -> PartitionRuns:
    return PartitionRuns(source_topic="orders", remote_topic="primary.orders", partition=0,
                         runs=tuple(row(*fields) for fields in rows))


def selection(mirror_config) -> TopicSelection:
    flow = mirror_config().enabled_flows[0]
    return TopicSelection(flow, policy_for_flow(flow.settings, flow.source.alias))


def test_spans_run_from_the_first_run_to_the_end_of_the_last_on_each_side():
    plan = runs((100, 10, 5, True), (110, 20, 5, True))
    assert plan.source_span == (100, 115)
    assert plan.target_span == (10, 25)
    # Runs are in source order; on the target a later run may sit lower (a re-write after a restart).
    assert runs((0, 50, 5, True), (5, 0, 5, True)).target_span == (0, 55)


def test_only_a_thinned_gap_is_unknown_and_it_spans_both_sides():
    plan = runs((0, 0, 10, True), (20, 15, 5, False), (40, 30, 5, True))
    assert plan.unknown_gaps() == [(25, 40, 20, 30)]
    # The next run lower on the target: the target side of the gap is empty, never negative.
    assert runs((0, 100, 10, False), (20, 50, 5, True)).unknown_gaps() == [(10, 20, 110, 110)]
    assert runs((0, 0, 10, True), (20, 15, 5, True)).unknown_gaps() == []


def test_two_runs_claiming_one_target_offset_are_refused():
    runs((0, 0, 10, True), (20, 10, 5, True)).check_disjoint()  # adjacent on the target: fine
    with pytest.raises(StateError, match=re.escape(
            "offset ranges of orders[0] map two source offsets to target offset 8: the range log is damaged")):
        runs((0, 0, 10, True), (20, 8, 5, True)).check_disjoint()


def ranges() -> OffsetRanges:
    found = OffsetRanges()
    found.add("orders", 0, [OffsetRun(upstream=0, downstream=0, count=10)])
    found.add("orders", 1, [OffsetRun(upstream=5, downstream=0, count=3)])
    found.add("payments", 0, [OffsetRun(upstream=0, downstream=0, count=4),
                              OffsetRun(upstream=6, downstream=4, count=2)], contiguous_with_previous=False)
    return found


def test_every_partition_with_runs_is_planned_under_its_remote_name(mirror_config):
    plans = select_partitions(ranges(), selection(mirror_config), None)
    assert [(p.source_topic, p.remote_topic, p.partition, p.runs) for p in plans] == [
        ("orders", "primary.orders", 0, (row(0, 0, 10, True),)),
        ("orders", "primary.orders", 1, (row(5, 0, 3, True),)),
        ("payments", "primary.payments", 0, (row(0, 0, 4, True), row(6, 4, 2, True)))]


@pytest.mark.parametrize("pattern, planned", [
    ("orders", {"orders"}),
    (r"primary\.payments", {"payments"}),      # the remote name matches too
    ("order", set()),                          # a full match, not a search
    ("(orders|payments)", {"orders", "payments"}),
])
def test_topics_pattern_fully_matches_the_source_or_the_remote_name(mirror_config, pattern, planned):
    plans = select_partitions(ranges(), selection(mirror_config), re.compile(pattern))
    assert {p.source_topic for p in plans} == planned


def test_partitions_without_runs_are_left_out_and_a_damaged_one_is_refused(mirror_config):
    emptied = ranges()
    emptied.forget("payments")
    assert {p.source_topic for p in select_partitions(emptied, selection(mirror_config), None)} == {"orders"}
    damaged = ranges()
    damaged.add("orders", 0, [OffsetRun(upstream=20, downstream=5, count=10)], contiguous_with_previous=False)
    with pytest.raises(StateError, match=re.escape("orders[0] map two source offsets to target offset 5")):
        select_partitions(damaged, selection(mirror_config), None)


@pytest.mark.parametrize("bounds, window", [
    (None, None),                 # the partition does not exist
    ((0, 100), (10, 20)),         # the whole span is still there
    ((15, 100), (15, 20)),        # retention removed the start
    ((0, 17), (10, 17)),          # the log ends inside the span
    ((30, 40), (20, 20)),         # all of it removed: an empty window, not a reversed one
    ((0, 5), (10, 10)),           # the log ends before the span
])
def test_read_window_is_the_part_of_the_span_the_log_still_holds(bounds, window):
    assert read_window((10, 20), bounds) == window
