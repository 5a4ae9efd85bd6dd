"""``mirrorspark local spark``: a real standalone master and workers, an application on them, and a clean down.

Starts real Spark JVMs (about 10 s per cluster), no Kafka brokers.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.process_views import assert_environ_private, assert_off_command_lines
from helpers.processes import run_cli

from mirrorspark.local.cluster import LocalClusterError
from mirrorspark.local.spark_cluster import LocalSpark, driver_auth, group_members, master_state

# mirrorspark's own session (which finds the cluster's secret) picks its executors' Python
# (PYSPARK_PYTHON); the Python task checks that they run this interpreter, the JVM-only count that the
# cluster runs jobs.
APP = """
import os, sys, time
from mirrorspark.pipeline.spark_session import build_session
spark = build_session({"spark.master": sys.argv[1], "spark.app.name": sys.argv[2], "spark.executor.memory": "512m"})
try:
    print("count", spark.range(100).count(), flush=True)
    print("python", spark.sparkContext.parallelize([0], 1).map(lambda _: sys.executable).first(), flush=True)
    time.sleep(float(sys.argv[3]))
finally:
    spark.stop()
"""


# A plain pyspark driver given only ``extra`` settings (JSON on standard input): not mirrorspark's session.
PLAIN_APP = """
import json, sys
from pyspark.sql import SparkSession
builder = (SparkSession.builder.master(sys.argv[1]).appName(sys.argv[2])
           .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
           .config("spark.ui.enabled", "false"))
for key, value in json.loads(sys.stdin.readline()).items():
    builder = builder.config(key, value)
