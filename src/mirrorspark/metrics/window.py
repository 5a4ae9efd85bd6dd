"""MM2's windowed statistics: what its JMX attributes report, rebuilt from per-batch figures.

MM2's tasks keep their figures in a Kafka ``Metrics`` registry with the default ``MetricConfig``:
two samples of 30 s. min, max and avg cover the samples not yet purged and read NaN once they are
all older than that (a partition gone quiet stops reporting its last maximum); a rate divides what
the samples hold by the time they span, at least one full sample. mirrorspark gets its figures once
per batch (aggregated in the JVM, never per record in Python), so a sample here is one batch's
figures; the window and its expiry are MM2's (ADR 0026).
"""
from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

SAMPLE_SECONDS = 30.0  # MetricConfig's default sample window (metrics.sample.window.ms)
SAMPLES = 2            # MetricConfig's default number of samples (metrics.num.samples)
NAN = math.nan


@dataclass(frozen=True, slots=True)
class Sample:
    """One batch's figures for one series: when, how many records (and bytes), and the timed ones'
    min / max / sum of a duration in ms."""

    at: float
    records: int
    bytes: int
    timed: int
    low: float
    high: float
    total: float


class Window:
    """The samples of one series within MM2's window, and the last value (MM2's ``Value`` stat,
    which never expires)."""

    __slots__ = ("_samples", "clock", "last")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._samples: deque[Sample] = deque()
        self.last = NAN
        self.clock = clock

    def add(self, *, records: int, size: int = 0, timed: int = 0, low: float = NAN, high: float = NAN,
            total: float = 0.0) -> None:
        self._samples.append(Sample(self.clock(), records, size, timed, low, high, total))
        if timed:
            self.last = total / timed

    def _current(self) -> list[Sample]:
        horizon = self.clock() - SAMPLES * SAMPLE_SECONDS
        while self._samples and self._samples[0].at < horizon:
            self._samples.popleft()
        return list(self._samples)

    def stats(self) -> tuple[float, float, float]:
        """min, max, avg of the timed records in the window; NaN when it holds none."""
        timed = [s for s in self._current() if s.timed]
        if not timed:
            return NAN, NAN, NAN
        count = sum(s.timed for s in timed)
        return min(s.low for s in timed), max(s.high for s in timed), sum(s.total for s in timed) / count

    def rates(self) -> tuple[float, float]:
        """Records and bytes a second over the window, as Kafka's ``Rate``: what the samples hold over
        the time since the oldest, never less than all but one sample window."""
        current = self._current()
        if not current:
            return 0.0, 0.0
        span = max(self.clock() - current[0].at, (SAMPLES - 1) * SAMPLE_SECONDS)
        return sum(s.records for s in current) / span, sum(s.bytes for s in current) / span
