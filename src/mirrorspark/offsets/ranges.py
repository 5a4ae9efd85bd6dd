"""The exact source -> target offset mapping of a flow, built from runs the writer reported.

A run ``(upstream, downstream, count)`` says source offsets ``upstream .. upstream+count-1`` were
written, in order, at target offsets ``downstream .. downstream+count-1`` of the same partition.
A contiguous partition is one run however long it grows, so the mapping stays small; gaps
(compaction, transaction markers, re-writes after a restart) start new runs. Each stored run knows
whether the gap after it is *exact* (those source offsets hold no records) or unknown (history
thinned to bound memory, or records the writer could not pair: a break): translation is exact in
the first case and falls back to MM2's "one past the last known record" in the second, so it is
never ahead and never skips a record. The last run's flag says whether the gap after it, to a run a
later batch reports, is still exact (False once a break ended its batch).

A partition's runs are bound to the remote topic they were written to (its name and topic id).
When the remote topic changes (deleted and re-created, renamed by ``topic.map`` or the policy),
the mapping starts again: the old runs are dropped and offsets before the first new run translate
to the new topic's log start (its *floor*), which never skips a record of the new topic.
Translation asked for another binding than the stored one answers nothing.
"""
from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT_MAX_RUNS = 256


@dataclass(frozen=True)
class Run:
    upstream: int
    downstream: int
    count: int


@dataclass
class _Entry:
    upstream: int
    downstream: int
    count: int
    exact_gap_after: bool = True

    @property
    def upstream_end(self) -> int:
        return self.upstream + self.count


@dataclass
class Binding:
    """What a partition's runs point into, and what a re-binding left to do."""

    remote: str | None = None          # "<remote topic>@<topic id>", None until the first binding
    floor: int | None = None           # target offset for source offsets before the first run
    reset_checkpoints: bool = False    # checkpoints emitted under the old binding must be replaced

    def as_json(self) -> dict:
        return {"remote": self.remote, "floor": self.floor, "reset": self.reset_checkpoints}

    @classmethod
    def from_json(cls, body: dict) -> Binding:
        floor = body.get("floor")
        return cls(body.get("remote"), None if floor is None else int(floor), bool(body.get("reset")))


