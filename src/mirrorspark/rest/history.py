"""The last hour of each flow, for the status page's charts: a sample every ``SAMPLE_SECONDS`` of what
``Controller.flows()`` says (memory only, no cluster read), kept in a ring buffer per flow.

The sampler is a daemon thread of its own, started and stopped with the REST server: a page request
only reads the buffers, so it costs a batch nothing, and a sampling error is logged once per kind
and never leaves the thread (the flows go on whatever the page does).
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

log = logging.getLogger(__name__)

SAMPLE_SECONDS = 10.0
KEEP_SECONDS = 3600.0


@dataclass(frozen=True)
class Sample:
    at: float  # epoch seconds
    records: int  # replicated since the flow started in this process
    lag_records: int
    lag_seconds: float
    lost: int
    recopied: int


def rates(samples: list[Sample]) -> list[tuple[float, float]]:
    """(time, records a second) between consecutive samples; a counter that went back (the flow was
    taken over and started again) counts as 0, not as a negative rate."""
    return [(b.at, max(0, b.records - a.records) / (b.at - a.at))
            for a, b in pairwise(samples) if b.at > a.at]


class History:
    """Samples per flow name, at most ``keep`` seconds' worth."""

    def __init__(self, *, flows: Callable[[], list[dict[str, Any]]], every: float = SAMPLE_SECONDS,
                 keep: float = KEEP_SECONDS, clock: Callable[[], float] = time.time) -> None:
        self.flows = flows
        self.every = every
        self.clock = clock
        self._size = int(keep / every) + 1
        self._samples: dict[str, deque[Sample]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._logged: set[str] = set()

    def sample(self) -> None:
        """One sample of every flow; never raises (logged once per kind of error)."""
        try:
            rows = self.flows()
            now = self.clock()
            taken = {row["name"]: Sample(now, int(row.get("records_replicated") or 0),
                                         int(row.get("lag_offsets") or 0), float(row.get("lag_seconds") or 0.0),
                                         int(row.get("records_lost") or 0), int(row.get("records_recopied") or 0))
                     for row in rows}
        except Exception as exc:  # noqa: BLE001 - the page's history must never stop or slow a flow
            kind = type(exc).__name__
            if kind not in self._logged:
                self._logged.add(kind)
                log.warning("status page: sampling the flows failed (%s: %s); logged once, sampling goes on",
                            kind, exc)
            return
        with self._lock:
            for name in set(self._samples) - set(taken):  # no longer a flow of this process
                del self._samples[name]
            for name, sample in taken.items():
                self._samples.setdefault(name, deque(maxlen=self._size)).append(sample)

    def series(self, name: str) -> list[Sample]:
        with self._lock:
            return list(self._samples.get(name, ()))

    def _run(self) -> None:
        self.sample()
        while not self._stop.wait(self.every):
            self.sample()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="mirrorspark-status-history", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.every)
