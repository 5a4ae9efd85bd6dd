"""Bad input to ``mirrorspark run`` fails fast, non-zero, with a message naming the problem."""
from __future__ import annotations

from helpers.processes import run_cli


def test_unreadable_config_file(tmp_path):
    done = run_cli("run", str(tmp_path / "missing.properties"))
    assert done.returncode == 2
    assert "cannot read config file" in done.stderr and "missing.properties" in done.stderr


def test_config_that_is_a_directory(tmp_path):
    done = run_cli("run", str(tmp_path))
    assert done.returncode == 2 and "cannot read config file" in done.stderr


def test_missing_clusters(tmp_path):
    (tmp_path / "mm2.properties").write_text("A.bootstrap.servers = 127.0.0.1:9092\nA->B.enabled = true\n")
    done = run_cli("run", str(tmp_path / "mm2.properties"))
    assert done.returncode == 2 and "clusters is required" in done.stderr


def test_flow_naming_an_unknown_cluster(tmp_path):
    (tmp_path / "mm2.properties").write_text(
        "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:2\n"
        "A->C.enabled = true\n")
    done = run_cli("run", str(tmp_path / "mm2.properties"))
    assert done.returncode == 2
    assert "A->C.enabled" in done.stderr and "'C'" in done.stderr


def test_no_enabled_flow_and_no_heartbeats(tmp_path):
    (tmp_path / "mm2.properties").write_text(
        "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:2\n"
        "emit.heartbeats.enabled = false\n")
    done = run_cli("run", str(tmp_path / "mm2.properties"))
    assert done.returncode == 2 and "No source->target replication flows and no heartbeats" in done.stderr
