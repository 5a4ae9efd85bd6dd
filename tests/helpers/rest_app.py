"""The REST app on a fake controller, for unit tests without a running mirrorspark."""
from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry

from mirrorspark.errors import ConfigError
from mirrorspark.rest.app import create_app
from mirrorspark.rest.controller import UnknownFlow
from mirrorspark.rest.security import AllowedHosts, TokenBucket

TOKEN = "s3cret-token-value"
BASE = "http://127.0.0.1:8083"


class FakeController:
    def __init__(self) -> None:
        self.actions: list[str] = []
        self.translations = 0

    def flows(self) -> list[dict[str, Any]]:
        return [{"name": "a->b", "state": "running", "topics": 1, "records_replicated": 5, "records_recopied": 0,
                 "records_lost": 0, "restarts": 0, "lag_offsets": 0, "lag_seconds": 0.0, "last_batch_time": None,
                 "error": None}]

    def flow(self, name: str) -> dict[str, Any]:
        if name != "a->b":
            raise UnknownFlow(f"no flow {name!r}")
        return self.flows()[0]

    def pause(self, name: str) -> dict[str, Any]:
        self.actions.append(f"pause {name}")
        return {"flow": name, "state": "paused"}

    def resume(self, name: str) -> dict[str, Any]:
        raise RuntimeError("boom at /secret/path")

    def restart(self, name: str) -> dict[str, Any]:
        raise ConfigError("a.bootstrap.servers is wrong", "a.bootstrap.servers")

    def translate(self, group: str, source: str, target: str) -> list[dict[str, Any]]:
        self.translations += 1
        return [{"topic": "a.t", "partition": 0, "offset": 7}]

    def config(self) -> dict[str, Any]:
        return {"top_level": {"x": "y"}}


def client(token: str | None = TOKEN, hosts: AllowedHosts | None = None, limit: TokenBucket | None = None,
           base_url: str = BASE) -> tuple[TestClient, FakeController]:
    controller = FakeController()
    app = create_app(controller, CollectorRegistry(), token, hosts, limit)
    return TestClient(app, base_url=base_url, raise_server_exceptions=False), controller


AUTH = {"Authorization": f"Bearer {TOKEN}"}
