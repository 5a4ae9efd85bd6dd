"""The driver JVM's series (memory, collections, threads, CPU), sampled off the scrape path.

The JVM is another process than Python's (pyspark starts it), so prometheus_client's process
collector does not see it. A daemon thread asks ``io.mirrorspark.metrics.JvmMetrics.sample()``
once per interval through py4j and keeps the text; a scrape only parses what is kept, so it never
waits on the JVM, and a failed sample is logged once and leaves the previous one. In local mode the
executors run in this JVM; on a Spark cluster their JVMs are Spark's to report (docs/operations.md).
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from mirrorspark.metrics.mm2_names import producer_client_id

log = logging.getLogger(__name__)
BUFFER = "kafka_producer_buffer_available_bytes"  # per flow, labelled with MM2's producer client id
KINDS = {"jvm_memory_used_bytes": "gauge", "jvm_memory_max_bytes": "gauge", "jvm_threads_current": "gauge",
         "jvm_gc_collection_seconds_count": "gauge", "jvm_gc_collection_seconds_sum": "gauge",
         "jvm_process_cpu_seconds_total": "counter", BUFFER: "gauge"}
HELP = {"jvm_memory_used_bytes": "Driver JVM memory in use (area: heap, nonheap).",
        "jvm_memory_max_bytes": "Driver JVM memory limit (area: heap, nonheap; -1: none).",
        "jvm_threads_current": "Driver JVM threads.",
        "jvm_gc_collection_seconds_count": "Driver JVM collections per collector.",
        "jvm_gc_collection_seconds_sum": "Driver JVM time spent collecting, per collector.",
        "jvm_process_cpu_seconds_total": "Driver JVM process CPU time.",
        BUFFER: "Free buffer memory of the flow's pooled producers in the driver JVM (local mode: all of them); "
                "MM2: the source task's producer buffer-available-bytes."}


class JvmCollector(Collector):
    def __init__(self) -> None:
        self._text = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def attach(self, sample: Callable[[], str], interval: float) -> None:
        """Sample ``sample()`` every ``interval`` seconds until :meth:`detach`."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(sample, interval), name="mirrorspark-jvm-metrics",
                                        daemon=True)
        self._thread.start()

    def detach(self) -> None:
        self._stop.set()

    def _run(self, sample: Callable[[], str], interval: float) -> None:
        failed = False
        while not self._stop.is_set():
            try:
                text = sample()
                with self._lock:
                    self._text = text
                failed = False
            except Exception as exc:  # noqa: BLE001 - a metric never stops anything; said once per run of failures
                if not failed:
                    log.warning("JVM metrics: sampling the driver JVM failed (kept the last sample): %s", exc)
                failed = True
            self._stop.wait(interval)

    def feed(self, text: str) -> None:
        """A sample given directly (tests, or a caller that already asked the JVM)."""
        with self._lock:
            self._text = text

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        with self._lock:
            text = self._text
        families: dict[str, GaugeMetricFamily | CounterMetricFamily] = {}
        for line in text.splitlines():
            name, label, value = [*line.split("\t"), "", ""][:3]
            if name not in KINDS:
                continue
            family = families.get(name)
            key, _, label_value = label.partition("=")
            if name == BUFFER:  # MM2's producer client id, as Strimzi's dashboard selects it
                source, _, target = label_value.partition("->")
                key, label_value = "clientid", producer_client_id(source, target)
            labels = ("jvm", key) if key else ("jvm",)
            if family is None:
                family = families[name] = (CounterMetricFamily(name.removesuffix("_total"), HELP[name], labels=labels)
                                           if KINDS[name] == "counter" else
                                           GaugeMetricFamily(name, HELP[name], labels=labels))
            try:
                family.add_metric(["driver", label_value] if key else ["driver"], float(value))
            except ValueError:
                continue
        yield from families.values()
