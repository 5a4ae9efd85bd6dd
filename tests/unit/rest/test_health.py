"""/health and /ready tell the flows' truth, without a token: liveness fails only on a flow that failed
for good, readiness waits for every flow to run (or be paused) and takes a healthy standby as ready."""
from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from helpers.rest_app import BASE, TOKEN, FakeController
from prometheus_client import CollectorRegistry

from mirrorspark.rest.app import create_app


class Flows(FakeController):
    def __init__(self, *states: tuple[str, str]) -> None:
        super().__init__()
        self.states = states

    def flows(self) -> list[dict[str, Any]]:
        return [{"name": f"f{i}", "role": role, "state": state} for i, (role, state) in enumerate(self.states)]


def answer(controller: Flows, path: str) -> tuple[int, dict]:
    api = TestClient(create_app(controller, CollectorRegistry(), TOKEN), base_url=BASE)
    got = api.get(path)  # no token: both are open, like /metrics
    return got.status_code, got.json()


@pytest.mark.parametrize(("states", "ready", "live"), [
    ((("writer", "running"), ("standby", "standby")), 200, 200),
    ((("writer", "paused"),), 200, 200),  # an operator's pause: still reachable through its Service
    ((("writer", "starting"),), 503, 200),
    ((("writer", "degraded"), ("standby", "standby")), 503, 200),  # retrying a cluster: up, not ready
    ((("writer", "restarting"),), 503, 200),
    ((("writer", "running"), ("writer", "failed")), 503, 503),
    ((), 200, 200),  # heartbeats only
])
def test_ready_and_health_follow_the_flows(states, ready, live):
    code, body = answer(Flows(*states), "/ready")
    assert code == ready, body
    if code == 503:
        assert body["status"] == "not ready" and all(state not in ("running", "standby", "paused")
                                                    for state in body["flows"].values())
    code, body = answer(Flows(*states), "/health")
    assert code == live, body
    if code == 503:
        assert body == {"status": "failed", "failed": ["f1"]}
