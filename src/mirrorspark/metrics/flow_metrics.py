"""One flow's replication figures, fed once per batch with what the JVM aggregated.

After the writer's save() returns, the driver drains the sink's report (``mirrorspark.sink_report``):
count, bytes, record age and replication latency per target partition (min / max / sum and a
histogram's bucket counts), and which source offsets were written. Nothing here runs per record.
Re-copies are counted by ``integrity.write_marks`` and by the resumed-batch comparison, and handed
in per batch. MM2's windowed figures (``metrics.window``) are kept per partition for ``mm2_names``.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from mirrorspark.metrics.registry import PARTITION, SOURCE_PARTITION, TOPIC, MirrorMetrics, drop_series
from mirrorspark.metrics.window import Window
from mirrorspark.partition import Partition
from mirrorspark.sink_report import PartitionStats


@dataclass
class PartitionFigures:
    """Totals since start of one remote partition (also served by the REST API), and MM2's windows."""

    records: int = 0
    bytes: int = 0
    recopied: int = 0
    schema_unresolved: int = 0  # copied with a schema id neither registry knows (ADR 0028)
    latency_ms_avg: float | None = None
    age_ms_avg: float | None = None
    traffic: Window = field(default_factory=Window)  # records, bytes, replication latency
    age: Window = field(default_factory=Window)


@dataclass
class FlowFigures:
    partitions: dict[Partition, PartitionFigures] = field(default_factory=dict)
    last_batch_time: float | None = None
    batches: int = 0
    commits: Window = field(default_factory=Window)  # the batch's offsets hand-over, ms (Connect's offset commit)
    in_flight: int = 0


