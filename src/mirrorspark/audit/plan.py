"""What the audit compares: each source partition's runs from the range log, and the part of them
each cluster still holds.

Kept apart from the job so the offset arithmetic (spans, thinned gaps, windows clipped to the log)
is checked without Spark: a wrong span here is a wrong count there.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import regex

from mirrorspark.offsets.ranges import OffsetRanges, RangeRow
from mirrorspark.partition import Partition
from mirrorspark.policy.topic_selection import TopicSelection
from mirrorspark.state.files import StateError

Bounds = dict[Partition, tuple[int, int]]  # (log start, log end) per partition that exists


@dataclass(frozen=True, kw_only=True)
class PartitionRuns:
    """One source partition's runs, in source order, as the range log keeps them."""

    source_topic: str
    remote_topic: str
    partition: int
    runs: tuple[RangeRow, ...]
    aside: tuple[tuple[int, int], ...] = ()  # [first, end) source ranges ``reconcile`` moved aside: not compared

    @property
    def source_span(self) -> tuple[int, int]:
        """``[first, end)``: first run's upstream to last run's end."""
        return self.runs[0].run.upstream, self.runs[-1].run.upstream_end

    @property
    def target_span(self) -> tuple[int, int]:
        """``[first, end)`` over every run's target offsets (runs need not be in target order)."""
        return min(r.run.downstream for r in self.runs), max(r.run.downstream_end for r in self.runs)

    def unknown_gaps(self) -> list[tuple[int, int, int, int]]:
        """``(source lo, source hi, target lo, target hi)`` between runs whose history was thinned:
        what lies there was probably copied, but which record went where is no longer known."""
        gaps = []
        for row, following in itertools.pairwise(self.runs):
            if not row.exact_gap_after:
                run, next_run = row.run, following.run
                gaps.append((run.upstream_end, next_run.upstream, run.downstream_end,
                             max(run.downstream_end, next_run.downstream)))
        return gaps

    def check_disjoint(self) -> None:
        """Two runs claiming one target offset would make every count wrong: refuse."""
        spans = sorted((r.run.downstream, r.run.downstream_end) for r in self.runs)
        for (_, end), (start, _) in itertools.pairwise(spans):
            if start < end:
                raise StateError(f"offset ranges of {self.source_topic}[{self.partition}] map two source offsets "
                                 f"to target offset {start}: the range log is damaged, the audit cannot trust it")


def select_partitions(ranges: OffsetRanges, selection: TopicSelection,
                      pattern: regex.Pattern[str] | None) -> list[PartitionRuns]:
    """The range log's partitions (``pattern`` fully matching the source or the remote topic name)."""
    out = []
    for topic, partition in ranges.partitions():
        rows = ranges.rows(topic, partition)
        remote = selection.remote_name(topic)
        if not rows or (pattern is not None and not (pattern.fullmatch(topic) or pattern.fullmatch(remote))):
            continue
        plan = PartitionRuns(source_topic=topic, remote_topic=remote, partition=partition, runs=tuple(rows))
        plan.check_disjoint()
        out.append(plan)
    return out


def read_window(span: tuple[int, int], bounds: tuple[int, int] | None) -> tuple[int, int] | None:
    """The part of ``span`` the log still holds (None: the partition does not exist)."""
    if bounds is None:
        return None
    end = max(span[0], min(span[1], bounds[1]))
    return min(max(span[0], bounds[0]), end), end
