"""The exact source -> target offset mapping of a flow, built from runs the writer reported.

An :class:`~mirrorspark.partition.OffsetRun` says source offsets ``upstream .. upstream+count-1``
were written, in order, at target offsets ``downstream .. downstream+count-1`` of the same partition.
A contiguous partition is one run however long it grows, so the mapping stays small; gaps
(compaction, transaction markers, re-writes after a restart) start new runs. Each stored run (a
:class:`RangeRow`) knows whether the gap after it is *exact* (those source offsets hold no records)
or unknown (history thinned to bound memory, or records the writer could not pair: a break):
translation is exact in the first case and falls back to MM2's "one past the last known record" in
the second, so it is never ahead and never skips a record. The last run's flag says whether the gap
after it, to a run a later batch reports, is still exact (False once a break ended its batch).

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
from operator import attrgetter

from mirrorspark.partition import OffsetRun, Partition, kafka_topic_ref

DEFAULT_MAX_RUNS = 256


@dataclass(frozen=True, slots=True)
class RangeRow:
    """A stored run, and whether the gap after it is exact: the source offsets between its end and the
    next run's start hold no records (compaction, transaction markers), so the next run's start is
    where a consumer there resumes. The range log keeps it as ``[upstream, downstream, count, exact]``."""

    run: OffsetRun
    exact_gap_after: bool = True


_UPSTREAM = attrgetter("run.upstream")
_DOWNSTREAM = attrgetter("run.downstream")


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
        floor, remote = body.get("floor"), body.get("remote")
        return cls(None if remote is None else kafka_topic_ref(remote), None if floor is None else int(floor),
                   bool(body.get("reset")))


class _PartitionRanges:
    def __init__(self, max_runs: int) -> None:
        self.rows: list[RangeRow] = []
        self.max_runs = max_runs
        self.binding = Binding()

    def add(self, run: OffsetRun, contiguous_with_previous: bool) -> None:
        rows = self.rows
        # A re-write (a batch re-run after a restart, a re-created source topic): newest wins.
        while rows and rows[-1].run.upstream >= run.upstream:
            rows.pop()
        if rows:
            previous = rows[-1]
            last = previous.run
            if last.upstream_end > run.upstream:
                last = OffsetRun(last.upstream, last.downstream, run.upstream - last.upstream)
            if (contiguous_with_previous and last.upstream_end == run.upstream
                    and last.downstream_end == run.downstream):
                # A new tail: nothing is known after it yet.
                rows[-1] = RangeRow(OffsetRun(last.upstream, last.downstream, last.count + run.count))
                return
            # The last run's gap may be known inexact already (a break ended the batch that wrote it).
            exact = previous.exact_gap_after and contiguous_with_previous
            if last is not previous.run or exact != previous.exact_gap_after:  # rows are immutable: replaced
                rows[-1] = RangeRow(last, exact)
        rows.append(RangeRow(run))
        if len(rows) > self.max_runs:
            self._thin()

    def break_after_last(self) -> None:
        """Records the writer could not pair follow the last run: whatever run comes next, the gap
        before it holds records on the target, so translation in it stays behind them."""
        if self.rows:
            self.rows[-1] = RangeRow(self.rows[-1].run, exact_gap_after=False)

    def _thin(self) -> None:
        """Drop every second run of the older half; their predecessors' gaps become unknown."""
        half = len(self.rows) // 2
        kept: list[RangeRow] = []
        for index, row in enumerate(self.rows):
            if index < half and index % 2 == 1:
                kept[-1] = RangeRow(kept[-1].run, exact_gap_after=False)
                continue
            kept.append(row)
        self.rows = kept

    def translate(self, committed: int) -> int | None:
        rows = self.rows
        index = bisect.bisect_right(rows, committed, key=_UPSTREAM) - 1
        if index < 0:
            # Before anything replicated: MM2 emits no checkpoint either. After a re-binding the
            # new remote topic's start is safe: everything in it came after the consumer's position.
            return self.binding.floor
        row = rows[index]
        run = row.run
        if committed < run.upstream_end:
            return run.downstream + (committed - run.upstream)
        if row.exact_gap_after and index + 1 < len(rows):
            return rows[index + 1].run.downstream
        return run.downstream_end

    def inverse(self, committed_downstream: int) -> int | None:
        """Source offset to resume at for a consumer that read the target up to ``committed_downstream``.

        Inside a run it is exact; in target offsets no run covers (records not written by this flow),
        it is one past the last replicated record before them. Never ahead of what was read.
        """
        index = bisect.bisect_right(self.rows, committed_downstream, key=_DOWNSTREAM) - 1
        if index < 0:
            return None
        run = self.rows[index].run
        if committed_downstream < run.downstream_end:
            return run.upstream + (committed_downstream - run.downstream)
        return run.upstream_end

    def first_unread(self, committed_downstream: int) -> int | None:
        """Active/active on the same names: the source offset of the first record of this flow's source
        that a consumer of the target at ``committed_downstream`` has not read (this flow's copies below
        that offset it has read, in source order). A gap between exact runs holds only records this flow
        skipped, so the next run's start; None: nothing copied yet."""
        rows = self.rows
        if not rows:
            return None
        index = bisect.bisect_right(rows, committed_downstream, key=_DOWNSTREAM) - 1
        if index < 0:
            return rows[0].run.upstream
        row = rows[index]
        run = row.run
        if committed_downstream < run.downstream_end:
            return run.upstream + (committed_downstream - run.downstream)
        if row.exact_gap_after and index + 1 < len(rows):
            return rows[index + 1].run.upstream
        return run.upstream_end

    def copies_between(self, low: int, high: int) -> int:
        """Target offsets in ``low .. high - 1`` that hold a record this flow wrote (as far as the kept
        runs tell: thinned history counts less)."""
        runs = (row.run for row in self.rows)
        return sum(max(0, min(high, r.downstream_end) - max(low, r.downstream)) for r in runs
                   if r.downstream < high and r.downstream_end > low)

    def latest(self) -> tuple[int, int] | None:
        if not self.rows or self.rows[-1].run.count == 0:  # nothing, or records moved aside after the last copy
            return None
        last = self.rows[-1].run
        return last.upstream_end - 1, last.downstream_end - 1

    def move_aside(self, end: int) -> bool:
        """The source records from the last run's end to ``end`` were moved aside (``reconcile``), never
        to be copied here: an empty run at ``end`` marks the gap exact, so a consumer of the target at
        the copy's end fails back past them and a source offset in them translates to the copy's end.
        The next run the writer adds replaces the marker."""
        if self.rows and self.rows[-1].run.count == 0:
            if self.rows[-1].run.upstream >= end:
                return False  # moved that far already
            self.rows.pop()
        if not self.rows or end <= self.rows[-1].run.upstream_end:
            return False
        last = self.rows[-1]
        self.rows[-1] = RangeRow(last.run, exact_gap_after=True)
        self.rows.append(RangeRow(OffsetRun(end, last.run.downstream_end, 0)))
        return True