class _PartitionRanges:
    def __init__(self, max_runs: int) -> None:
        self.entries: list[_Entry] = []
        self.max_runs = max_runs
        self.binding = Binding()

    def add(self, run: Run, contiguous_with_previous: bool) -> None:
        entries = self.entries
        # A re-write (a batch re-run after a restart, a re-created source topic): newest wins.
        while entries and entries[-1].upstream >= run.upstream:
            entries.pop()
        if entries:
            last = entries[-1]
            if last.upstream_end > run.upstream:
                last.count = run.upstream - last.upstream
            if (contiguous_with_previous and last.upstream_end == run.upstream
                    and last.downstream + last.count == run.downstream):
                last.count += run.count
                last.exact_gap_after = True  # a new tail: nothing is known after it yet
                return
            # The last run's gap may be known inexact already (a break ended the batch that wrote it).
            last.exact_gap_after = last.exact_gap_after and contiguous_with_previous
        entries.append(_Entry(run.upstream, run.downstream, run.count))
        if len(entries) > self.max_runs:
            self._thin()

    def break_after_last(self) -> None:
        """Records the writer could not pair follow the last run: whatever run comes next, the gap
        before it holds records on the target, so translation in it stays behind them."""
        if self.entries:
            self.entries[-1].exact_gap_after = False

    def _thin(self) -> None:
        """Drop every second run of the older half; their predecessors' gaps become unknown."""
        half = len(self.entries) // 2
        kept: list[_Entry] = []
        for index, entry in enumerate(self.entries):
            if index < half and index % 2 == 1:
                kept[-1].exact_gap_after = False
                continue
            kept.append(entry)
        self.entries = kept

    def translate(self, committed: int) -> int | None:
        entries = self.entries
        index = bisect.bisect_right([e.upstream for e in entries], committed) - 1
        if index < 0:
            # Before anything replicated: MM2 emits no checkpoint either. After a re-binding the
            # new remote topic's start is safe: everything in it came after the consumer's position.
            return self.binding.floor
        entry = entries[index]
        if committed < entry.upstream_end:
            return entry.downstream + (committed - entry.upstream)
        if entry.exact_gap_after and index + 1 < len(entries):
            return entries[index + 1].downstream
        return entry.downstream + entry.count

    def inverse(self, committed_downstream: int) -> int | None:
        """Source offset to resume at for a consumer that read the target up to ``committed_downstream``.

        Inside a run it is exact; in target offsets no run covers (records not written by this flow),
        it is one past the last replicated record before them. Never ahead of what was read.
        """
        entries = self.entries
        index = bisect.bisect_right([e.downstream for e in entries], committed_downstream) - 1
        if index < 0:
            return None
        entry = entries[index]
        if committed_downstream < entry.downstream + entry.count:
            return entry.upstream + (committed_downstream - entry.downstream)
        return entry.upstream_end

    def first_unread(self, committed_downstream: int) -> int | None:
        """Active/active on the same names: the source offset of the first record of this flow's source
        that a consumer of the target at ``committed_downstream`` has not read (this flow's copies below
        that offset it has read, in source order). A gap between exact runs holds only records this flow
        skipped, so the next run's start; None: nothing copied yet."""
        entries = self.entries
        if not entries:
            return None
        index = bisect.bisect_right([e.downstream for e in entries], committed_downstream) - 1
        if index < 0:
            return entries[0].upstream
        entry = entries[index]
        if committed_downstream < entry.downstream + entry.count:
            return entry.upstream + (committed_downstream - entry.downstream)
        if entry.exact_gap_after and index + 1 < len(entries):
            return entries[index + 1].upstream
        return entry.upstream_end

    def copies_between(self, low: int, high: int) -> int:
        """Target offsets in ``low .. high - 1`` that hold a record this flow wrote (as far as the kept
        runs tell: thinned history counts less)."""
        return sum(max(0, min(high, e.downstream + e.count) - max(low, e.downstream)) for e in self.entries
                   if e.downstream < high and e.downstream + e.count > low)

    def latest(self) -> tuple[int, int] | None:
        if not self.entries:
            return None
        last = self.entries[-1]
        return last.upstream_end - 1, last.downstream + last.count - 1


