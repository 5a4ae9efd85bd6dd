"""One flow's replication figures, fed once per batch with what the JVM aggregated.

After the writer's save() returns, the driver drains the sink's report (``mirrorspark.sink_report``):
count, bytes, record age and replication latency per target partition, and which source offsets were written.
Nothing here runs per record. Re-copies are counted by ``integrity.write_marks`` and by the
resumed-batch comparison, and handed in per batch.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from mirrorspark.metrics.registry import PARTITION, MirrorMetrics, drop_series
from mirrorspark.partition import Partition
from mirrorspark.sink_report import PartitionStats


@dataclass
class PartitionFigures:
    """Totals since start of one remote partition (also served by the REST API)."""

    records: int = 0
    bytes: int = 0
    recopied: int = 0
    latency_ms_avg: float | None = None
    age_ms_avg: float | None = None


@dataclass
class FlowFigures:
    partitions: dict[Partition, PartitionFigures] = field(default_factory=dict)
    last_batch_time: float | None = None
    batches: int = 0


class FlowMetrics:
    def __init__(self, metrics: MirrorMetrics, source: str, target: str) -> None:
        self.metrics = metrics
        self.source = source
        self.target = target
        self.figures = FlowFigures()
        self._lock = threading.Lock()
        self._rate_mark: tuple[float, dict[Partition, tuple[int, int]]] = (time.monotonic(), {})
        self._moving: set[Partition] = set()  # partitions whose last published rate was not 0
        self._kept: tuple[set[str], set[str]] | None = None  # the topics forget_topics was last given

    def _labels(self, topic: str, partition: int) -> dict[str, str]:
        return {"source": self.source, "target": self.target, "topic": topic, "partition": str(partition)}

    def batch_written(self, stats: Iterable[PartitionStats], recopied: Mapping[Partition, int]) -> None:
        """Fold one batch in: the sink's figures per remote partition and the records written again
        per remote partition (``WriteMarks`` and the resumed-batch comparison count them)."""
        m = self.metrics
        with self._lock:
            for s in stats:
                labels = self._labels(s.topic, s.partition)
                m.record_count.labels(**labels).inc(s.count)
                m.byte_count.labels(**labels).inc(s.bytes)
                fig = self.figures.partitions.setdefault((s.topic, s.partition), PartitionFigures())
                fig.records += s.count
                fig.bytes += s.bytes
                if s.timed:
                    for gauge, low, high, total in ((m.record_age, s.age_min, s.age_max, s.age_sum),
                                                    (m.replication_latency, s.latency_min, s.latency_max,
                                                     s.latency_sum)):
                        gauge["min"].labels(**labels).set(low)
                        gauge["max"].labels(**labels).set(high)
                        gauge["avg"].labels(**labels).set(total / s.timed)
                    fig.latency_ms_avg = s.latency_sum / s.timed
                    fig.age_ms_avg = s.age_sum / s.timed
            self._recopied(recopied)
            self.figures.last_batch_time = time.time()
            self.figures.batches += 1
            m.last_batch.labels(source=self.source, target=self.target).set(self.figures.last_batch_time)

    def count_recopied(self, recopied: Mapping[Partition, int]) -> None:
        """Records written twice outside a batch's own count (a paused writer's late sends)."""
        with self._lock:
            self._recopied(recopied)

    def _recopied(self, recopied: Mapping[Partition, int]) -> None:
        for (topic, partition), again in recopied.items():
            if again:
                self.metrics.recopied.labels(**self._labels(topic, partition)).inc(again)
                self.figures.partitions.setdefault((topic, partition), PartitionFigures()).recopied += again

    def update_rates(self) -> None:
        """record-rate and byte-rate over the time since the previous call."""
        now = time.monotonic()
        with self._lock:
            then, previous = self._rate_mark
            elapsed = max(now - then, 1e-3)
            current = {tp: (f.records, f.bytes) for tp, f in self.figures.partitions.items()}
            moving = set()
            for (topic, partition), (records, size) in current.items():
                before = previous.get((topic, partition), (0, 0))
                if (records, size) == before and (topic, partition) not in self._moving:
                    continue  # quiet, and its gauges already say 0: thousands of quiet partitions cost nothing
                labels = self._labels(topic, partition)
                self.metrics.record_rate.labels(**labels).set((records - before[0]) / elapsed)
                self.metrics.byte_rate.labels(**labels).set((size - before[1]) / elapsed)
                if (records, size) != before:
                    moving.add((topic, partition))
            self._rate_mark, self._moving = (now, current), moving

    def records_lost(self, topic: str, partition: int, records: int) -> None:
        """Source records that will never be copied (labelled by the source topic)."""
        self.metrics.records_lost.labels(**self._labels(topic, partition)).inc(records)

    def forget_topics(self, remote_topics: set[str], source_topics: set[str]) -> int:
        """Drop the series and REST figures of topics that left the flow (deleted, no longer
        selected); ``remote_topics``/``source_topics`` are the ones it replicates now."""
        mine = {"source": self.source, "target": self.target}

        def gone(keep: set[str]) -> Callable[[dict[str, str]], bool]:
            return lambda labels: all(labels.get(k) == v for k, v in mine.items()) and labels.get("topic") not in keep
        with self._lock:
            kept = self._kept
            self._kept = (set(remote_topics), set(source_topics))
            if kept is not None and remote_topics >= kept[0] and source_topics >= kept[1]:
                return 0  # no topic left since the last call: no series to look through
            removed = drop_series(self.metrics.remote_partition_families(), PARTITION, gone(remote_topics))
            removed += drop_series(self.metrics.source_partition_families(), PARTITION, gone(source_topics))
            for key in [k for k in self.figures.partitions if k[0] not in remote_topics]:
                del self.figures.partitions[key]
            then, previous = self._rate_mark
            self._rate_mark = (then, {k: v for k, v in previous.items() if k[0] in remote_topics})
        return removed

    def set_running(self, running: bool) -> None:
        self.metrics.flow_running.labels(source=self.source, target=self.target).set(1 if running else 0)

    def snapshot(self) -> dict:
        with self._lock:
            return {
                "batches_written": self.figures.batches,
                "last_batch_time": self.figures.last_batch_time,
                "records": sum(f.records for f in self.figures.partitions.values()),
                "bytes": sum(f.bytes for f in self.figures.partitions.values()),
                "recopied": sum(f.recopied for f in self.figures.partitions.values()),
                "partitions": [{"topic": t, "partition": p, "records": f.records, "bytes": f.bytes,
                                "recopied": f.recopied, "replication_latency_ms_avg": f.latency_ms_avg,
                                "record_age_ms_avg": f.age_ms_avg}
                               for (t, p), f in sorted(self.figures.partitions.items())],
            }
