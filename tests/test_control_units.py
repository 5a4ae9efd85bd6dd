"""Units of the control side that need no broker: the scheduler's lanes, dropping stale series,
forgetting vanished groups."""
from __future__ import annotations

import threading
import time

from mirrorspark.control.scheduler import HEARTBEATS, Scheduler
from mirrorspark.metrics.flow_metrics import FlowMetrics
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.offsets.checkpoint_store import CheckpointStore
from mirrorspark.offsets.formats import Checkpoint


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


def test_series_of_topics_that_left_the_flow_are_removed():
    metrics = MirrorMetrics()
    figures = FlowMetrics(metrics, "A", "B")
    other = FlowMetrics(metrics, "C", "B")
    stats = "A.kept\t0\t5\t50\t1\t2\t3\t1\t2\t3\t1\nA.gone\t0\t5\t50\t1\t2\t3\t1\t2\t3\t1\n"
    figures.batch_written(stats, {})
    other.batch_written("C.gone\t0\t5\t50\t1\t2\t3\t1\t2\t3\t1\n", {})
    metrics.lag_offsets.labels(source="A", target="B", topic="gone", partition="0").set(3)
    removed = figures.forget_topics({"A.kept"}, {"kept"})
    text = "\n".join(f"{s.name}{s.labels}" for m in metrics.registry.collect() for s in m.samples)
    assert removed > 0 and "A.gone" not in text and "'gone'" not in text
    assert "A.kept" in text and "C.gone" in text  # another flow's series are its own
    assert [p["topic"] for p in figures.snapshot()["partitions"]] == ["A.kept"]


def test_checkpoint_store_forgets_groups_that_vanished():
    store = CheckpointStore()
    for group in ("alive", "gone"):
        store.put(Checkpoint(group, "A.t", 0, 5, 5))
    assert store.retain({"alive", "new"}) == 1
    assert store.groups() == {"alive"}
