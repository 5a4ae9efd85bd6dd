"""The control-plane scheduler: its lanes and its failing tasks."""
from __future__ import annotations

import itertools
import threading
import time

from mirrorspark.control.scheduler import HEARTBEATS, OFFSETS, TOPICS, Scheduler, _Task, flow_lane


def test_a_slow_control_task_does_not_delay_heartbeats():
    beats: list[float] = []
    release = threading.Event()
    scheduler = Scheduler()
    scheduler.every("slow admin task", 60, lambda: release.wait(5))
    scheduler.every("heartbeats", 0.1, lambda: beats.append(time.monotonic()), lane=HEARTBEATS)
    scheduler.start()
    try:
        time.sleep(1.0)
    finally:
        release.set()
        scheduler.stop()
    assert len(beats) >= 5  # while the slow task held its own thread


def test_a_failing_task_is_logged_with_its_traceback(caplog):
    caplog.set_level("DEBUG", logger="mirrorspark.control.scheduler")
    scheduler = Scheduler()
    scheduler.every("broken task", 60, lambda: 1 / 0)
    scheduler.start()
    time.sleep(0.3)
    scheduler.stop()
    assert "broken task failed: division by zero" in caplog.text and "Traceback" in caplog.text


def runs_of(scheduler: Scheduler, name: str, interval: float, count: int, **kwargs) -> tuple[list, threading.Event]:
    """Register a task that records (monotonic time, thread name) per run; the event is set after ``count`` runs."""
    runs: list[tuple[float, str]] = []
    enough = threading.Event()

    def action() -> None:
        runs.append((time.monotonic(), threading.current_thread().name))
        if len(runs) >= count:
            enough.set()
    scheduler.every(name, interval, action, **kwargs)
    return runs, enough


def test_a_task_runs_at_once_then_every_interval():
    scheduler = Scheduler()
    registered = time.monotonic()
    runs, enough = runs_of(scheduler, "t", 0.15, 4)
    scheduler.start()
    try:
        assert enough.wait(5), runs
    finally:
        scheduler.stop()
    starts = [t for t, _ in runs]
    assert starts[0] - registered < 0.5  # no initial delay: the first run does not wait an interval
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert all(gap >= 0.15 for gap in gaps), gaps  # the next run is an interval after the previous one ended
    assert all(gap < 1.5 for gap in gaps), gaps


def test_initial_delay_holds_back_only_the_first_run():
    scheduler = Scheduler()
    registered = time.monotonic()
    delayed, delayed_twice = runs_of(scheduler, "delayed", 0.1, 2, initial_delay=0.6)
    prompt, prompt_ran = runs_of(scheduler, "prompt", 60, 1)
    scheduler.start()
    try:
        assert prompt_ran.wait(5) and delayed_twice.wait(5)
    finally:
        scheduler.stop()
    assert prompt[0][0] - registered < 0.5
    assert delayed[0][0] >= registered + 0.6 > prompt[0][0]
    assert delayed[1][0] - delayed[0][0] >= 0.1


def test_each_lane_has_one_thread_shared_by_its_tasks():
    scheduler = Scheduler()
    first, first_ran = runs_of(scheduler, "first", 60, 1)
    second, second_ran = runs_of(scheduler, "second", 60, 1)
    beats, beat = runs_of(scheduler, "heartbeats", 60, 1, lane=HEARTBEATS)
    scheduler.start()
    try:
        assert first_ran.wait(5) and second_ran.wait(5) and beat.wait(5)
    finally:
        scheduler.stop()
    assert first[0][1] == second[0][1] == "mirrorspark-control"
    assert beats[0][1] == "mirrorspark-heartbeats"


def test_an_interval_of_zero_or_infinity_switches_a_task_off():
    called: list[str] = []
    before = set(threading.enumerate())
    scheduler = Scheduler()
    scheduler.every("zero", 0, lambda: called.append("zero"))
    scheduler.every("negative", -1, lambda: called.append("negative"))
    scheduler.every("never", float("inf"), lambda: called.append("never"))
    scheduler.start()
    time.sleep(0.2)
    scheduler.stop()
    assert called == []
    assert set(threading.enumerate()) <= before  # no lane, no thread


def test_a_failing_task_is_retried_and_does_not_stop_the_others_of_its_lane(caplog):
    failures: list[float] = []

    def broken() -> None:
        failures.append(time.monotonic())
        raise RuntimeError("cluster unreachable")
    scheduler = Scheduler()
    scheduler.every("broken", 0.1, broken)
    runs, enough = runs_of(scheduler, "healthy", 0.1, 4)
    scheduler.start()
    try:
        assert enough.wait(5), runs
    finally:
        scheduler.stop()
    assert len(failures) >= 2  # retried at its next interval
    assert caplog.text.count("broken failed: cluster unreachable") == len(failures)


def test_stop_ends_the_threads_and_no_task_runs_after_it():
    before = set(threading.enumerate())
    scheduler = Scheduler()
    runs, ran = runs_of(scheduler, "t", 0.05, 1)
    beats, beat = runs_of(scheduler, "beat", 60, 1, lane=HEARTBEATS)  # its lane then waits its longest (1 s)
    scheduler.start()
    scheduler.start()  # a second start starts nothing more
    assert ran.wait(5) and beat.wait(5)
    time.sleep(0.1)  # both lanes back in their wait
    lanes = [t for t in threading.enumerate() if t not in before]
    assert sorted(t.name for t in lanes) == ["mirrorspark-control", "mirrorspark-heartbeats"]
    started = time.monotonic()
    scheduler.stop()
    assert time.monotonic() - started < 0.5  # the lanes wake from their wait at once
    assert not any(t.is_alive() for t in lanes)
    done = len(runs) + len(beats)
    time.sleep(0.2)
    assert len(runs) + len(beats) == done


