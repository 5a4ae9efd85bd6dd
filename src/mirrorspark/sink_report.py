"""What mirrorspark's JVM sink reports to the driver after each micro-batch, read in one place.

When ``save()`` returns inside ``foreachBatch``, Spark has called the sink's ``BatchWrite.commit``
on the driver with every task's commit message, and ``WrittenBatches.accept`` has folded them into
per-flow stores of the driver's JVM (``jvm/mirrorspark/.../sink/WrittenBatches.java``,
``kafka/OffsetRuns.java``, ``kafka/FlowStats.java``; JDK maps that Spark's and py4j's class
loaders share). ``jvm_bridge.SparkJvm`` drains them once per batch, as text through py4j, and hands
it to :func:`parse_report`: one line a row, fields separated by TAB; every topic is a remote (target) topic:

``OffsetRuns.drain``
    ``topic partition upstream downstream count``: source offsets ``upstream..upstream+count-1``
    were written, in order, at target offsets ``downstream..``; in source order per partition.
    A run of count 0 is a break: a failed write, or records on the target whose offsets the writer
    does not know (an exactly-once re-run skipping rows its progress holds no pair for); the next
    run does not continue the previous one.
``FlowStats.drain``
    ``topic partition`` and nine integers: records, bytes (key + value), record age min/max/sum
    and replication latency min/max/sum (ms), and how many records those six figures cover; then the
    record age histogram's bucket counts and the replication latency histogram's, one more bucket
    each than ``FlowStats.bucketBounds()`` has bounds (the last counts what is above them all).
``WrittenBatches.drainResumed``
    ``topic partition resumed recopied``: in a re-run batch, rows found already on the target
    (not sent again) and target records written again.
``WrittenBatches.drainExecutors``
    the ids of the executors that wrote, comma separated (not a TAB line).

Two texts go the other way (``WriteSettings.java``): the sink's ``resume`` option, lines
``topic partition from to`` naming the target records an interrupted attempt of the batch wrote,
made by :func:`resume_option`; and its ``topicIds`` option, lines ``source topic, source topic id,
remote topic id`` (an id not known yet is empty), made by :func:`topic_ids_option`: exactly-once
progress committed for other ids (a topic deleted and re-created since) is not used to skip a row.

This module is the only reader and writer of those texts: the offset mapping and its syncs, the
write marks and loss checks, and the metrics all receive the typed rows of :class:`BatchReport`,
so a change of the format is made here and in the Java classes above, nowhere else. A line that
does not parse means the jar and this package disagree: :class:`BatchReportError` fails the batch
(it is not committed, so nothing is lost) and names the store and the line.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import TypeVar

from mirrorspark.errors import OperationalError
from mirrorspark.partition import OffsetRun, Partition


class BatchReportError(OperationalError):
    """A line drained from the JVM sink is not in the format this package reads."""


@dataclass(frozen=True, slots=True)
class WrittenRun:
    """One line of ``OffsetRuns.drain``: a run of records written in order into a remote partition,
    or a break (count 0)."""

    topic: str
    partition: int
    run: OffsetRun

    @classmethod
    def of(cls, topic: str, partition: int, upstream: int, downstream: int, count: int) -> WrittenRun:
        """The row from the line's fields, in their order."""
        return cls(topic, partition, OffsetRun(upstream, downstream, count))

    @property
    def written(self) -> bool:
        """False for the marker of a failed write (the next run does not continue the previous one)."""
        return self.run.count > 0


@dataclass(frozen=True)
class PartitionStats:
    """One line of ``FlowStats.drain``: a remote partition's figures of the records written."""

    topic: str
    partition: int
    count: int
    bytes: int
    age_min: int
    age_max: int
    age_sum: int
    latency_min: int
    latency_max: int
    latency_sum: int
    timed: int  # records with a source timestamp, which the age and latency figures cover
    age_buckets: tuple[int, ...] = ()      # per bucket (not cumulative), bounds from FlowStats.bucketBounds()
    latency_buckets: tuple[int, ...] = ()

    @classmethod
    def of(cls, topic: str, *numbers: int) -> PartitionStats:
        """The row from the line's fields: nine figures, then the two histograms' equal halves."""
        scalars, buckets = numbers[:SCALARS], numbers[SCALARS:]
        half = len(buckets) // 2
        if len(scalars) != SCALARS or not buckets or len(buckets) % 2:
            raise ValueError(f"{len(numbers) + 1} fields, expected 1 + {SCALARS} + two equal histograms")
        partition, count, size, age_min, age_max, age_sum, latency_min, latency_max, latency_sum, timed = scalars
        return cls(topic, partition, count, size, age_min, age_max, age_sum, latency_min, latency_max, latency_sum,
                   timed, age_buckets=tuple(buckets[:half]), latency_buckets=tuple(buckets[half:]))


