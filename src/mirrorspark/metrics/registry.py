"""The metric families of one process: mirrorspark's own, by Prometheus conventions, and MM2's
under the names Strimzi's exporter gives them (``mm2_names``). docs/operations.md's table of
series is generated from :func:`catalogue` (``scripts/metrics_table.py``), so this module is where
a series is named, typed and described.

Label names keep one meaning: ``topic`` is always the remote (target) topic, ``source_topic`` the
source topic, ``role`` what this instance is for the flow (``writer`` or ``standby``).
"""
from __future__ import annotations

import platform
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from mirrorspark.metrics.histograms import BucketHistograms
from mirrorspark.metrics.jvm import JvmCollector
from mirrorspark.metrics.mm2_names import Mm2Collector
from mirrorspark.metrics.window import Window

PARTITION = ("source", "target", "topic", "partition")
SOURCE_PARTITION = ("source", "target", "source_topic", "partition")
TOPIC = ("source", "target", "topic")
FLOW = ("source", "target")
STATES = ("starting", "running", "degraded", "restarting", "paused", "failed", "standby")
disable_created_metrics()  # no `_created` twin of every counter: Prometheus derives nothing from it

HEALTHY = frozenset({"running", "paused", "standby"})  # paused: an operator's decision, not a fault


@dataclass
class FlowStatus:
    """What this instance is for one flow now: read at each scrape, so a role change leaves no stale series."""

    state: str = "starting"
    running: bool = False
    healthy: bool | None = None  # None: as the state says (HEALTHY)

    @property
    def role(self) -> str:
        return "standby" if self.state == "standby" else "writer"

    @property
    def is_healthy(self) -> bool:
        return self.state in HEALTHY if self.healthy is None else self.healthy


class FlowStatusCollector(Collector):
    """``mirrorspark_flow_state``, ``_running`` and ``_healthy`` from the flows' current status."""

    def __init__(self) -> None:
        self.flows: dict[tuple[str, str], FlowStatus] = {}
        self.lock = threading.Lock()

    def status(self, source: str, target: str) -> FlowStatus:
        with self.lock:
            return self.flows.setdefault((source, target), FlowStatus())

    def snapshot(self) -> dict[tuple[str, str], FlowStatus]:
        with self.lock:
            return {key: FlowStatus(s.state, s.running, s.healthy) for key, s in self.flows.items()}

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield from self._families()

    def _families(self) -> tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]:
        return (GaugeMetricFamily("mirrorspark_flow_state", "1 for the flow's current state in this instance, 0 for "
                                  "the others.", labels=(*FLOW, "role", "state")),
                GaugeMetricFamily("mirrorspark_flow_running", "1 while this instance's query of the flow runs.",
                                  labels=(*FLOW, "role")),
                GaugeMetricFamily("mirrorspark_flow_healthy", "1 when this instance does its part of the flow: "
                                  "writing (or paused by an operator; or degraded only by a loss it reported), or a "
                                  "standby ready to take over.",
                                  labels=(*FLOW, "role")))

    def collect(self) -> Iterator[GaugeMetricFamily]:
        state, running, healthy = self._families()
        for (source, target), s in sorted(self.snapshot().items()):
            for name in STATES:
                state.add_metric([source, target, s.role, name], 1 if name == s.state else 0)
            running.add_metric([source, target, s.role], 1 if s.running else 0)
            healthy.add_metric([source, target, s.role], 1 if s.is_healthy else 0)
        yield state
        yield running
        yield healthy


def build_labels() -> dict[str, str]:
    """Versions for ``mirrorspark_build_info``: this package, pyspark, the Kafka clients, Python."""
    from mirrorspark.paths import CONNECT_TRANSFORMS
    from mirrorspark.version import version

    try:
        spark = metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        spark = "unknown"
    return {"version": version(), "spark_version": spark,
            "kafka_version": CONNECT_TRANSFORMS.rsplit(":", 1)[1], "python_version": platform.python_version()}