def test_a_failure_streak_logs_one_traceback_then_one_line_per_repeat_and_the_recovery(caplog):
    caplog.set_level("INFO", logger="mirrorspark.control.scheduler")
    outcomes = iter([ValueError("down"), ValueError("down"), ValueError("down"), None, ValueError("down")])

    def flaky() -> None:
        outcome = next(outcomes, None)
        if outcome is not None:
            raise outcome
    task = _Task("heartbeats", 1.0, flaky, 0.0)
    for _ in range(5):
        Scheduler._run(task)
    failed = [r for r in caplog.records if "failed" in r.getMessage()]
    assert [bool(r.exc_info) for r in failed] == [True, False, False, True]  # a new streak: a traceback
    assert [r.getMessage() for r in failed][1:3] == ["heartbeats failed: down (2 times in a row)",
                                                     "heartbeats failed: down (3 times in a row)"]
    assert "heartbeats works again after 3 failure(s)" in caplog.text


def test_a_clusters_own_error_is_one_line_without_a_traceback(caplog):
    """The soak's log: a heartbeat not acknowledged during an outage, a describe that got no answer."""
    from concurrent.futures import Future

    from confluent_kafka import KafkaError, KafkaException

    from mirrorspark.errors import ClusterFailure

    caplog.set_level("INFO", logger="mirrorspark.control.scheduler")

    def unreachable() -> None:
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Broker transport failure"))

    def not_acknowledged() -> None:
        raise ClusterFailure("writing 1 heartbeat a->b to heartbeats failed: 1 not acknowledged within 30 s")

    def no_answer() -> None:
        Future().result(timeout=0.01)
    for name, action, said in (("heartbeats", unreachable, "Broker transport failure"),
                               ("beats", not_acknowledged, "not acknowledged within 30 s"),
                               ("topic config sync", no_answer, "TimeoutError (no answer in time)")):
        Scheduler._run(_Task(name, 1.0, action, 0.0))
        (failed,) = [r for r in caplog.records if r.getMessage().startswith(f"{name} failed")]
        assert not failed.exc_info and said in failed.getMessage()


class _Recording(Scheduler):
    """Records each task's lane and runs nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.lanes: dict[str, str] = {}

    def every(self, name, interval_seconds, action, initial_delay=0.0, lane="control") -> None:
        self.lanes[name] = lane
        super().every(name, interval_seconds, action, initial_delay, lane)


def test_a_slow_sync_of_one_flow_delays_neither_another_flows_checkpoints_nor_its_own():
    """Checkpoints and group sync of a flow run on its offsets lane, apart from every topic task."""
    from types import SimpleNamespace

    from mirrorspark.offsets.flow_offsets import FlowOffsets

    scheduler = _Recording()
    for name in ("a->b", "c->d"):
        options = SimpleNamespace(checkpoints_interval=0.05, group_offsets_interval=60)
        offsets = SimpleNamespace(flow=SimpleNamespace(name=name, options=options),
                                  checkpoints=SimpleNamespace(run_once=lambda _: None),
                                  group_sync=SimpleNamespace(run_once=lambda: None))
        FlowOffsets.schedule(offsets, scheduler)
    assert scheduler.lanes["flow a->b: checkpoints"] == scheduler.lanes["flow a->b: group offset sync"] \
        == flow_lane("a->b", OFFSETS)
    assert scheduler.lanes["flow c->d: checkpoints"] == flow_lane("c->d", OFFSETS) != flow_lane("a->b", OFFSETS)
    release, rounds = threading.Event(), []
    scheduler.every("flow a->b: ACL sync", 60, lambda: release.wait(5), lane=flow_lane("a->b", TOPICS))
    scheduler.every("count", 0.05, lambda: rounds.append(1), lane=flow_lane("c->d", OFFSETS))
    scheduler.start()
    try:
        time.sleep(0.6)
    finally:
        release.set()
        scheduler.stop()
    assert len(rounds) >= 5  # while a->b's ACL sync held its thread


def test_a_lane_added_after_start_runs_and_a_cancelled_one_stops():
    from mirrorspark.control.scheduler import GatedScheduler

    runs: list[str] = []
    allowed = [True]
    scheduler = Scheduler()
    scheduler.every("heartbeats", 0.05, lambda: None, lane=HEARTBEATS)
    scheduler.start()
    try:
        gated = GatedScheduler(scheduler, lambda: allowed[0])
        gated.every("taken-over flow", 0.05, lambda: runs.append("a"), lane=flow_lane("a->b", TOPICS))
        time.sleep(0.5)
        assert runs, "a lane added after start gets a thread"
        allowed[0] = False
        time.sleep(0.2)
        stalled = len(runs)
        time.sleep(0.3)
        assert len(runs) == stalled, "a gated task does not run while its flow's lease is gone"
        scheduler.cancel([flow_lane("a->b", TOPICS)])
        allowed[0] = True
        time.sleep(0.3)
        assert len(runs) == stalled, "a cancelled lane runs nothing more"
        scheduler.every("taken again", 0.05, lambda: runs.append("b"), lane=flow_lane("a->b", TOPICS))
        time.sleep(0.4)
        assert "b" in runs and runs.count("a") == stalled
    finally:
        scheduler.stop()
