"""Prometheus histograms fed with bucket counts the JVM already made.

The sink counts each acknowledged record into a bucket on the JVM side (``FlowStats.java``); what
reaches Python once per batch is a count per bucket, so the histogram cannot be a
``prometheus_client.Histogram`` (which observes one value at a time). This collector keeps the
cumulative counts per label set and exposes them in Prometheus' histogram format.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector

# Upper bounds of the buckets in ms, the same as FlowStats.BOUNDS_MS on the JVM side (a unit test
# compares the two); ADR 0026 says why these.
BUCKET_BOUNDS_MS: tuple[int, ...] = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000)


class BucketHistograms(Collector):
    """One histogram family; ``add`` folds in per-bucket counts (one more than the bounds: the last
    is everything above them) and their sum in seconds."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str],
                 bounds_ms: Sequence[int] = BUCKET_BOUNDS_MS) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.bounds = tuple(b / 1000 for b in bounds_ms)
        self._series: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}
        self._lock = threading.Lock()

    def add(self, labels: Sequence[str], buckets: Sequence[int], seconds: float) -> None:
        if len(buckets) != len(self.bounds) + 1:
            raise ValueError(f"{self.name}: {len(buckets)} buckets for {len(self.bounds)} bounds")
        with self._lock:
            counts, total = self._series.setdefault(tuple(labels), ([0] * len(buckets), [0.0]))
            for i, n in enumerate(buckets):
                counts[i] += n
            total[0] += seconds

    def observe(self, labels: Sequence[str], seconds: float) -> None:
        """One value (the control plane's figures, a few a minute)."""
        index = next((i for i, bound in enumerate(self.bounds) if seconds <= bound), len(self.bounds))
        buckets = [0] * (len(self.bounds) + 1)
        buckets[index] = 1
        self.add(labels, buckets, seconds)

    def remove_where(self, stale: Callable[[dict[str, str]], bool]) -> int:
        with self._lock:
            gone = [key for key in self._series if stale(dict(zip(self.labelnames, key, strict=True)))]
            for key in gone:
                del self._series[key]
        return len(gone)

    def describe(self) -> Iterator[HistogramMetricFamily]:
        yield HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterator[HistogramMetricFamily]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        with self._lock:
            series = [(key, list(counts), total[0]) for key, (counts, total) in self._series.items()]
        for key, counts, total in series:
            cumulative, running = [], 0
            for bound, n in zip((*map(_le, self.bounds), "+Inf"), counts, strict=True):
                running += n
                cumulative.append((bound, running))
            family.add_metric(list(key), cumulative, total)
        yield family


def _le(bound: float) -> str:
    return f"{bound:g}"