class OffsetRanges:
    """Runs per source (topic, partition); thread-safe (the batch thread writes, the checkpoint
    task reads)."""

    def __init__(self, max_runs_per_partition: int = DEFAULT_MAX_RUNS) -> None:
        self.max_runs = max_runs_per_partition
        self._partitions: dict[Partition, _PartitionRanges] = {}
        self._lock = threading.Lock()

    def _get(self, topic: str, partition: int) -> _PartitionRanges:
        key = (topic, partition)
        if key not in self._partitions:
            self._partitions[key] = _PartitionRanges(self.max_runs)
        return self._partitions[key]

    def forget(self, topic: str) -> list[Partition]:
        """Empty every partition of ``topic``; returns those that had runs."""
        with self._lock:
            dropped = [key for key, ranges in self._partitions.items() if key[0] == topic and ranges.rows]
            for key in dropped:
                self._partitions[key].rows = []
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
            ranges.rows = []
            ranges.binding = Binding(remote, floor, reset_checkpoints=old is not None)
            return old is not None

    def floor_unknown_history(self, topic: str, partition: int, floor: int) -> None:
        """A partition with no runs whose remote partition already holds another writer's copies (a
        takeover): source offsets before its first run translate to ``floor``, the remote partition's
        log start, which re-reads those copies and skips none (with no floor: no checkpoint, and a
        group failed over there would start wherever its reset policy says)."""
        with self._lock:
            ranges = self._get(topic, partition)
            if not ranges.rows and ranges.binding.floor is None:
                ranges.binding.floor = floor

    def truncate(self, topic: str, partition: int, end: int) -> None:
        """The remote partition now ends at ``end`` (records after it are gone): runs past it are cut,
        and later source offsets translate to ``end`` until new runs arrive."""
        with self._lock:
            ranges = self._get(topic, partition)
            kept = [row for row in ranges.rows if row.run.downstream < end]
            if kept:
                last = kept[-1].run
                if last.downstream_end > end:
                    last = OffsetRun(last.upstream, last.downstream, end - last.downstream)
                kept[-1] = RangeRow(last, exact_gap_after=False)
            ranges.rows = kept
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

    def add(self, topic: str, partition: int, runs: Iterable[OffsetRun], contiguous_with_previous: bool = True) -> None:
        """Runs of one partition in source-offset order; the first may or may not follow what is stored."""
        with self._lock:
            ranges = self._get(topic, partition)
            for run in runs:
                if run.count > 0:
                    ranges.add(run, contiguous_with_previous)
                    contiguous_with_previous = True

    def move_aside(self, topic: str, partition: int, copied: Iterable[OffsetRun], end: int) -> bool:
        """``copied``: runs found on the target after the stored ones (written by a batch that did not
        report them); then the source records up to ``end`` are moved aside (``_PartitionRanges.move_aside``).
        False when nothing lies between the copy's end and ``end``."""
        with self._lock:
            ranges = self._get(topic, partition)
            copied = [run for run in copied if run.count > 0]
            if copied and ranges.rows and ranges.rows[-1].run.count == 0:
                # an earlier move's marker: the copied runs continue the runs before it, and the move
                # goes at least as far as that one
                end = max(end, ranges.rows.pop().run.upstream)
            for run in copied:
                ranges.add(run, True)
            return ranges.move_aside(end)

    def copied_end(self, topic: str, partition: int) -> tuple[int, int, int | None] | None:
        """(source offset, target offset) after the last record copied, and where records were moved
        aside to after it (None: not moved); None when nothing was copied."""
        with self._lock:
            ranges = self._partitions.get((topic, partition))
            rows = [] if ranges is None else ranges.rows
            real = [row.run for row in rows if row.run.count > 0]
            if not real:
                return None
            aside = rows[-1].run.upstream if rows[-1].run.count == 0 else None
            return real[-1].upstream_end, real[-1].downstream_end, aside

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

    def partitions(self) -> list[Partition]:
        with self._lock:
            return sorted(self._partitions)

    def checkpoint_resets(self) -> set[Partition]:
        """The partitions whose checkpoints must be replaced: asked every checkpoint round, for thousands
        of partitions, without copying each binding."""
        with self._lock:
            return {key for key, ranges in self._partitions.items() if ranges.binding.reset_checkpoints}

    def rows(self, topic: str, partition: int) -> list[RangeRow]:
        """The partition's stored runs in source order (a copy of the list; rows are immutable)."""
        with self._lock:
            ranges = self._partitions.get((topic, partition))
            return list(ranges.rows) if ranges else []

    def restore(self, topic: str, partition: int, rows: Iterable[RangeRow], binding: Binding | None = None) -> None:
        with self._lock:
            ranges = self._get(topic, partition)
            ranges.rows = list(rows)
            ranges.binding = binding or Binding()
