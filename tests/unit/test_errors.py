"""The error family and its two mappings, without brokers: CLI exit codes and lines, REST statuses
and bodies, and tracebacks logged (CLI internal errors, failing scheduler tasks)."""
from __future__ import annotations

import logging
import threading
from types import SimpleNamespace
from typing import Any

import pytest
import typer
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from typer.testing import CliRunner

from mirrorspark.cli.reporting import EXIT_CONFIG, EXIT_RUNTIME, exit_code, reported
from mirrorspark.client.failover import GroupActive
from mirrorspark.config import ConfigError
from mirrorspark.control.admin import TopicMissing
from mirrorspark.control.scheduler import Scheduler
from mirrorspark.errors import Conflict, MirrorsparkError, NotFound, OperationalError
from mirrorspark.pipeline.flow import Flow
from mirrorspark.pipeline.flow_assembly import FlowContext
from mirrorspark.pipeline.rest_controller import ReplicatorController
from mirrorspark.rest.app import create_app
from mirrorspark.rest.controller import UnknownFlow
from mirrorspark.state.files import StateError


def test_config_error_keeps_its_key_and_stays_a_value_error():
    error = ConfigError("a.bootstrap.servers is required", "a.bootstrap.servers")
    assert error.key == "a.bootstrap.servers" and str(error) == "a.bootstrap.servers is required"
    assert ConfigError("no key").key is None
    assert isinstance(error, MirrorsparkError) and isinstance(error, ValueError)
    from mirrorspark.errors import ConfigError as old_home

    assert old_home is ConfigError


@pytest.mark.parametrize("kind", [UnknownFlow, TopicMissing])
def test_missing_things_are_not_found(kind):
    assert issubclass(kind, NotFound) and issubclass(kind, OperationalError)


def test_exit_codes_by_family():
    assert exit_code(ConfigError("bad")) == EXIT_CONFIG == 2
    assert exit_code(StateError("disk full")) == exit_code(GroupActive("members")) == EXIT_RUNTIME == 1


def _cli(exc: BaseException) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    @reported
    def go() -> None:
        raise exc

    return app


@pytest.mark.parametrize("exc, code, line", [
    (ConfigError("x.y must be an integer, got 'z'", "x.y"), 2, "mirrorspark: error: x.y must be an integer, got 'z'\n"),
    (StateError("cannot write state/a->b/marks.json: disk full"), 1,
     "mirrorspark: error: cannot write state/a->b/marks.json: disk full\n"),
    (NotFound("topic t does not exist"), 1, "mirrorspark: error: topic t does not exist\n"),
])
def test_cli_prints_one_line_and_exits_by_family(exc, code, line):
    done = CliRunner().invoke(_cli(exc), [])
    assert done.exit_code == code and done.stderr == line and done.stdout == ""


def test_cli_internal_error_logs_the_traceback_and_prints_one_line(caplog):
    done = CliRunner().invoke(_cli(ZeroDivisionError("division by zero")), [])
    assert done.exit_code == 1
    assert done.stderr == "mirrorspark: error: internal error: division by zero (traceback in the log)\n"
    logged = [r for r in caplog.records if r.name == "mirrorspark.cli.reporting"]
    assert logged and logged[0].levelno == logging.ERROR and logged[0].exc_info is not None
    assert "Traceback" in caplog.text and "ZeroDivisionError" in caplog.text


def test_cli_leaves_typer_exits_alone():
    assert CliRunner().invoke(_cli(typer.Exit(3)), []).exit_code == 3


class _Query:
    """A flow's query as REST steers it."""

    def __init__(self, fail_with: Exception | None = None) -> None:
        self.paused = False
        self._fail_with = fail_with

    def state(self) -> str:
        return "paused" if self.paused else "running"

    def pause(self) -> None:
        if self._fail_with is not None:
            raise self._fail_with
        self.paused = True

    def resume(self, spark: Any) -> None:  # as FlowQuery.resume: only a paused flow resumes
        if not self.paused:
            raise Conflict(f"flow a->b is not paused (state {self.state()})")
        self.paused = False


def _flow(name: str, query: _Query | None = None, lease_group: str | None = None,
          failure: str | None = None) -> Flow:
    """A real ``Flow`` of a small configuration (no lease, nothing assembled), given parts or a role."""
    source, target = name.split("->")
    config = SimpleNamespace(name=name, source=SimpleNamespace(alias=source), target=SimpleNamespace(alias=target),
                             options=SimpleNamespace(lease_enabled=False))
    flow = Flow(context=FlowContext(config=config, policy=None, shared=SimpleNamespace(), instance="me"))  # type: ignore[arg-type]
    if query is not None:
        flow.parts = SimpleNamespace(query=query, supervisor=SimpleNamespace(state=query.state))  # type: ignore[assignment]
    if lease_group is not None:
        flow.lease = SimpleNamespace(group=lease_group)  # type: ignore[assignment]
        flow.standby_since = 1000.0
    if failure is not None:
        flow.last_failure, flow.failing_since, flow.failed_takes = failure, 0.0, 3
    return flow


