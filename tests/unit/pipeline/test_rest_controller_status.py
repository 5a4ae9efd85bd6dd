"""``ReplicatorController.status()``: the status page's view of real ``Flow`` objects (a writer with
small fake parts, a standby, a writer whose start is retried), from memory, the verdicts from the
background cache."""
from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from mirrorspark.metrics.lag import PartitionLag
from mirrorspark.pipeline.flow import Flow
from mirrorspark.pipeline.flow_assembly import FlowContext
from mirrorspark.pipeline.rest_controller import ReplicatorController


def flow(name: str, *, parts: Any = None, lease_group: str | None = None, failure: str | None = None) -> Flow:
    source, target = name.split("->")
    config = SimpleNamespace(name=name, source=SimpleNamespace(alias=source), target=SimpleNamespace(alias=target),
                             options=SimpleNamespace(lease_enabled=False, checkpoints_interval=60.0))
    made = Flow(context=FlowContext(config=config, policy=None, shared=SimpleNamespace(), instance="me"))  # type: ignore[arg-type]
    made.parts = parts
    if lease_group is not None:
        made.lease = SimpleNamespace(group=lease_group)  # type: ignore[assignment]
    if failure is not None:
        made.last_failure, made.failing_since, made.failed_takes = failure, 0.0, 3
    return made


def writer_parts() -> Any:
    lags = [PartitionLag("orders", 0, 100, 90, 10, 2.0), PartitionLag("orders", 1, 50, 45, 5, 4.5),
            PartitionLag("events", 0, 7, 7, 0, 0.0)]
    return SimpleNamespace(
        query=SimpleNamespace(metrics=None, remote_topics=SimpleNamespace(plan=SimpleNamespace(
            remote={"orders": "a.orders", "events": "a.events"}))),
        supervisor=SimpleNamespace(state=lambda: "running", healthy=lambda: True, reason=lambda: None, attempts=0,
                                   restarts=0,
                                   loss=SimpleNamespace(total=lambda: 0, reports=[])),
        probe=SimpleNamespace(latest=lags, measured_at=1.0),
        offsets=SimpleNamespace(checkpoints=None))


def test_status_lists_writers_first_with_lag_per_topic_and_checkpoints_from_the_cache():
    flows = [flow("b->a", lease_group="g"), flow("c->a", failure="cannot reach cluster 'c'"),
             flow("a->b", parts=writer_parts())]
    replicator: Any = SimpleNamespace(flows={f.name: f for f in flows}, spark=None, config=None)
    controller = ReplicatorController(replicator)
    rows = controller.status()
    assert [(r["name"], r["role"], r["state"]) for r in rows] == [
        ("a->b", "writer", "running"), ("b->a", "standby", "standby"), ("c->a", "writer", "degraded")]
    assert rows[0]["lag_topics"] == [{"topic": "events", "records": 0, "seconds": 0.0},
                                     {"topic": "orders", "records": 15, "seconds": 4.5}]
    assert rows[0]["checkpoints"] is None and rows[1]["checkpoints"] is None  # first call: not read yet
    assert [r["writing"] for r in rows] == [True, False, False]
    deadline = time.monotonic() + 5
    while controller.status()[0]["checkpoints"] is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert controller.status()[0]["checkpoints"]["enabled"] is False  # this flow emits no checkpoints
