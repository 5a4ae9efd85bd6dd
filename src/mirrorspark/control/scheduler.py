"""A single background thread running periodic control tasks (config sync, later ACLs and
checkpoints), like the Scheduler each MM2 connector owns. A failing run is logged and retried at
the next interval; it never stops replication."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass
class _Task:
    name: str
    interval: float
    action: Callable[[], object]
    next_run: float


class Scheduler:
    def __init__(self) -> None:
        self._tasks: list[_Task] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def every(self, name: str, interval_seconds: float, action: Callable[[], object], initial_delay: float = 0.0) -> None:
        """Run ``action`` now (after ``initial_delay``) and then every ``interval_seconds``."""
        if interval_seconds <= 0 or interval_seconds == float("inf"):
            return
        self._tasks.append(_Task(name, interval_seconds, action, time.monotonic() + initial_delay))

    def start(self) -> None:
        if self._tasks and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="mirrorspark-control", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            for task in self._tasks:
                if now >= task.next_run:
                    started = time.monotonic()
                    try:
                        task.action()
                    except Exception as exc:  # noqa: BLE001 - logged, retried next interval
                        log.warning("%s failed: %s", task.name, exc)
                    took = time.monotonic() - started
                    if took > max(5.0, task.interval):
                        log.warning("%s took %.1f s, delaying the other control tasks", task.name, took)
                    task.next_run = time.monotonic() + task.interval
            wait = min(t.next_run for t in self._tasks) - time.monotonic()
            self._stop.wait(max(0.05, min(wait, 1.0)))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
