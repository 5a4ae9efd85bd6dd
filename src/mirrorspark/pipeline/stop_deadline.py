"""A stop that cannot hang: once asked, the process is gone within ``mirrorspark.shutdown.timeout.ms``.

A stop ends each flow's running batch, flushes its offset syncs and leaves its lease group, in that
order. When a cluster does not answer, any of these can wait far longer than an orchestrator grants
(a batch's sends to a target that is down, a group leave, Spark's own stop). Exiting past the
deadline is safe by design: every path of the product is built to survive ``kill -9`` (ADR 0005), so
the next start resumes from the flows' state and nothing is lost. The exit says which step was still
running, so a slow stop is visible rather than silent.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

EXIT_CODE = 143  # 128 + SIGTERM: what a shell reports for a process a SIGTERM ended


class StopDeadline:
    """Arm once a stop is asked; disarm when the stop is done. In between, a daemon thread waits
    ``seconds`` and then ends the process, naming ``step()`` (what the stop was still doing)."""

    def __init__(self, *, seconds: float, step: Callable[[], str],
                 exit_now: Callable[[int], None] = os._exit) -> None:
        self.seconds = seconds
        self._step = step
        self._exit = exit_now
        self._done = threading.Event()
        self._armed = False
        self._lock = threading.Lock()

    def arm(self) -> None:
        """Start the countdown (once: later calls keep the first deadline)."""
        with self._lock:
            if self._armed:
                return
            self._armed = True
        threading.Thread(target=self._wait, name="mirrorspark-stop-deadline", daemon=True).start()

    def expire_now(self, why: str) -> None:
        """Exit at once (a second stop signal: the operator does not want to wait)."""
        self._expire(why)

    def disarm(self) -> None:
        """The stop finished in time."""
        self._done.set()

    def _wait(self) -> None:
        if not self._done.wait(self.seconds):
            self._expire(f"the stop did not finish within {self.seconds:g} s (mirrorspark.shutdown.timeout.ms)")

    def _expire(self, why: str) -> None:
        if self._done.is_set():
            return
        log.error("%s; still stopping: %s. Exiting now: as after kill -9, nothing is lost and the next start "
                  "resumes from the flows' state", why, self._step())
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stderr.flush()
        self._exit(EXIT_CODE)