def _rest(flows: list[Flow], spark: Any = "spark") -> TestClient:
    replicator: Any = SimpleNamespace(flows={flow.name: flow for flow in flows}, spark=spark,
                                      config=SimpleNamespace(clusters={"a": None, "b": None}),
                                      cluster_conf=lambda alias: None)
    app = create_app(ReplicatorController(replicator), CollectorRegistry(), token=None)
    return TestClient(app, base_url="http://127.0.0.1:8083", raise_server_exceptions=False)


def test_rest_unknown_flow_is_404():
    answer = _rest([_flow("a->b", _Query())]).get("/flows/x->y")
    assert answer.status_code == 404 and answer.json() == {"detail": "no flow 'x->y' in this process (flows: a->b)"}


def test_rest_shows_a_standby_flow_and_refuses_to_steer_it():
    api = _rest([_flow("b->a", lease_group="mirrorspark.b->a")])
    listed = api.get("/flows").json()
    assert [(f["name"], f["role"], f["state"]) for f in listed] == [("b->a", "standby", "standby")]
    assert api.get("/flows/b->a").json()["lease_group"] == "mirrorspark.b->a"
    answer = api.post("/flows/b->a/pause")
    assert answer.status_code == 409 and "is a standby in this process" in answer.json()["detail"]


def test_rest_shows_a_flow_whose_start_is_retried_as_degraded():
    api = _rest([_flow("b->a", failure="cannot reach cluster 'b'")])
    shown = api.get("/flows/b->a").json()
    assert (shown["role"], shown["state"]) == ("writer", "degraded")
    assert shown["error"] == ("retrying since 1970-01-01T00:00:00Z (3 attempts to start it; nothing is skipped): "
                              "cannot reach cluster 'b'")
    answer = api.post("/flows/b->a/pause")
    assert answer.status_code == 409 and "starting it failed and is retried" in answer.json()["detail"]


def test_rest_conflicts_are_409():
    api = _rest([_flow("a->b", _Query())])
    answer = api.post("/flows/a->b/resume")
    assert answer.status_code == 409 and answer.json() == {"detail": "flow a->b is not paused (state running)"}
    answer = _rest([_flow("a->b", _Query())], spark=None).post("/flows/a->b/pause")
    assert answer.status_code == 409
    assert answer.json() == {"detail": "the replicator is not running yet (or is stopping); try again shortly"}
    assert api.post("/flows/a->b/pause").json() == {"flow": "a->b", "state": "paused"}


def test_rest_bad_cluster_aliases_are_400():
    answer = _rest([]).get("/offsets/translate", params={"group": "g", "source": "a", "target": "nope"})
    assert answer.status_code == 400
    assert answer.json() == {"detail": "source and target must be cluster aliases of this process (a, b)"}


def test_rest_other_errors_are_500_with_the_traceback_logged(caplog):
    answer = _rest([_flow("a->b", _Query(StateError("cannot write marks.json")))]).post("/flows/a->b/pause")
    assert answer.status_code == 500 and "Traceback" not in answer.text
    assert answer.json() == {"detail": "internal error (StateError): cannot write marks.json; see the mirrorspark log"}
    logged = [r for r in caplog.records if r.name == "mirrorspark.rest.app"]
    assert logged and logged[0].exc_info is not None and "Traceback" in caplog.text


def test_a_failing_scheduler_task_logs_its_traceback(caplog):
    caplog.set_level(logging.WARNING, logger="mirrorspark.control.scheduler")
    ran = threading.Event()

    def broken() -> None:
        ran.set()
        raise StateError("cannot read state/x")

    scheduler = Scheduler()
    scheduler.every("broken task", 60, broken)
    scheduler.start()
    assert ran.wait(5)
    scheduler.stop()  # joins the thread: the failure is logged by now
    failed = [r for r in caplog.records if r.getMessage() == "broken task failed: cannot read state/x"]
    assert failed and failed[0].levelno == logging.WARNING and failed[0].exc_info is not None
    assert "Traceback" in caplog.text and "StateError" in caplog.text


def test_cli_internal_error_traceback_hides_secrets(caplog):
    from mirrorspark.config.redaction import Redactor, current, install

    before = current()
    install(Redactor(["s3cret-value"]))
    try:
        done = CliRunner().invoke(_cli(ZeroDivisionError("password s3cret-value")), [])
    finally:
        install(before)
    assert done.exit_code == 1 and "s3cret-value" not in done.stderr
    assert "ZeroDivisionError" in caplog.text and "s3cret-value" not in caplog.text


def test_the_default_state_folder_does_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    from mirrorspark import paths

    monkeypatch.delenv("MIRRORSPARK_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    first = paths.default_state_dir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert paths.default_state_dir() == first == tmp_path / "xdg" / "mirrorspark"
    (tmp_path / "elsewhere" / "state" / "flows").mkdir(parents=True)
    assert paths.default_state_dir() == first  # a ./state folder in the working directory is not it
    monkeypatch.setenv("MIRRORSPARK_STATE_DIR", str(tmp_path / "chosen"))
    assert paths.default_state_dir() == tmp_path / "chosen"