SCALARS = 10  # partition, count, bytes, age min/max/sum, latency min/max/sum, timed


@dataclass(frozen=True)
class ResumedPartition:
    """One line of ``WrittenBatches.drainResumed``: what a re-run batch found on the target."""

    topic: str
    partition: int
    resumed: int   # rows already on the target, not sent again
    recopied: int  # target records written again


@dataclass(frozen=True)
class UnresolvedSchemas:
    """One line of ``WrittenBatches.drainUnresolved``: records sent with a schema id neither registry
    knows, copied unchanged (``mirrorspark.schemas.unresolved = copy``)."""

    topic: str
    partition: int
    records: int


@dataclass(frozen=True)
class ResumeRange:
    """One line of the sink's ``resume`` option: target offsets ``begin..end-1`` of the partition
    were written by an interrupted attempt of the batch, compared before anything is sent again."""

    topic: str
    partition: int
    begin: int
    end: int

    @property
    def records(self) -> int:
        return self.end - self.begin


@dataclass(frozen=True)
class TopicIds:
    """One line of the sink's ``topicIds`` option: a planned source topic's id and its remote topic's
    ('' while not seen yet), which the sink's exactly-once progress must have been committed for."""

    topic: str
    source_id: str
    remote_id: str


@dataclass(frozen=True)
class BatchReport:
    """Everything the sink reported for one flow since the previous drain (one batch)."""

    runs: tuple[WrittenRun, ...] = ()
    stats: tuple[PartitionStats, ...] = ()
    resumed: tuple[ResumedPartition, ...] = ()
    executors: frozenset[str] = frozenset()
    unresolved: tuple[UnresolvedSchemas, ...] = ()

    def first_written(self) -> dict[Partition, int]:
        """Per remote partition, the lowest source offset written in this batch."""
        first: dict[Partition, int] = {}
        for row in self.runs:
            key = (row.topic, row.partition)
            upstream = row.run.upstream
            if row.written and upstream < first.get(key, upstream + 1):
                first[key] = upstream
        return first


Row = TypeVar("Row", WrittenRun, PartitionStats, ResumedPartition, UnresolvedSchemas)


def _rows(text: str, row: Callable[..., Row], width: int | None, store: str) -> tuple[Row, ...]:
    """TAB lines of ``store``: ``width`` fields (None: ``row`` checks), a topic then integers, given to
    ``row`` in their order."""
    out = []
    for line in text.splitlines():
        topic, *numbers = line.split("\t")
        try:
            if width is not None and len(numbers) != width - 1:
                raise ValueError(f"{len(numbers) + 1} fields, expected {width}")
            out.append(row(topic, *(int(n) for n in numbers)))
        except ValueError as exc:
            raise BatchReportError(f"{store} returned a line this version of mirrorspark cannot read ({exc}): "
                                   f"{line!r}; are the mirrorspark jar and Python package of one version?") from None
    return tuple(out)


def parse_report(runs: str = "", stats: str = "", resumed: str = "", executors: str = "",
                 unresolved: str = "") -> BatchReport:
    """The typed report from the texts of ``OffsetRuns.drain``, ``FlowStats.drain``,
    ``WrittenBatches.drainResumed``, ``WrittenBatches.drainExecutors`` and ``WrittenBatches.drainUnresolved``."""
    return BatchReport(_rows(runs, WrittenRun.of, 2 + len(fields(OffsetRun)), "OffsetRuns.drain"),
                       _rows(stats, PartitionStats.of, None, "FlowStats.drain"),
                       _rows(resumed, ResumedPartition, len(fields(ResumedPartition)), "WrittenBatches.drainResumed"),
                       frozenset(filter(None, executors.split(","))),
                       _rows(unresolved, UnresolvedSchemas, len(fields(UnresolvedSchemas)),
                             "WrittenBatches.drainUnresolved"))


def resume_option(ranges: Iterable[ResumeRange]) -> str:
    """The sink's ``resume`` option for ``ranges`` ('' when there is nothing to resume)."""
    return "\n".join(f"{r.topic}\t{r.partition}\t{r.begin}\t{r.end}" for r in ranges)


def topic_ids_option(ids: Iterable[TopicIds]) -> str:
    """The sink's ``topicIds`` option for ``ids`` ('' when there are none)."""
    return "\n".join(f"{i.topic}\t{i.source_id}\t{i.remote_id}" for i in ids)
