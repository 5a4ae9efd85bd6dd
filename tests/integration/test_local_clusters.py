"""``mirrorspark local``: real brokers up, status, down, and its error cases."""
from __future__ import annotations

import json
import os
import socket

from helpers.processes import run_cli

from mirrorspark.control.admin import broker_answers


def test_up_status_down_cycle(tmp_path):
    state = str(tmp_path)
    done = run_cli("local", "up", "solo", "--state-dir", state)
    assert done.returncode == 0, done.stderr
    name, _, bootstrap = done.stdout.strip().partition("=")
    assert name == "solo" and bootstrap.startswith("127.0.0.1:")
    assert broker_answers(bootstrap)
    status = run_cli("local", "status", "--state-dir", state)
    assert status.returncode == 0 and f"solo: running {bootstrap}" in status.stdout
    again = run_cli("local", "up", "solo", "--state-dir", state)  # already running: same answer
    assert again.stdout.strip() == f"solo={bootstrap}"
    down = run_cli("local", "down", "--state-dir", state)
    assert down.returncode == 0 and "solo: stopped" in down.stdout
    assert not broker_answers(bootstrap, timeout=1)
    assert "solo: stopped" in run_cli("local", "status", "--state-dir", state).stdout


def test_port_taken(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        done = run_cli("local", "up", f"busy:{port}", "--state-dir", str(tmp_path))
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr


def test_java_missing(tmp_path):
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = os.path.dirname(sys.executable)
    done = subprocess.run([sys.executable, "-m", "mirrorspark", "local", "up", "x", "--state-dir", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1 and "java not found" in done.stderr


def test_broker_dying_during_start_shows_its_log(tmp_path):
    from mirrorspark.local import ClusterSpec, LocalClusterError, LocalClusters
    local = LocalClusters(tmp_path, jvm_opts=["-Xmx512m", "-Dkafka.test=1", "-XX:MaxHeapSize=1k"])
    try:
        local.up([ClusterSpec("dies")], timeout=60)
    except LocalClusterError as exc:
        message = str(exc)
    else:
        raise AssertionError("a broker that cannot start was reported as started")
    assert "exited with code" in message and "last lines of" in message
    assert "heap" in message.lower()


def test_stale_pid_file(tmp_path):
    folder = tmp_path / "local" / "ghost"
    folder.mkdir(parents=True)
    (folder / "cluster.json").write_text(json.dumps(
        {"name": "ghost", "port": 1, "controller_port": 2, "cluster_id": "x"}))
    (folder / "broker.pid").write_text("999999")
    status = run_cli("local", "status", "--state-dir", str(tmp_path))
    assert status.returncode == 1 and "stale pid file" in status.stdout
    down = run_cli("local", "down", "--state-dir", str(tmp_path))
    assert down.returncode == 0 and "stale pid file removed" in down.stdout
    assert not (folder / "broker.pid").exists()