class OffsetRanges:
    """Runs per source (topic, partition); thread-safe (the batch thread writes, the checkpoint
    task reads)."""

    def __init__(self, max_runs_per_partition: int = DEFAULT_MAX_RUNS) -> None:
        self.max_runs = max_runs_per_partition
        self._partitions: dict[tuple[str, int], _PartitionRanges] = {}
        self._lock = threading.Lock()

    def _get(self, topic: str, partition: int) -> _PartitionRanges:
        key = (topic, partition)
        if key not in self._partitions:
            self._partitions[key] = _PartitionRanges(self.max_runs)
        return self._partitions[key]

    def forget(self, topic: str) -> list[tuple[str, int]]:
        """Empty every partition of ``topic``; returns those that had runs."""
        with self._lock:
            dropped = [key for key, ranges in self._partitions.items() if key[0] == topic and ranges.entries]
            for key in dropped:
                self._partitions[key].entries = []
            return dropped

    def binding(self, topic: str, partition: int) -> Binding:
        with self._lock:
            ranges = self._partitions.get((topic, partition))
            return Binding(**vars(ranges.binding)) if ranges else Binding()

    def bind(self, topic: str, partition: int, remote: str, floor: int) -> bool:
        """Bind the partition's runs to ``remote``; a different earlier binding starts a new mapping
        whose floor is ``floor`` (the new remote partition's log start). True when it started anew."""
        with self._lock:
            ranges = self._get(topic, partition)
            old = ranges.binding.remote
            if old == remote:
                return False
            if old is None:  # first binding: runs written before it went into this topic
                ranges.binding.remote = remote
                return False
            ranges.entries = []
            ranges.binding = Binding(remote, floor, reset_checkpoints=old is not None)
            return old is not None

    def truncate(self, topic: str, partition: int, end: int) -> None:
        """The remote partition now ends at ``end`` (records after it are gone): runs past it are cut,
        and later source offsets translate to ``end`` until new runs arrive."""
        with self._lock:
            ranges = self._get(topic, partition)
            kept = [e for e in ranges.entries if e.downstream < end]
            if kept and kept[-1].downstream + kept[-1].count > end:
                kept[-1].count = end - kept[-1].downstream
            if kept:
                kept[-1].exact_gap_after = False
            ranges.entries = kept
            if not kept:
                ranges.binding.floor = min(end, ranges.binding.floor if ranges.binding.floor is not None else end)
            ranges.binding.reset_checkpoints = True

    def checkpoints_reset(self, topic: str, partition: int) -> None:
        """Checkpoints of the new binding were written: nothing older needs replacing any more."""
        with self._lock:
            ranges = self._partitions.get((topic, partition))
            if ranges is not None:
                ranges.binding.reset_checkpoints = False

    def break_after_last(self, topic: str, partition: int) -> None:
        """The partition's last run is followed by records written where the writer does not know (a
        break that ended a batch): the next run, in a later batch, does not continue it exactly."""
        with self._lock:
            ranges = self._partitions.get((topic, partition))
            if ranges is not None:
                ranges.break_after_last()

    def add(self, topic: str, partition: int, runs: Iterable[Run], contiguous_with_previous: bool = True) -> None:
        """Runs of one partition in source-offset order; the first may or may not follow what is stored."""
        with self._lock:
            ranges = self._get(topic, partition)
            for run in runs:
                if run.count > 0:
                    ranges.add(run, contiguous_with_previous)
                    contiguous_with_previous = True

    def translate(self, topic: str, partition: int, committed: int, remote: str | None = None) -> int | None:
        """Target offset for a consumer's committed source offset (the next record it would read);
        None when ``remote`` ("<name>@<topic id>") is given and is not what the runs point into."""
        with self._lock:
            ranges = self._partitions.get((topic, partition))
            if ranges is None or (remote is not None and ranges.binding.remote not in (None, remote)):
                return None
            return ranges.translate(committed)

    def inverse(self, topic: str, partition: int, committed_downstream: int) -> int | None:
        """Failback: the source offset matching a committed offset on the target's remote topic."""
        with self._lock:
            ranges = self._partitions.get((topic, partition))
            return ranges.inverse(committed_downstream) if ranges else None

    def first_unread(self, topic: str, partition: int, committed_downstream: int) -> int | None:
        """Active/active on the same names: see ``_PartitionRanges.first_unread``."""
        with self._lock:
            ranges = self._partitions.get((topic, partition))
            return ranges.first_unread(committed_downstream) if ranges else None

    def copies_between(self, topic: str, partition: int, low: int, high: int) -> int:
        """Target offsets ``low .. high - 1`` of the partition's remote partition written by this flow."""
        with self._lock:
            ranges = self._partitions.get((topic, partition))
            return ranges.copies_between(low, high) if ranges else 0

    def latest(self, topic: str, partition: int) -> tuple[int, int] | None:
        """(source offset, target offset) of the last record written for the partition."""
        with self._lock:
            ranges = self._partitions.get((topic, partition))
            return ranges.latest() if ranges else None

    def partitions(self) -> list[tuple[str, int]]:
        with self._lock:
            return sorted(self._partitions)

    def rows(self, topic: str, partition: int) -> list[tuple[int, int, int, bool]]:
        with self._lock:
            ranges = self._partitions.get((topic, partition))
            return [(e.upstream, e.downstream, e.count, e.exact_gap_after) for e in ranges.entries] if ranges else []

    def restore(self, topic: str, partition: int, rows: Iterable[tuple[int, int, int, bool]],
                binding: Binding | None = None) -> None:
        with self._lock:
            ranges = self._get(topic, partition)
            ranges.entries = [_Entry(u, d, n, bool(x)) for u, d, n, x in rows]
            ranges.binding = binding or Binding()
