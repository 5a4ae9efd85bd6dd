"""Bad input to ``mirrorspark run`` that only a broker reveals fails fast, non-zero, naming the problem."""
from __future__ import annotations

import pytest
from helpers.config import write_config
from helpers.processes import run_cli


@pytest.mark.broker
def test_unreachable_bootstrap_server(clusters, tmp_path):
    (tmp_path / "mm2.properties").write_text(
        f"clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = {clusters['backup']}\n"
        "A->B.enabled = true\nreplication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
        "offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n")
    done = run_cli("run", str(tmp_path / "mm2.properties"))
    assert done.returncode == 1
    assert "cannot reach cluster 'A' at 127.0.0.1:1" in done.stderr and "A.bootstrap.servers" in done.stderr


@pytest.mark.broker
def test_replication_factor_above_broker_count_is_refused_before_data_moves(clusters, tmp_path, unique):
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = rf-{unique}\n"
                          "primary->backup.replication.factor = 3\n")
    done = run_cli("run", str(config), "--state-dir", str(tmp_path / "state"))
    assert done.returncode == 2
    assert "primary->backup.replication.factor=3" in done.stderr and "1 broker" in done.stderr
