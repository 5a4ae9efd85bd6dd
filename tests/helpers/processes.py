"""mirrorspark as its own process: run it (and stop it with SIGTERM, checking the exit code), run a CLI
command, start an instance in its own process group for drills that kill it, and find its JVM."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from helpers.rest import wait_role

MIRRORSPARK = [sys.executable, "-m", "mirrorspark"]


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
def running_mirrorspark(config: Path, state_dir: Path, *args: str, exit_code: int | tuple[int, ...] = 0,
                        env: dict[str, str] | None = None) -> Iterator[MirrorsparkProcess]:
    """``mirrorspark run CONFIG`` in its own process; on exit it must stop with ``exit_code`` (0: cleanly;
    1 when a flow had failed before the stop; 143 when the stop overran ``mirrorspark.shutdown.timeout.ms``),
    or one of them. ``env``: added to this process's environment (a drill's fault point)."""
    log = state_dir / f"mirrorspark-{time.time_ns()}.log"
    state_dir.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        proc = subprocess.Popen([*MIRRORSPARK, "run", str(config), "--state-dir", str(state_dir),
                                 "--progress-interval", "2", *args],
                                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    handle = MirrorsparkProcess(proc, log)
    try:
        yield handle
    except BaseException:
        handle.stop()
        print(handle.output()[-5000:])
        raise
    code = handle.stop()
    expected = (exit_code,) if isinstance(exit_code, int) else exit_code
    assert code in expected, f"mirrorspark exited with {code}:\n{handle.output()[-5000:]}"


def run_cli(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run([*MIRRORSPARK, *args], capture_output=True, text=True, timeout=timeout)


def cli_json(*args: str) -> dict:
    done = run_cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def start(config: Path, state: Path) -> subprocess.Popen:
    state.mkdir(parents=True, exist_ok=True)
    with (state / "run.log").open("ab") as out:
        return subprocess.Popen([*MIRRORSPARK, "run", str(config), "--state-dir", str(state)], stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def kill9(proc: subprocess.Popen | int) -> None:
    """``kill -9`` a mirrorspark process and every process under it at once, as a host or a pod dies: its
    Spark JVM and its client JVM run in sessions of their own (a signal to the process group would leave
    them to exit on their own when their input closes, running their shutdown hooks)."""
    from helpers.process_views import descendants

    pid = proc if isinstance(proc, int) else proc.pid
    for victim in [pid, *descendants(pid)]:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            continue
    if not isinstance(proc, int):
        proc.wait(30)


def kill9_when(driver: subprocess.Popen, ready, log: Path, missed: str, timeout: float = 180) -> None:
    """``kill -9`` the driver's process group as soon as ``ready()``; fails with ``missed`` if it never is."""
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert time.monotonic() < deadline, missed
            assert driver.poll() is None, log.read_text()[-3000:]
            time.sleep(0.02)
    finally:
        kill9(driver)


# What tells a mirrorspark process's two JVMs apart on their command lines.
JVM_MARKERS = {"spark": "org.apache.spark.deploy.SparkSubmit",  # Spark's driver, local executors inside
               "clients": "py4j.GatewayServer"}  # the control plane's Kafka clients and Java plug-ins


def java_of(pid: int, kind: str = "spark") -> int:
    """The JVM of ``kind`` that a mirrorspark process started: ``spark`` (the records' writer) or ``clients``
    (the control plane: the lease, offset syncs, checkpoints). Both are its children; a drill that stops
    "the writer's JVM" must stop the one it means."""
    marker = JVM_MARKERS[kind]
    children = {int(p) for p in os.listdir("/proc") if p.isdigit()}
    frontier, seen = [pid], set()
    while frontier:
        parent = frontier.pop()
        for child in children - seen:
            try:
                stat = Path(f"/proc/{child}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                seen.add(child)
                frontier.append(child)
                try:
                    command = Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace")
                except OSError:
                    continue
                if "java" in command and marker in command:
                    return child
    raise AssertionError(f"no {kind} JVM under process {pid}")


@contextmanager
def writer_and_standby(config: Path, first: Path, second: Path, flow: str) -> Iterator[tuple[subprocess.Popen,
                                                                                             subprocess.Popen]]:
    """Two instances of the same file, each with its own state folder: the first writes ``flow``, the
    second waits as its standby. Both are killed at the end, whatever happened."""
    started: list[subprocess.Popen] = []
    try:
        started.append(start(config, first))
        wait_role(first, flow, "writer", 120)
        started.append(start(config, second))
        wait_role(second, flow, "standby", 120)
        yield started[0], started[1]
    finally:
        for proc in started:
            if proc.poll() is None:
                kill9(proc)