class FlowMetrics:
    """``connectors``: the MM2 connectors whose work this flow does here (for Connect's worker counts)."""

    def __init__(self, metrics: MirrorMetrics, source: str, target: str,
                 connectors: tuple[str, ...] = ("MirrorSourceConnector", "MirrorCheckpointConnector")) -> None:
        self.metrics = metrics
        self.source = source
        self.target = target
        self.connectors = connectors
        self.figures = FlowFigures()
        self._lock = threading.Lock()
        self._kept: tuple[set[str], set[str]] | None = None  # the topics forget_topics was last given
        metrics.register_flow(self)

    def _labels(self, topic: str, partition: int) -> dict[str, str]:
        return {"source": self.source, "target": self.target, "topic": topic, "partition": str(partition)}

    def batch_written(self, stats: Iterable[PartitionStats], recopied: Mapping[Partition, int],
                      unresolved: Mapping[Partition, int] | None = None) -> None:
        """Fold one batch in: the sink's figures per remote partition, the records written again
        per remote partition (``WriteMarks`` and the resumed-batch comparison count them) and those
        copied with a schema id neither registry knows."""
        m = self.metrics
        with self._lock:
            for s in stats:
                labels = self._labels(s.topic, s.partition)
                m.records.labels(**labels).inc(s.count)
                m.bytes.labels(**labels).inc(s.bytes)
                fig = self.figures.partitions.setdefault((s.topic, s.partition), PartitionFigures())
                fig.records += s.count
                fig.bytes += s.bytes
                fig.traffic.add(records=s.count, size=s.bytes, timed=s.timed, low=s.latency_min,
                                high=s.latency_max, total=s.latency_sum)
                if s.timed:
                    fig.age.add(records=0, timed=s.timed, low=s.age_min, high=s.age_max, total=s.age_sum)
                    fig.latency_ms_avg = s.latency_sum / s.timed
                    fig.age_ms_avg = s.age_sum / s.timed
                    topic = (self.source, self.target, s.topic)
                    if s.latency_buckets:
                        m.replication_latency.add(topic, s.latency_buckets, s.latency_sum / 1000)
                    if s.age_buckets:
                        m.record_age.add(topic, s.age_buckets, s.age_sum / 1000)
            self._recopied(recopied)
            for where, records in (unresolved or {}).items():
                m.schema_unresolved.labels(**self._labels(*where)).inc(records)
                self.figures.partitions.setdefault(where, PartitionFigures()).schema_unresolved += records
            self.figures.last_batch_time = time.time()
            self.figures.batches += 1
            m.last_batch.labels(source=self.source, target=self.target).set(self.figures.last_batch_time)

    def in_flight(self, records: int) -> None:
        """Records of the batch being written, not yet acknowledged (0 between batches): Connect's
        source-record-active-count."""
        self.figures.in_flight = records

    def offsets_handed(self, millis: float) -> None:
        """How long the batch's offsets (syncs, marks, progress) took to hand over: Connect's offset commit."""
        with self._lock:
            self.figures.commits.add(records=1, timed=1, low=millis, high=millis, total=millis)

    def count_recopied(self, recopied: Mapping[Partition, int]) -> None:
        """Records written twice outside a batch's own count (a paused writer's late sends)."""
        with self._lock:
            self._recopied(recopied)

    def _recopied(self, recopied: Mapping[Partition, int]) -> None:
        for (topic, partition), again in recopied.items():
            if again:
                self.metrics.recopied.labels(**self._labels(topic, partition)).inc(again)
                self.figures.partitions.setdefault((topic, partition), PartitionFigures()).recopied += again

    def records_lost(self, topic: str, partition: int, records: int) -> None:
        """Source records that will never be copied (labelled by the source topic)."""
        self.metrics.records_lost.labels(source=self.source, target=self.target, source_topic=topic,
                                         partition=str(partition)).inc(records)

    def partitions(self) -> list[tuple[Partition, PartitionFigures]]:
        """The partitions' figures now (``mm2_names`` reads their windows at a scrape)."""
        with self._lock:
            return sorted(self.figures.partitions.items())

    def forget_topics(self, remote_topics: set[str], source_topics: set[str]) -> int:
        """Drop the series and REST figures of topics that left the flow (deleted, no longer
        selected); ``remote_topics``/``source_topics`` are the ones it replicates now."""
        mine = {"source": self.source, "target": self.target}

        def gone(keep: set[str], label: str) -> Callable[[dict[str, str]], bool]:
            return lambda labels: all(labels.get(k) == v for k, v in mine.items()) and labels.get(label) not in keep
        with self._lock:
            kept = self._kept
            self._kept = (set(remote_topics), set(source_topics))
            if kept is not None and remote_topics >= kept[0] and source_topics >= kept[1]:
                return 0  # no topic left since the last call: no series to look through
            removed = drop_series(self.metrics.remote_partition_families(), PARTITION, gone(remote_topics, "topic"))
            removed += drop_series([self.metrics.replication_latency, self.metrics.record_age], TOPIC,
                                   gone(remote_topics, "topic"))
            removed += drop_series(self.metrics.source_partition_families(), SOURCE_PARTITION,
                                   gone(source_topics, "source_topic"))
            for key in [k for k in self.figures.partitions if k[0] not in remote_topics]:
                del self.figures.partitions[key]
        return removed

    def set_running(self, running: bool) -> None:
        self.metrics.set_running(self.source, self.target, running)

    def snapshot(self) -> dict:
        with self._lock:
            return {
                "batches_written": self.figures.batches,
                "last_batch_time": self.figures.last_batch_time,
                "records": sum(f.records for f in self.figures.partitions.values()),
                "bytes": sum(f.bytes for f in self.figures.partitions.values()),
                "recopied": sum(f.recopied for f in self.figures.partitions.values()),
                "schema_unresolved": sum(f.schema_unresolved for f in self.figures.partitions.values()),
                "partitions": [{"topic": t, "partition": p, "records": f.records, "bytes": f.bytes,
                                "recopied": f.recopied, "replication_latency_ms_avg": f.latency_ms_avg,
                                "record_age_ms_avg": f.age_ms_avg}
                               for (t, p), f in sorted(self.figures.partitions.items())],
            }
