"""Checkpoints on a topic both clusters write (active/active on the same names), checked against a
simulation: two logs filled in random order by local producers and by the two flows (each skipping
what came from its target), and for every position a group can commit on A, a failover to B that
must skip no record and read again exactly the count the checkpoint task reports."""
from __future__ import annotations

import random

import pytest

from mirrorspark.offsets.checkpoint_task import both_origins
from mirrorspark.offsets.ranges import OffsetRanges
from mirrorspark.partition import OffsetRun


def _simulate(seed: int, steps: int = 400):
    rng = random.Random(seed)
    logs = {"A": [], "B": []}  # (record id, clusters it has been in before this one)
    cursors = {("A", "B"): 0, ("B", "A"): 0}
    runs = {("A", "B"): OffsetRanges(), ("B", "A"): OffsetRanges()}
    for step in range(steps):
        action = rng.choice(["A", "B", "AB", "BA", "AB", "BA"])
        if action in logs:
            logs[action].append((f"{action}{step}", ()))
            continue
        source, target = action
        at = cursors[(source, target)]
        if at >= len(logs[source]):
            continue
        cursors[(source, target)] = at + 1
        record, path = logs[source][at]
        if target in path:
            continue  # it came from the target: skipped, leaving a gap in the source offsets
        logs[target].append((record, (*path, source)))
        runs[(source, target)].add("t", 0, [OffsetRun(at, len(logs[target]) - 1, 1)])
    return logs, runs


@pytest.mark.parametrize("seed", range(25))
def test_a_failover_from_a_mixed_topic_skips_nothing_and_reads_again_what_it_reports(seed):
    logs, runs = _simulate(seed)
    forward, reverse = runs[("A", "B")], runs[("B", "A")]
    for cluster, log in logs.items():
        assert all(cluster not in path for _, path in log)  # nothing came back
        assert len({record for record, _ in log}) == len(log)  # each record once
    checked = 0
    for committed in range(len(logs["A"]) + 1):
        mine = forward.translate("t", 0, committed)
        if mine is None:
            continue  # nothing copied yet: no checkpoint (as MM2)
        theirs = reverse.first_unread("t", 0, committed)
        checkpoint, twice = both_origins(mine, theirs, lambda lo, hi: forward.copies_between("t", 0, lo, hi))
        read = {record for record, _ in logs["A"][:committed]}
        skipped = [r for r, _ in logs["B"][:checkpoint] if r not in read]
        again = [r for r, _ in logs["B"][checkpoint:] if r in read]
        assert skipped == [], (committed, checkpoint)
        assert twice == len(again), (committed, mine, theirs)
        checked += 1
    assert checked > 50


def test_the_lower_position_wins_and_the_records_between_are_counted():
    assert both_origins(10, None, lambda lo, hi: 0) == (10, 0)
    assert both_origins(10, 10, lambda lo, hi: 0) == (10, 0)
    assert both_origins(10, 6, lambda lo, hi: 3) == (6, 3)  # three of my copies in 6..9 were read on A
    assert both_origins(6, 10, lambda lo, hi: 3) == (6, 1)  # one of the target's own records in 6..9
