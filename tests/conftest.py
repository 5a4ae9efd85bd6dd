"""Two real local Kafka clusters for the whole test session, and a way to run mirrorspark."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from spark_fixture import spark_cluster  # noqa: F401  (session fixture: a real standalone cluster)

from mirrorspark.local import ClusterSpec, LocalClusters
from mirrorspark.local.security import SecurityOptions

MIRRORSPARK = [sys.executable, "-m", "mirrorspark"]


@pytest.fixture(scope="session")
def clusters(tmp_path_factory) -> Iterator[dict[str, str]]:
    """``{"primary": .., "backup": .., "third": ..}`` bootstrap addresses, started once per session
    (the third cluster serves the chain topology). primary and backup run StandardAuthorizer (ANONYMOUS
    is a super user there) so ACL sync is tested; third has no authorizer."""
    local = LocalClusters(tmp_path_factory.mktemp("clusters"))
    with_acls = SecurityOptions(authorizer=True)
    started = local.up([ClusterSpec("primary", security=with_acls), ClusterSpec("backup", security=with_acls),
                        ClusterSpec("third")])
    try:
        yield {c.name: c.bootstrap for c in started}
    finally:
        local.down(purge=True)


@pytest.fixture
def unique() -> str:
    """A short unique suffix for topic names, so tests share the clusters safely."""
    return uuid.uuid4().hex[:8]


def write_config(path: Path, clusters: dict[str, str], extra: str) -> Path:
    path.write_text(
        "clusters = primary, backup\n"
        f"primary.bootstrap.servers = {clusters['primary']}\n"
        f"backup.bootstrap.servers = {clusters['backup']}\n"
        "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
        "offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n" + extra
    )
    return path


# The integration tests that must pass in either trigger mode take ``trigger`` from this mark.
TRIGGERS = pytest.mark.parametrize("trigger", ["microbatch", "realtime"])


def trigger_settings(trigger: str, slots: int = 8) -> str:
    """mm2.properties lines of a trigger mode: real-time mode needs a task slot per source partition
    (heartbeats included), short real-time batches and a quick topic refresh (it re-plans by restarting)."""
    if trigger == "microbatch":
        return ""
    return (f"mirrorspark.trigger = realtime\nmirrorspark.realtime.batch.seconds = 5\nspark.master = local[{slots}]\n"
            "refresh.topics.interval.seconds = 5\n")


class MirrorsparkProcess:
    def __init__(self, proc: subprocess.Popen, log: Path) -> None:
        self.proc = proc
        self.log = log

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, timeout: float = 90.0) -> int:
        """SIGTERM, as a service manager would; return the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"mirrorspark did not stop within {timeout} s:\n{self.output()[-3000:]}") from None


@contextmanager
def running_mirrorspark(config: Path, state_dir: Path, *args: str, exit_code: int = 0) -> Iterator[MirrorsparkProcess]:
    """``mirrorspark run CONFIG`` in its own process; on exit it must stop with ``exit_code`` (0: cleanly;
    1 when a flow had failed before the stop)."""
    log = state_dir / f"mirrorspark-{time.time_ns()}.log"
    state_dir.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        proc = subprocess.Popen([*MIRRORSPARK, "run", str(config), "--state-dir", str(state_dir),
                                 "--progress-interval", "2", *args],
                                stdout=out, stderr=subprocess.STDOUT, env={**os.environ})
    handle = MirrorsparkProcess(proc, log)
    try:
        yield handle
    except BaseException:
        handle.stop()
        print(handle.output()[-5000:])
        raise
    code = handle.stop()
    assert code == exit_code, f"mirrorspark exited with {code}:\n{handle.output()[-5000:]}"


def run_cli(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run([*MIRRORSPARK, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A command run in-process (CliRunner) installs a stderr handler bound to the runner's stream,
    which is closed after it; later tests in the same worker would log into it. Each test gets the
    root logger back as it found it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
