"""The local Spark cluster's secret: private, kept across restarts, found by a driver from its master alone."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mirrorspark.local.cluster import LocalClusterError
from mirrorspark.local.spark_cluster import DAEMON_CONF, MASTER_CLASS, SECRET_KEY, LocalSpark, driver_auth


@pytest.fixture
def master(tmp_path) -> Iterator[tuple[LocalSpark, str]]:
    """A cluster folder prepared by ``up`` and a process whose command line is its master's (port 7)."""
    local = LocalSpark(tmp_path)
    local._prepare(workers=1, cores=1, memory="1g", port=0)
    fake = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", MASTER_CLASS, "--host",
                             "127.0.0.1", "--port", "7", "--properties-file", str(local.folder / DAEMON_CONF)],
                            stdin=subprocess.PIPE)
    cmdline = f"/proc/{fake.pid}/cmdline"
    deadline = time.monotonic() + 10
    while MASTER_CLASS not in Path(cmdline).read_text() and time.monotonic() < deadline:
        time.sleep(0.01)  # until exec: before it, the process shows its parent's command line
    try:
        yield local, "spark://127.0.0.1:7"
    finally:
        fake.kill()
        fake.wait()


def _secret(local: LocalSpark) -> str:
    lines = (local.folder / DAEMON_CONF).read_text().splitlines()
    return next(line.split()[1] for line in lines if line.startswith(SECRET_KEY + " "))


def test_the_secret_is_private_and_kept_across_restarts(tmp_path):
    local = LocalSpark(tmp_path)
    local._prepare(workers=1, cores=1, memory="1g", port=0)
    conf = local.folder / DAEMON_CONF
    assert conf.stat().st_mode & 0o777 == 0o600
    first = _secret(local)
    assert len(first) == 64 and "spark.network.crypto.enabled true" in conf.read_text()
    local._prepare(workers=1, cores=1, memory="1g", port=0)
    assert _secret(local) == first

    conf.chmod(0o644)  # an older cluster's file, which others could read: that secret is replaced
    local._prepare(workers=1, cores=1, memory="1g", port=0)
    assert _secret(local) != first and conf.stat().st_mode & 0o777 == 0o600


def test_a_driver_finds_the_secret_from_the_master_url(master):
    local, url = master
    auth = driver_auth(url)
    assert auth == {"spark.authenticate": "true", SECRET_KEY: _secret(local), "spark.network.crypto.enabled": "true",
                    "spark.network.crypto.saslFallback": "false"}
    assert driver_auth("spark://localhost:7") == auth
    for other in ("spark://127.0.0.1:8", "spark://10.0.0.1:7", "local[*]", "k8s://https://h:6443"):
        assert driver_auth(other) == {}


def test_a_cluster_without_authentication_or_with_an_exposed_secret(master):
    local, url = master
    conf = local.folder / DAEMON_CONF
    text = conf.read_text()
    os.chmod(conf, 0o644)
    with pytest.raises(LocalClusterError, match="readable by other users"):
        driver_auth(url)
    conf.unlink()
    conf.write_text("spark.master.rest.enabled false\n")  # started by an older mirrorspark
    assert driver_auth(url) == {}
    assert "spark.authenticate true" in text
