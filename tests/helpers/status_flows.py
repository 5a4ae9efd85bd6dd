"""A controller with the three kinds of flow the status page shows: a writer running, a writer that
cannot start (degraded, its error quoting a client's message with markup and a secret), and a standby;
and an hour of samples for the running one."""
from __future__ import annotations

from typing import Any

from mirrorspark.rest.controller import UnknownFlow
from mirrorspark.rest.history import SAMPLE_SECONDS, History

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z: the page's clock in unit tests
SECRET = "pl41n-pw-0f-the-source"
ERROR = (f"retrying since 2025-12-31T23:50:00Z (4 attempts to start it; nothing is skipped): "
         f"SaslAuthenticationException: <script>alert('x')</script> login with sasl.jaas.config "
         f'password="{SECRET}" failed & refused')
COMMON = {"restart_attempts": 0, "restarts": 0, "bytes_replicated": 0, "batches_written": 0,
          "lag_measured_at": None, "topics": 1}


def running(now: float) -> dict[str, Any]:
    return {**COMMON, "name": "primary->backup", "source": "primary", "target": "backup", "role": "writer",
            "state": "running", "error": None, "records_lost": 7, "records_replicated": 123_456,
            "records_recopied": 3, "last_batch_time": now - 2, "lag_offsets": 42, "lag_seconds": 1.5,
            "lag_topics": [{"topic": "orders", "records": 40, "seconds": 1.5},
                           {"topic": "payments<b>", "records": 2, "seconds": 0.2}],
            "checkpoints": {"enabled": True, "checked_at": now - 5, "topic": "primary.checkpoints.internal",
                            "emitted_at": now - 20, "groups": 2, "not_judged": 0, "verdicts": [
                                {"group": "billing", "safe": True, "reasons": [
                                    {"ok": True, "text": "checkpoints: 2 partition(s), matching the group's commits"},
                                    {"ok": True, "text": "lag on primary: 0 record(s) not consumed yet"}]},
                                {"group": "reports", "safe": False, "reasons": [
                                    {"ok": True, "text": "checkpoints: 1 partition(s), matching the group's commits"},
                                    {"ok": False, "text": "lag on primary: 40 record(s) not consumed yet, 40 of "
                                                          "them not replicated yet (they would be left behind)"}]},
                            ]}}


def degraded(now: float) -> dict[str, Any]:
    return {**COMMON, "name": "backup->primary", "source": "backup", "target": "primary", "role": "writer",
            "state": "degraded", "error": ERROR, "standby_since": now - 600, "lease_group": "g",
            "records_lost": 0, "records_replicated": 0, "records_recopied": 0, "last_batch_time": None,
            "lag_offsets": 0, "lag_seconds": 0.0, "topics": 0, "lag_topics": [], "checkpoints": None,
            "writing": False}


def standby(now: float) -> dict[str, Any]:
    return {**COMMON, "name": "primary->dr", "source": "primary", "target": "dr", "role": "standby",
            "state": "standby", "error": "another instance writes this flow; this one takes over when it stops",
            "standby_since": now - 900, "lease_group": "g2", "records_lost": 0, "records_replicated": 0,
            "records_recopied": 0, "last_batch_time": None, "lag_offsets": 0, "lag_seconds": 0.0, "topics": 0,
            "lag_topics": [], "checkpoints": None}


class StatusController:
    """The ``Controller`` protocol over the three flows; ``fail`` makes ``status()`` raise."""

    def __init__(self, now: float = NOW) -> None:
        self.now = now
        self.fail: Exception | None = None
        self.status_calls = 0

    def status(self) -> list[dict[str, Any]]:
        self.status_calls += 1
        if self.fail is not None:
            raise self.fail
        return [running(self.now), degraded(self.now), standby(self.now)]

    def flows(self) -> list[dict[str, Any]]:
        return [{k: v for k, v in row.items() if k not in ("lag_topics", "checkpoints")}
                for row in self.status()]

    def flow(self, name: str) -> dict[str, Any]:
        for row in self.flows():
            if row["name"] == name:
                return row
        raise UnknownFlow(f"no flow {name!r}")

    def pause(self, name: str) -> dict[str, Any]:
        return {"flow": name, "state": "paused"}

    def resume(self, name: str) -> dict[str, Any]:
        return {"flow": name, "state": "running"}

    def restart(self, name: str) -> dict[str, Any]:
        return {"flow": name, "state": "restarting"}

    def translate(self, group: str, source: str, target: str) -> list[dict[str, Any]]:
        return []

    def config(self) -> dict[str, Any]:
        return {}


def hour_of_samples(controller: StatusController, now: float) -> History:
    """A history holding the last hour: the running flow copying a rising number of records a second
    with its lag in seconds going up and down."""
    clock = [now - 3600.0]
    history = History(flows=controller.flows, clock=lambda: clock[0])
    records = 0
    base = controller.status
    for step in range(int(3600 / SAMPLE_SECONDS) + 1):
        records += 100 + 5 * step
        rows = base()
        rows[0] = {**rows[0], "records_replicated": records, "lag_seconds": float(step % 30)}
        controller.status = lambda rows=rows: rows  # type: ignore[method-assign]
        history.sample()
        clock[0] += SAMPLE_SECONDS
    controller.status = base  # type: ignore[method-assign]
    return history
