"""A writer that loses its flow's lease: /metrics says standby no later than REST does."""
from __future__ import annotations

from types import SimpleNamespace

from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.pipeline.flow import Flow
from mirrorspark.pipeline.flow_assembly import FlowContext


def _gauge(metrics: MirrorMetrics, state: str) -> float | None:
    return metrics.registry.get_sample_value("mirrorspark_flow_state",
                                             {"source": "a", "target": "b", "role": "standby", "state": state})


def test_the_standby_gauge_is_set_before_the_role_changes_and_before_the_slow_query_stop():
    metrics = MirrorMetrics()
    scheduler = SimpleNamespace(cancel=lambda lanes: None)
    flow = SimpleNamespace(name="a->b", source=SimpleNamespace(alias="a"), target=SimpleNamespace(alias="b"),
                           options=SimpleNamespace(lease_enabled=False))
    shared = SimpleNamespace(metrics=metrics, scheduler=scheduler)
    seat = Flow(context=FlowContext(config=flow, policy=None, shared=shared, instance="me"))  # type: ignore[arg-type]
    # held by another member now: what REST shows as a standby
    seat.lease = SimpleNamespace(group="g", late_writes=lambda: None)
    seen: list[tuple[float | None, bool]] = []

    def stop(commit_timeout: float) -> None:  # a fenced query can take seconds to stop
        seen.append((_gauge(metrics, "standby"), seat.standby() is not None))

    query = SimpleNamespace(stop=stop, metrics=None)
    seat.parts = SimpleNamespace(query=query, probe=SimpleNamespace(close=lambda: None),
                                     offsets=SimpleNamespace(close=lambda: None))
    assert seat.standby() is None and _gauge(metrics, "standby") is None
    seat.leave()
    assert seen == [(1.0, True)]
    assert _gauge(metrics, "standby") == 1.0 and _gauge(metrics, "running") == 0.0