print("count", builder.getOrCreate().range(100).count(), flush=True)
"""
# What a driver logs each time the master refuses it (Spark tries 3 times, 20 s apart).
REFUSED = "Failed to connect to master"


def _app(master: str, name: str, linger: float = 0.0) -> subprocess.Popen[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.Popen([sys.executable, "-c", APP, master, name, str(linger)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _plain_app(master: str, name: str, extra: dict[str, str]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    app = subprocess.Popen([sys.executable, "-c", PLAIN_APP, master, name], env=env, text=True,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert app.stdin is not None
    app.stdin.write(json.dumps(extra) + "\n")
    app.stdin.close()
    return app


def _stop(apps: list[subprocess.Popen[str]]) -> None:
    while apps:
        app = apps.pop()
        app.kill()
        app.wait()
        for stream in (app.stdin, app.stdout, app.stderr):
            if stream is not None:
                stream.close()


def _refused(app: subprocess.Popen[str]) -> threading.Event:
    """Set once ``app`` logs that the master refused it; its standard error is read to the end."""
    seen = threading.Event()

    def read() -> None:
        assert app.stderr is not None
        for line in app.stderr:
            if REFUSED in line:
                seen.set()

    threading.Thread(target=read, daemon=True).start()
    return seen


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (an executor's Python workers run in their own process group)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, IndexError):
            continue
    return found


def _pids(state: Path, workers: int) -> list[int]:
    local = LocalSpark(state)
    pids = [local.pid(name) for name in ["master", *(f"worker-{i}" for i in range(1, workers + 1))]]
    assert all(pids), pids
    return [p for p in pids if p is not None]


@pytest.mark.long  # minutes of one worker: in `make drills`, keeping `make test` under 30 minutes
def test_up_run_application_down(tmp_path):
    state = str(tmp_path)
    started = time.monotonic()
    up = run_cli("local", "spark", "up", "--workers", "2", "--state-dir", state)
    up_seconds = time.monotonic() - started
    assert up.returncode == 0, up.stderr
    lines = up.stdout.splitlines()
    assert lines[0].startswith("spark.master = spark://127.0.0.1:"), up.stdout
    master = lines[0].split(" = ", 1)[1]
    assert lines[1].startswith("# Spark master web UI: http://127.0.0.1:")
    web_ui = lines[1].rsplit(" ", 1)[1]
    assert lines[2].endswith(str(tmp_path.resolve() / "spark" / "daemon.conf")), up.stdout
    print(f"local spark up (2 workers) took {up_seconds:.1f} s")
    try:
        state_json = master_state(web_ui)
        assert state_json is not None and state_json["url"] == master
        alive = [w for w in state_json["workers"] if w["state"] == "ALIVE"]
        assert len(alive) == 2 and all(w["cores"] == 1 and w["memory"] == 1024 for w in alive), alive

        status = run_cli("local", "spark", "status", "--state-dir", state)
        assert status.returncode == 0, status.stdout
        assert f"master: running at {master}" in status.stdout
        assert "worker-1: running" in status.stdout and "worker-2: running" in status.stdout

        again = run_cli("local", "spark", "up", "--workers", "2", "--state-dir", state)
        assert again.returncode == 0 and again.stdout == up.stdout
        other = run_cli("local", "spark", "up", "--workers", "3", "--state-dir", state)
        assert other.returncode == 1 and "Traceback" not in other.stderr
        assert other.stderr.startswith("mirrorspark: error: a local Spark cluster already runs")
        assert "run `mirrorspark local spark down` first" in other.stderr

        app = _app(master, "mirrorspark-test-count")
        out, err = app.communicate(timeout=180)
        assert app.returncode == 0, err[-3000:]
        assert "count 100" in out.splitlines()
        assert f"python {sys.executable}" in out.splitlines()
        finished = master_state(web_ui)
        assert finished is not None
        assert "mirrorspark-test-count" in [a["name"] for a in finished["completedapps"]]
    finally:
        pids = _pids(tmp_path, 2)
        down = run_cli("local", "spark", "down", "--state-dir", state)
    assert down.returncode == 0, down.stderr
    assert down.stdout.splitlines() == [f"worker-1: stopped (pid {pids[1]})", f"worker-2: stopped (pid {pids[2]})",
                                        f"master: stopped (pid {pids[0]})"]
    assert not [p for p in pids if _alive(p)] and not [p for pid in pids for p in group_members(pid)]
    assert not list((tmp_path / "spark").glob("*.pid"))
    after = run_cli("local", "spark", "status", "--state-dir", state)
    assert after.returncode == 0 and "master: stopped" in after.stdout


@pytest.mark.long  # in `make drills`: keeps `make test` under 30 minutes
def test_down_stops_executors_of_a_running_application(tmp_path):
    local = LocalSpark(tmp_path)
    master = local.up(workers=1)
    worker = _pids(tmp_path, 1)[1]
    app = _app(master, "mirrorspark-test-linger", linger=600)
    guard = threading.Timer(180, app.kill)  # a hung application fails the test instead of blocking it
    guard.start()
    try:
        assert app.stdout is not None
        assert app.stdout.readline().strip() == "count 100"
        assert app.stdout.readline().strip() == f"python {sys.executable}"
        executors = [p for p in group_members(worker) if p != worker]
        assert executors, "the application's executor should run in the worker's process group"
        launched = executors + [c for p in executors for c in _children(p)]
        assert len(launched) > len(executors), "the Python task should have left a pyspark.daemon running"
        local.down()
        time.sleep(1)  # pyspark.daemon exits when its executor's pipe closes
        assert not [p for p in launched if _alive(p)]
        assert not group_members(worker)
    finally:
        guard.cancel()
        app.kill()
        app.communicate()
        local.down(purge=True)


@pytest.mark.long  # minutes of one worker: in `make drills`, keeping `make test` under 30 minutes
def test_cluster_answers_only_drivers_that_know_its_secret(tmp_path):
    local = LocalSpark(tmp_path)
    master = local.up(workers=1)
    guard = None
    apps: list[subprocess.Popen[str]] = []
    try:
        conf = local.folder / "daemon.conf"
        assert conf.stat().st_mode & 0o777 == 0o600
        auth = driver_auth(master)
        secret = auth["spark.authenticate.secret"]
        assert len(secret) >= 32 and auth["spark.authenticate"] == auth["spark.network.crypto.enabled"] == "true"
        # Without the secret, with another one, and with it but unencrypted: all refused.
        intruders = {"no-secret": {}, "wrong-secret": {**auth, "spark.authenticate.secret": "0" * len(secret)},
                     "unencrypted": {**auth, "spark.network.crypto.enabled": "false"}}
        apps += [_plain_app(master, f"test-{name}", extra) for name, extra in intruders.items()]
        refusals = [_refused(app) for app in apps]
        for name, refused in zip(intruders, refusals, strict=True):
            assert refused.wait(timeout=60), f"the driver with {name} was not refused"
        state = master_state(local.load().web_ui)  # type: ignore[union-attr]
        assert state is not None and not state["activeapps"] and not state["completedapps"], state
        _stop(apps)

        app = _app(master, "mirrorspark-test-secret", linger=600)
        apps.append(app)
        guard = threading.Timer(180, app.kill)  # a hung application fails the test instead of blocking it
        guard.start()
        assert app.stdout is not None
        assert app.stdout.readline().strip() == "count 100", app.stderr.read() if app.poll() is not None else ""
        assert app.stdout.readline().strip() == f"python {sys.executable}"
        daemons = _pids(tmp_path, 1)
        executors = [p for p in group_members(daemons[1]) if p != daemons[1]]
        assert executors
        assert_off_command_lines([secret])
        # The daemons read the secret from their file; Spark's workers hand it to executors in their
        # environment, which only this user can read.
        assert_environ_private([app.pid, *daemons], without=[secret])
        assert_environ_private(executors)
    finally:
        if guard is not None:
            guard.cancel()
        _stop(apps)
        local.down(purge=True)


def test_daemon_dying_during_start_shows_its_log(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_DAEMON_JAVA_OPTS", "-Xms1g")  # above the daemons' 256m maximum heap
    try:
        LocalSpark(tmp_path).up(workers=1, timeout=60)
    except LocalClusterError as exc:
        message = str(exc)
    else:
        raise AssertionError("a master that cannot start was reported as started")
    assert "Spark master exited with code" in message and "last lines of" in message
    assert "heap" in message.lower()
    assert not list((tmp_path / "spark").glob("*.pid"))


def test_workers_must_be_positive(tmp_path):
    for value in ("0", "-1"):
        done = run_cli("local", "spark", "up", "--workers", value, "--state-dir", str(tmp_path))
        assert done.returncode == 2 and "--workers" in done.stderr
    assert not (tmp_path / "spark").exists()


UI_APP = """
import sys, time, urllib.request
from mirrorspark.pipeline.spark_session import SPARK_DEFAULTS, build_session
assert SPARK_DEFAULTS["spark.ui.enabled"] == "false"
spark = build_session({"spark.master": "local[1]", "spark.ui.enabled": "true", "spark.ui.port": sys.argv[1],
                       "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"})
try:
    spark.range(10).count()
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/jobs/", timeout=30) as page:
        print("status", page.status, "jobs page" if b"Spark Jobs" in page.read() else "other page", flush=True)
finally:
    spark.stop()
"""


def test_the_spark_ui_is_off_by_default_and_on_with_its_usual_settings(tmp_path):
    """docs/operations.md "Metrics": `spark.ui.enabled = true` (and `spark.ui.port`) in mm2.properties, as
    any spark.* key, reach the session; the UI then serves Spark's jobs page."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = subprocess.run([sys.executable, "-c", UI_APP, str(port)], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "status 200 jobs page" in done.stdout, done.stdout + done.stderr[-2000:]
