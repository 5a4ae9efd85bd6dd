"""Pause, resume and restart of one flow's query, from the REST threads and the supervisor at once."""
from __future__ import annotations

import contextlib
import threading
import time
from types import SimpleNamespace

import pytest

from mirrorspark.errors import Conflict
from mirrorspark.pipeline.flow_query import FlowQuery


class Recorded(FlowQuery):
    """A FlowQuery whose query start and stop are recorded instead of run; stop can be held."""

    def __init__(self) -> None:  # only what the lifecycle methods touch
        self.flow = SimpleNamespace(name="a->b")
        self.metrics = None
        self.query = None
        self.paused = self.restarting = False
        self._lifecycle = threading.RLock()
        self.events: list[str] = []
        self.running = 0
        self.overlap = False
        self.hold = threading.Event()
        self.hold.set()

    def start(self, spark) -> None:
        self.running += 1
        self.overlap |= self.running > 1
        self.events.append("start")

    def stop(self, commit_timeout: float = 60.0) -> None:
        self.hold.wait(5)
        self.running = max(0, self.running - 1)
        self.events.append("stop")


def test_a_pause_during_an_automatic_restart_is_kept():
    flow = Recorded()
    flow.start("spark")
    flow.hold.clear()  # the restart's stop waits for the batch in flight
    restart = threading.Thread(target=flow.restart, args=("spark",))
    restart.start()
    time.sleep(0.05)
    pause = threading.Thread(target=flow.pause)
    pause.start()  # the user pauses while the restart is under way
    time.sleep(0.05)
    flow.hold.set()
    restart.join(5)
    pause.join(5)
    assert flow.paused and flow.state() == "paused"
    assert flow.running == 0 and not flow.overlap, flow.events


def test_an_automatic_restart_after_a_pause_does_not_resume_it():
    flow = Recorded()
    flow.start("spark")
    flow.pause()
    flow.restart("spark")
    assert flow.paused and flow.events == ["start", "stop", "stop"]
    flow.restart("spark", unpause=True)  # the user's restart does
    assert not flow.paused and flow.events[-1] == "start" and flow.running == 1


def test_two_resumes_start_once():
    flow = Recorded()
    flow.start("spark")
    flow.pause()
    threads = [threading.Thread(target=lambda: _quiet(flow.resume, "spark")) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert flow.events.count("start") == 2 and flow.running == 1 and not flow.overlap
    with pytest.raises(Conflict, match="not paused"):
        flow.resume("spark")


def _quiet(call, *args) -> None:
    with contextlib.suppress(Conflict):
        call(*args)


def test_a_batch_asking_for_a_restart_is_restarted_at_once_and_not_counted_as_a_failure(tmp_path):
    """A remote topic that went back: the batch refuses to write and the flow restarts at once (the
    restart re-creates and refills the topic). Only when that keeps happening do restarts count as
    failures, with their backoff."""
    from mirrorspark.integrity.loss import LossLog
    from mirrorspark.metrics.registry import MirrorMetrics
    from mirrorspark.pipeline.supervision import QUICK_RESTARTS, FlowSupervisor
    from mirrorspark.state.files import LocalFiles

    class Query:
        flow = SimpleNamespace(name="a->b", source=SimpleNamespace(alias="a"), target=SimpleNamespace(alias="b"),
                               options=SimpleNamespace(restart_attempts=3, restart_backoff=1.0))
        batches_written, paused, restarting, loss_stop, metrics = 0, False, False, None, None

        def __init__(self) -> None:
            self.query = SimpleNamespace(isActive=False)
            self.reason: str | None = "remote partition(s) went back"
            self.restarts = 0

        def take_restart_reason(self):
            reason, self.reason = self.reason, None
            return reason

        def restart(self, spark, unpause=False):
            self.restarts += 1
            self.query = SimpleNamespace(isActive=False)
            self.reason = "remote partition(s) went back"  # the restart did not repair it

        def state(self):
            return "running"

        def error(self):
            return "remote partition(s) went back"

    query = Query()
    supervisor = FlowSupervisor(query=query, loss=LossLog(LocalFiles(tmp_path), "a->b"), metrics=MirrorMetrics())  # type: ignore[arg-type]
    for _ in range(QUICK_RESTARTS):
        supervisor.poll(None)
    assert query.restarts == QUICK_RESTARTS and supervisor.attempts == 0 and supervisor.restart_at is None
    supervisor.poll(None)
    assert query.restarts == QUICK_RESTARTS and supervisor.attempts == 1 and supervisor.restart_at is not None
