"""The REST app's routes over a fake controller (the ``Controller`` protocol): what each route asks the
controller and answers, the error family's status codes, and the metrics. Token, Host and Origin
checks are in test_security.py."""
from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, Counter

from mirrorspark.config.redaction import Redactor, current, install
from mirrorspark.errors import ConfigError, Conflict, NotFound, OperationalError
from mirrorspark.rest.app import create_app
from mirrorspark.rest.controller import Controller, UnknownFlow
from mirrorspark.version import version

TOKEN = "app-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FLOW = {"name": "A->B", "state": "running", "topics": 2, "records_replicated": 10, "records_recopied": 0,
        "records_lost": 0, "restarts": 0, "lag_offsets": 3, "lag_seconds": 1.5, "last_batch_time": 1.0e9,
        "error": None}


class RecordingController:
    """Answers like a replicator with one flow, ``A->B``; records each call; ``fail`` makes the next call raise."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.fail: Exception | None = None

    def _call(self, *call: Any) -> None:
        self.calls.append(call)
        if self.fail is not None:
            raise self.fail
        if len(call) > 1 and call[0] != "translate" and call[1] != "A->B":
            raise UnknownFlow(f"no flow {call[1]!r} in this process")

    def flows(self) -> list[dict[str, Any]]:
        self._call("flows")
        return [FLOW]

    def flow(self, name: str) -> dict[str, Any]:
        self._call("flow", name)
        return {**FLOW, "partitions": [{"topic": "A.t", "partition": 0, "records": 10}]}

    def pause(self, name: str) -> dict[str, Any]:
        self._call("pause", name)
        return {"flow": name, "state": "paused", "internal": "not part of the answer"}

    def resume(self, name: str) -> dict[str, Any]:
        self._call("resume", name)
        return {"flow": name, "state": "running"}

    def restart(self, name: str) -> dict[str, Any]:
        self._call("restart", name)
        return {"flow": name, "state": "restarting"}

    def copy_ends(self, name: str) -> list[dict[str, Any]]:
        self._call("copy_ends", name)
        return [{"topic": "t", "partition": 0, "upstream_end": 10, "downstream_end": 10, "moved_aside_to": None}]

    def move_aside(self, name: str, moves: list) -> list[dict[str, Any]]:
        self._call("move_aside", name, moves)
        return [{"topic": t, "partition": p, "end": end} for t, p, _, end in moves]

    def translate_positions(self, name: str, positions: list) -> list[dict[str, Any]]:
        self._call("translate_positions", name, positions)
        return [{"topic": t, "partition": p, "offset": o, "target_offset": o + 1} for t, p, o in positions]

    def translate(self, group: str, source: str, target: str) -> list[dict[str, Any]]:
        self._call("translate", group, source, target)
        return [{"topic": "A.t", "partition": 0, "offset": 7, "extra": 1}, {"topic": "A.t", "partition": 1,
                                                                            "offset": 0}]

    def config(self) -> dict[str, Any]:
        self._call("config")
        return {"top_level": {"clusters": "A, B"}, "flows": {"A->B": {"topics": ".*"}}}


@pytest.fixture
def controller() -> RecordingController:
    return RecordingController()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def api(controller: RecordingController, registry: CollectorRegistry) -> TestClient:
    typed: Controller = controller  # the fake satisfies the protocol the app is written against
    return TestClient(create_app(typed, registry, TOKEN), base_url="http://127.0.0.1:8083",
                      raise_server_exceptions=False)


def test_health_answers_from_the_flows_states_alone(api, controller):
    answer = api.get("/health")
    assert answer.status_code == 200 and answer.json() == {"status": "ok", "version": version()}
    assert controller.calls == [("flows",)]  # in-memory states, no cluster asked


def test_metrics_are_the_registry_in_prometheus_text(api, registry):
    Counter("mirrorspark_test_records", "Records.", ["flow"], registry=registry).labels(flow="A->B").inc(5)
    answer = api.get("/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    assert 'mirrorspark_test_records_total{flow="A->B"} 5.0' in answer.text


def test_flows_and_one_flow(api, controller):
    assert api.get("/flows", headers=AUTH).json() == [FLOW]
    one = api.get("/flows/A->B", headers=AUTH)
    assert one.status_code == 200 and one.json()["partitions"] == [{"topic": "A.t", "partition": 0, "records": 10}]
    assert controller.calls == [("flows",), ("flow", "A->B")]


@pytest.mark.parametrize("action, state", [("pause", "paused"), ("resume", "running"), ("restart", "restarting")])
def test_flow_actions_name_the_flow_and_answer_its_state(api, controller, action, state):
    answer = api.post(f"/flows/A->B/{action}", headers=AUTH)
    assert answer.status_code == 200 and answer.json() == {"flow": "A->B", "state": state}  # nothing else
    assert controller.calls == [(action, "A->B")]
    assert api.get(f"/flows/A->B/{action}", headers=AUTH).status_code == 405  # actions are POST only


def test_an_unknown_flow_is_404_for_every_flow_route(api):
    for method, path in [("GET", "/flows/x->y"), ("POST", "/flows/x->y/pause"), ("POST", "/flows/x->y/resume"),
                         ("POST", "/flows/x->y/restart")]:
        answer = api.request(method, path, headers=AUTH)
        assert answer.status_code == 404, path
        assert answer.json() == {"detail": "no flow 'x->y' in this process"}


def test_translate_passes_the_query_and_answers_the_translated_offsets(api, controller):
    answer = api.get("/offsets/translate", params={"group": "g1", "source": "A", "target": "B"}, headers=AUTH)
    assert answer.status_code == 200
    assert answer.json() == [{"topic": "A.t", "partition": 0, "offset": 7}, {"topic": "A.t", "partition": 1,
                                                                           "offset": 0}]
    assert controller.calls == [("translate", "g1", "A", "B")]


@pytest.mark.parametrize("params", [{"source": "A", "target": "B"}, {"group": "", "source": "A", "target": "B"},
                                    {"group": "g", "source": "A"}])
def test_translate_needs_a_group_a_source_and_a_target(api, controller, params):
    assert api.get("/offsets/translate", params=params, headers=AUTH).status_code == 422
    assert controller.calls == []


def test_config_is_the_controllers_view(api, controller):
    assert api.get("/config", headers=AUTH).json() == {"top_level": {"clusters": "A, B"},
                                                       "flows": {"A->B": {"topics": ".*"}}}
    assert controller.calls == [("config",)]


@pytest.mark.parametrize("error, status", [
    (ConfigError("A->B.topics is not a valid regular expression", "A->B.topics"), 400),
    (NotFound("no checkpoints for group g"), 404),
    (UnknownFlow("no flow 'A->B'"), 404),  # a subclass answers as its closest family class
    (Conflict("flow A->B is not paused"), 409),
])
def test_the_error_family_answers_its_status_with_the_message(api, controller, error, status):
    controller.fail = error
    answer = api.post("/flows/A->B/resume", headers=AUTH)
    assert answer.status_code == status and answer.json() == {"detail": str(error)}


def test_a_kafka_error_is_a_bad_gateway(api, controller):
    controller.fail = KafkaException(KafkaError(KafkaError._TIMED_OUT, "checkpoints topic read timed out"))
    answer = api.get("/offsets/translate", params={"group": "g", "source": "A", "target": "B"}, headers=AUTH)
    assert answer.status_code == 502
    assert answer.json() == {"detail": "Kafka request failed: checkpoints topic read timed out"}


@pytest.mark.parametrize("error", [OperationalError("state folder unreadable"), KeyError("lag")])
def test_anything_else_is_an_internal_error_logged_with_its_traceback(api, controller, error, caplog):
    controller.fail = error
    answer = api.get("/flows", headers=AUTH)
    assert answer.status_code == 500
    assert answer.json()["detail"].startswith(f"internal error ({type(error).__name__}): ")
    assert answer.json()["detail"].endswith("; see the mirrorspark log") and "Traceback" not in answer.text
    assert "REST GET /flows failed" in caplog.text and "Traceback" in caplog.text


def test_error_messages_are_redacted(api, controller):
    before = current()
    install(Redactor(["hunter2-secret"]))
    try:
        controller.fail = ConfigError("cannot log in with password hunter2-secret", "A.sasl.jaas.config")
        bad = api.post("/flows/A->B/pause", headers=AUTH)
        controller.fail = RuntimeError("connect failed: ssl.key.password=other-value")
        crashed = api.post("/flows/A->B/pause", headers=AUTH)
    finally:
        install(before)
    assert bad.status_code == 400 and "hunter2-secret" not in bad.text and "password" in bad.json()["detail"]
    assert crashed.status_code == 500 and "other-value" not in crashed.text


def test_flow_errors_and_reasons_are_served_redacted(api, controller, monkeypatch):
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="pl41n-pw";'
    config = {"A.sasl.jaas.config": jaas, "B.ssl.truststore.password": "tru5t-store-pw",
              "spark.hadoop.fs.s3a.secret.key": "s3a-secret-key-value", "A.sasl.oauthbearer.token": "t0ken-value"}
    error = (f"SaslAuthenticationException: login with {jaas} failed; truststore tru5t-store-pw refused; "
             "S3 key s3a-secret-key-value; bearer t0ken-value")
    failed = {**FLOW, "state": "failed", "error": error}
    monkeypatch.setattr(controller, "flows", lambda: [failed])
    monkeypatch.setattr(controller, "flow", lambda name: {**failed, "data_loss": [{"reason": error, "records": 3}],
                                                          "partitions": [["A.t", 0, error]]})
    before = current()
    install(Redactor.of([config]))
    try:
        answers = [api.get("/flows", headers=AUTH), api.get("/flows/A->B", headers=AUTH)]
    finally:
        install(before)
    for answer in answers:
        assert answer.status_code == 200, answer.text
        for secret in ("pl41n-pw", "tru5t-store-pw", "s3a-secret-key-value", "t0ken-value"):
            assert secret not in answer.text
    assert answers[0].json()[0]["error"].startswith("SaslAuthenticationException: login with ")
    assert answers[1].json()["data_loss"][0]["records"] == 3 and answers[1].json()["name"] == "A->B"


def test_the_openapi_schema_lists_every_route_behind_the_bearer_scheme(api):
    schema = api.get("/openapi.json", headers=AUTH).json()
    assert set(schema["paths"]) == {"/health", "/ready", "/metrics", "/flows", "/flows/{name}", "/flows/{name}/pause",
                                    "/flows/{name}/resume", "/flows/{name}/restart", "/flows/{name}/copy-ends",
                                    "/flows/{name}/move-aside", "/flows/{name}/translate", "/offsets/translate",
                                    "/config"}
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert "security" in schema["paths"]["/flows"]["get"] and "security" not in schema["paths"]["/health"]["get"]


def test_move_aside_takes_runs_and_ends_per_partition_and_refuses_a_malformed_body(api, controller):
    from mirrorspark.partition import OffsetRun

    body = {"moves": [{"topic": "t", "partition": 0, "copied": [[10, 10, 5]], "end": 40}]}
    assert api.post("/flows/A->B/move-aside", json=body).status_code == 401  # behind the token
    answer = api.post("/flows/A->B/move-aside", json=body, headers=AUTH)
    assert answer.status_code == 200 and answer.json() == [{"topic": "t", "partition": 0, "end": 40}]
    assert controller.calls[-1] == ("move_aside", "A->B", [("t", 0, [OffsetRun(10, 10, 5)], 40)])
    for bad in ({"moves": []}, {"moves": [{"topic": "t", "partition": -1, "end": 4}]},
                {"moves": [{"topic": "t", "partition": 0, "end": 4, "copied": [[1, 2]]}]}, {}):
        refused = api.post("/flows/A->B/move-aside", json=bad, headers=AUTH)
        assert refused.status_code == 422 and "Traceback" not in refused.text, bad
    assert api.get("/flows/A->B/copy-ends", headers=AUTH).json()[0]["upstream_end"] == 10
    assert api.get("/flows/X->Y/copy-ends", headers=AUTH).status_code == 404


def test_translate_positions_answers_each_and_refuses_a_malformed_body(api, controller):
    body = {"positions": [{"topic": "t", "partition": 1, "offset": 40}]}
    assert api.post("/flows/A->B/translate", json=body).status_code == 401  # behind the token
    answer = api.post("/flows/A->B/translate", json=body, headers=AUTH)
    assert answer.status_code == 200
    assert answer.json() == [{"topic": "t", "partition": 1, "offset": 40, "target_offset": 41}]
    assert controller.calls[-1] == ("translate_positions", "A->B", [("t", 1, 40)])
    for bad in ({"positions": []}, {"positions": [{"topic": "t", "partition": 0, "offset": -1}]},
                {"positions": [{"topic": "", "partition": 0, "offset": 1}]}, {}):
        refused = api.post("/flows/A->B/translate", json=bad, headers=AUTH)
        assert refused.status_code == 422 and "Traceback" not in refused.text, bad
    assert api.post("/flows/X->Y/translate", json=body, headers=AUTH).status_code == 404
