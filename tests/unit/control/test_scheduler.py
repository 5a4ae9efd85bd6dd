"""The control-plane scheduler: its lanes and its failing tasks."""
from __future__ import annotations

import threading
import time

from mirrorspark.control.scheduler import HEARTBEATS, Scheduler


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


def test_a_failing_task_is_logged_with_its_traceback_at_debug(caplog):
    caplog.set_level("DEBUG", logger="mirrorspark.control.scheduler")
    scheduler = Scheduler()
    scheduler.every("broken task", 60, lambda: 1 / 0)
    scheduler.start()
    time.sleep(0.3)
    scheduler.stop()
    assert "broken task failed: division by zero" in caplog.text and "Traceback" in caplog.text