class MirrorMetrics:
    """One registry per process, so tests and several replicators never share global state."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.records = Counter("mirrorspark_records", "Records replicated and acknowledged by the target.",
                               PARTITION, registry=r)
        self.bytes = Counter("mirrorspark_bytes", "Key and value bytes of the records replicated.", PARTITION,
                             registry=r)
        self.replication_latency = BucketHistograms(
            "mirrorspark_replication_latency_seconds", "Source record timestamp to the target's acknowledgement.",
            TOPIC)
        self.record_age = BucketHistograms(
            "mirrorspark_record_age_seconds", "Source record timestamp to the hand-over to the target producer.",
            TOPIC)
        self.checkpoint_latency = BucketHistograms(
            "mirrorspark_checkpoint_latency_seconds", "A group's offsets listed on the source to its checkpoint "
            "acknowledged on the target.", FLOW)
        for histogram in (self.replication_latency, self.record_age, self.checkpoint_latency):
            r.register(histogram)
        self.lag_records = Gauge("mirrorspark_lag_records", "Source records not yet replicated.", SOURCE_PARTITION,
                                 registry=r)
        self.lag_seconds = Gauge("mirrorspark_lag_seconds", "Age of the oldest source record not yet replicated; "
                                 "0 when caught up.", SOURCE_PARTITION, registry=r)
        self.last_batch = Gauge("mirrorspark_last_batch_timestamp_seconds",
                                "Unix time of the flow's last successfully written batch.", FLOW, registry=r)
        self.recopied = Counter("mirrorspark_records_recopied", "Records written again after a restart or by a "
                                "writer that lost the flow (their source offset had been written before).",
                                PARTITION, registry=r)
        self.schema_unresolved = Counter("mirrorspark_schema_unresolved_records", "Records copied with a schema id "
                                         "neither schema registry knows, unchanged (mirrorspark.schemas.unresolved "
                                         "= copy).", PARTITION, registry=r)
        self.records_lost = Counter("mirrorspark_records_lost", "Source records that can no longer be copied "
                                    "(retention or deleteRecords ahead of the flow, a re-created or truncated "
                                    "topic, a remote topic deleted on the target).", SOURCE_PARTITION, registry=r)
        self.internal_skipped = Counter("mirrorspark_internal_records_skipped", "Records of an internal topic "
                                        "(checkpoints) that are not in MM2's format and were skipped when read.",
                                        TOPIC, registry=r)
        self.flow_restarts = Counter("mirrorspark_flow_restarts", "Times the flow's query failed and was "
                                     "started again.", FLOW, registry=r)
        self.status = FlowStatusCollector()
        r.register(self.status)
        info = Gauge("mirrorspark_build_info", "1; the labels give the versions this process runs.",
                     tuple(build_labels()), registry=r)
        info.labels(**build_labels()).set(1)
        ProcessCollector(registry=r)   # process_*: the Python driver process
        PlatformCollector(registry=r)  # python_info
        self._extra_lock = threading.Lock()
        self.flows: list = []  # FlowMetrics of this process (mm2_names reads their windows)
        # MM2's checkpoint-latency-ms windows per (source, target, group, topic, partition).
        self.checkpoints: dict[tuple[str, str, str, str, str], Window] = {}
        self.mm2 = Mm2Collector(self)
        r.register(self.mm2)
        self.jvm = JvmCollector()
        r.register(self.jvm)

    def register_flow(self, flow_metrics: object) -> None:
        with self._extra_lock:
            self.flows.append(flow_metrics)

    def flow_metrics(self) -> list:
        with self._extra_lock:
            return list(self.flows)

    def checkpoint_acknowledged(self, *, source: str, target: str, group: str, topic: str, partition: int,
                                millis: float) -> None:
        """A checkpoint of ``group`` for the remote ``topic`` and ``partition`` was acknowledged ``millis``
        after its offsets were listed (MM2's checkpoint-latency-ms)."""
        key = (source, target, group, topic, str(partition))
        with self._extra_lock:
            window = self.checkpoints.get(key)
            if window is None:
                window = self.checkpoints[key] = Window()
            window.add(records=1, timed=1, low=millis, high=millis, total=millis)

    def checkpoint_timed(self, *, source: str, target: str, millis: float) -> None:
        """One checkpoint round's latency into the flow's histogram."""
        self.checkpoint_latency.observe((source, target), millis / 1000)

    def forget_groups(self, *, source: str, target: str, keep: set[str]) -> None:
        """Groups that vanished from the source leave no MM2 series behind."""
        with self._extra_lock:
            for key in [k for k in self.checkpoints if k[:2] == (source, target) and k[2] not in keep]:
                del self.checkpoints[key]

    def checkpoint_windows(self) -> list[tuple[tuple[str, str, str, str, str], Window]]:
        with self._extra_lock:
            return sorted(self.checkpoints.items())

    def set_state(self, source: str, target: str, state: str, healthy: bool | None = None) -> None:
        """``healthy``: when the state alone does not say (a flow ``degraded`` by a loss it reported
        replicates as it should; one retrying an unreachable cluster does not)."""
        status = self.status.status(source, target)
        status.state, status.healthy = state, healthy

    def set_running(self, source: str, target: str, running: bool) -> None:
        self.status.status(source, target).running = running

    def remote_partition_families(self) -> list:
        """Families labelled by the remote topic and partition (what a topic leaving a flow leaves behind)."""
        return [self.records, self.bytes, self.recopied, self.schema_unresolved]

    def source_partition_families(self) -> list:
        """Families labelled by the source topic (lag); the loss counter stays: it is the record of a loss."""
        return [self.lag_records, self.lag_seconds]


@dataclass(frozen=True)
class Series:
    """One exported family as docs/operations.md lists it."""

    name: str
    kind: str
    labels: tuple[str, ...]
    help: str


def catalogue(metrics: MirrorMetrics) -> list[Series]:
    """Every family ``metrics`` exports now (but process_* and python_info, which prometheus_client
    documents), with its type, the labels its series carry and its help, sorted by name."""
    out = []
    for family in metrics.registry.collect():
        if family.name.startswith(("process_", "python_")):
            continue
        labels: list[str] = []
        for sample in family.samples:
            labels += [k for k in sample.labels if k not in labels and k != "le"]
        name = family.name + ("_total" if family.type == "counter" else "")
        out.append(Series(name, family.type, tuple(labels), " ".join(family.documentation.split())))
    return sorted(out, key=lambda s: s.name)


def drop_series(families: Iterable, labelnames: tuple[str, ...], stale: Callable[[dict[str, str]], bool]) -> int:
    """Remove the series of ``families`` whose labels ``stale`` picks, so that deleted topics and
    vanished groups do not keep series (and memory) for the life of the process. Returns how many."""
    removed = 0
    for family in families:
        if isinstance(family, BucketHistograms):
            removed += family.remove_where(stale)
            continue
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
