"""The metric families, MM2's MBean attributes in Prometheus naming (see docs/operations.md).

MM2's ``kafka.connect.mirror:type=MirrorSourceConnector,target=B,topic=B-topic,partition=N``
attributes become ``mirrorspark_<attribute>`` with labels ``source``, ``target``, ``topic`` (the
remote topic, as MM2 tags it) and ``partition``; its ``MirrorCheckpointConnector`` attribute
``checkpoint-latency-ms`` is labelled by ``group``, ``topic`` and ``partition`` as well.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge

PARTITION = ("source", "target", "topic", "partition")
FLOW = ("source", "target")
CHECKPOINT = ("source", "target", "group", "topic", "partition")


class MirrorMetrics:
    """One registry per process, so tests and several replicators never share global state."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.record_count = Counter("mirrorspark_record_count", "Records replicated (MM2 record-count).",
                                    PARTITION, registry=r)
        self.byte_count = Counter("mirrorspark_byte_count", "Key and value bytes replicated (MM2 byte-count).",
                                  PARTITION, registry=r)
        self.record_rate = Gauge("mirrorspark_record_rate", "Records per second over the last interval "
                                 "(MM2 record-rate).", PARTITION, registry=r)
        self.byte_rate = Gauge("mirrorspark_byte_rate", "Bytes per second over the last interval (MM2 byte-rate).",
                               PARTITION, registry=r)
        self.record_age = {stat: Gauge(f"mirrorspark_record_age_ms_{stat}",
                                       f"Source record age when handed to the producer, {stat} of the last batch "
                                       f"(MM2 record-age-ms-{stat}).", PARTITION, registry=r)
                           for stat in ("min", "max", "avg")}
        self.replication_latency = {stat: Gauge(f"mirrorspark_replication_latency_ms_{stat}",
                                                f"Source timestamp to target acknowledgement, {stat} of the last "
                                                f"batch (MM2 replication-latency-ms-{stat}).", PARTITION, registry=r)
                                    for stat in ("min", "max", "avg")}
        self.checkpoint_latency = {stat: Gauge(f"mirrorspark_checkpoint_latency_ms_{stat}",
                                               f"Checkpoint creation to acknowledgement, {stat} "
                                               f"(MM2 checkpoint-latency-ms-{stat}).", CHECKPOINT, registry=r)
                                   for stat in ("min", "max", "avg")}
        # What MM2 does not report.
        self.lag_offsets = Gauge("mirrorspark_lag_offsets", "Source records not yet replicated (labels: source "
                                 "topic and partition).", PARTITION, registry=r)
        self.lag_seconds = Gauge("mirrorspark_lag_seconds", "Age of the oldest source record not yet replicated; "
                                 "0 when caught up.", PARTITION, registry=r)
        self.last_batch = Gauge("mirrorspark_last_batch_timestamp_seconds",
                                "Unix time of the flow's last successfully written batch.", FLOW, registry=r)
        self.recopied = Counter("mirrorspark_records_recopied", "Records written again after a restart (their "
                                "source offset had been written before).", PARTITION, registry=r)
        self.records_lost = Counter("mirrorspark_records_lost", "Source records that can no longer be copied "
                                    "(retention or deleteRecords ahead of the flow, a re-created or truncated "
                                    "topic, a remote topic deleted on the target); labels: the source topic.",
                                    PARTITION, registry=r)
        self.internal_skipped = Counter("mirrorspark_internal_records_skipped", "Records of an internal topic "
                                        "(checkpoints) that are not in MM2's format and were skipped when read.",
                                        (*FLOW, "topic"), registry=r)
        self.flow_restarts = Counter("mirrorspark_flow_restarts", "Times the flow's query failed and was "
                                     "started again.", FLOW, registry=r)
        self.flow_state = Gauge("mirrorspark_flow_state", "1 for the flow's current state (running, degraded, standby, "
                                "restarting, paused, failed), 0 for the others.", (*FLOW, "state"), registry=r)
        self.flow_running = Gauge("mirrorspark_flow_running", "1 while the flow's query runs, 0 when paused or "
                                  "failed.", FLOW, registry=r)

    def remote_partition_families(self) -> list:
        """Families labelled by the remote topic and partition (what a topic leaving a flow leaves behind)."""
        return [self.record_count, self.byte_count, self.record_rate, self.byte_rate, self.recopied,
                *self.record_age.values(), *self.replication_latency.values()]

    def source_partition_families(self) -> list:
        """Families labelled by the source topic (lag); the loss counter stays: it is the record of a loss."""
        return [self.lag_offsets, self.lag_seconds]

    def checkpoint_families(self) -> list:
        return list(self.checkpoint_latency.values())


def drop_series(families: Iterable, labelnames: tuple[str, ...], stale: Callable[[dict[str, str]], bool]) -> int:
    """Remove the series of ``families`` whose labels ``stale`` picks, so that deleted topics and
    vanished groups do not keep series (and memory) for the life of the process. Returns how many."""
    removed = 0
    for family in families:
        seen: set[tuple[str, ...]] = set()
        for metric in family.collect():
            for sample in metric.samples:
                values = tuple(sample.labels.get(name, "") for name in labelnames)
                if values in seen or not stale(sample.labels):
                    continue
                seen.add(values)
                family.remove(*values)
                removed += 1
    return removed
