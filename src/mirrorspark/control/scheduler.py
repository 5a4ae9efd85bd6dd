"""Background threads running periodic control tasks, like the Scheduler each MM2 connector owns.

Tasks run on named lanes, one thread each: heartbeats (every second) get a lane per target cluster, and
each flow two (``flow_lane``): its topics (refresh, config and ACL sync) and its offsets
(checkpoints, group sync, lag). A slow admin call against one cluster then delays neither the
heartbeats, nor another flow, nor the same flow's checkpoints. A failing run is logged with its
traceback and retried at the next interval; it never stops replication.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import KafkaException

from mirrorspark.errors import ClusterFailure

log = logging.getLogger(__name__)

# A cluster's own failures (unreachable, no answer in time, a write not acknowledged) say all in their
# message; their stack is the client library's or the wait's, so no traceback is logged for them.
CLUSTER_ERRORS = (KafkaException, ClusterFailure, TimeoutError)

CONTROL = "control"
HEARTBEATS = "heartbeats"
TOPICS = "topics"
OFFSETS = "offsets"


def flow_lane(flow: str, part: str) -> str:
    """The lane of one flow's ``part`` (TOPICS or OFFSETS)."""
    return f"{flow} {part}"


@dataclass
class _Task:
    name: str
    interval: float
    action: Callable[[], object]
    next_run: float
    failures: int = 0  # in a row


@dataclass
class _Lane:
    name: str
    tasks: list[_Task]
    cancelled: bool = False


class Scheduler:
    """Lanes may be added after ``start`` (a flow taken over from another instance) and cancelled
    (a flow handed to another instance): a cancelled lane's thread ends after its current task."""

    def __init__(self) -> None:
        self._lanes: dict[str, _Lane] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = False
        self._guard = threading.Lock()

    def every(self, name: str, interval_seconds: float, action: Callable[[], object], initial_delay: float = 0.0,
              lane: str = CONTROL) -> None:
        """Run ``action`` now (after ``initial_delay``) and then every ``interval_seconds`` on ``lane``."""
        if interval_seconds <= 0 or interval_seconds == float("inf"):
            return
        task = _Task(name, interval_seconds, action, time.monotonic() + initial_delay)
        with self._guard:
            found = self._lanes.get(lane)
            if found is not None:
                found.tasks.append(task)
                return
            found = self._lanes[lane] = _Lane(lane, [task])
            if self._started:
                self._spawn(found)

    def start(self) -> None:
        with self._guard:
            if self._started:
                return
            self._started = True
            for lane in self._lanes.values():
                self._spawn(lane)

    def cancel(self, lanes: list[str]) -> None:
        """Stop running the tasks of ``lanes``; adding to one of them later makes a new lane."""
        with self._guard:
            for name in lanes:
                lane = self._lanes.pop(name, None)
                if lane is not None:
                    lane.cancelled = True

    def _spawn(self, lane: _Lane) -> None:
        thread = threading.Thread(target=self._loop, args=(lane,), name=f"mirrorspark-{lane.name}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def _loop(self, lane: _Lane) -> None:
        while not self._stop.is_set() and not lane.cancelled:
            now = time.monotonic()
            for task in list(lane.tasks):
                if lane.cancelled:
                    return
                if now >= task.next_run:
                    self._run(task)
                    task.next_run = time.monotonic() + task.interval
            wait = min((t.next_run for t in lane.tasks), default=now + 1.0) - time.monotonic()
            self._stop.wait(max(0.05, min(wait, 1.0)))

    @staticmethod
    def _run(task: _Task) -> None:
        started = time.monotonic()
        try:
            task.action()
        except Exception as exc:  # logged, retried next interval
            task.failures += 1
            # The first failure of a streak carries the traceback; the repeats (a heartbeat every second
            # while a cluster is down) one line each. A cluster's own error (unreachable, a timeout) says all
            # in its message: no traceback for it, whose stack is the client library's.
            log.warning("%s failed: %s%s", task.name, str(exc) or f"{type(exc).__name__} (no answer in time)",
                        f" ({task.failures} times in a row)" if task.failures > 1 else "",
                        exc_info=task.failures == 1 and not isinstance(exc, CLUSTER_ERRORS))
        else:
            if task.failures:
                log.info("%s works again after %d failure(s)", task.name, task.failures)
            task.failures = 0
        took = time.monotonic() - started
        if took > max(5.0, task.interval):
            log.warning("%s took %.1f s, delaying the other tasks of its thread", task.name, took)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)


class GatedScheduler:
    """One flow's view of the scheduler: its tasks run only while ``allowed()`` is true (the flow's
    lease), so a writer that lost the flow emits no checkpoint or config change in the moment before
    its lanes are cancelled."""

    def __init__(self, scheduler: Scheduler, allowed: Callable[[], bool]) -> None:
        self.scheduler = scheduler
        self.allowed = allowed

    def every(self, name: str, interval_seconds: float, action: Callable[[], object], initial_delay: float = 0.0,
              lane: str = CONTROL) -> None:
        def gated() -> object:
            return action() if self.allowed() else None

        self.scheduler.every(name, interval_seconds, gated, initial_delay, lane)
