"""A real Spark standalone cluster (one master, N workers) on 127.0.0.1, started from the pip-installed pyspark.

The wheel has no ``start-master.sh``/``start-worker.sh``, so the daemons run through ``bin/spark-class``.
Everything lives in ``<state>/spark/`` (``spark.json``, pid files, logs, worker work folders) so ``status``
and ``down`` work from any later process. Each daemon gets its own session: a Ctrl-C of the command that
started it does not reach it, and stopping a worker's process group also stops the executors it launched.

Any local user can reach 127.0.0.1, so the daemons answer only drivers that know the cluster's secret
(``spark.authenticate``) and encrypt every connection (``spark.network.crypto.enabled``). The secret is
on no command line: the daemons read it from their properties file (``daemon.conf``, 0600; Spark reads
a secret file only on Kubernetes), a driver gets it from ``driver_auth`` and hands it to its JVM
through py4j, and the workers give it to their executors in their environment, which only this user
can read.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mirrorspark import paths
from mirrorspark.local.cluster import (
    LocalClusterError,
    free_port,
    java_executable,
    port_is_free,
    process_alive,
    reap,
    tail,
)
from mirrorspark.private_files import write_private

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
DAEMON_MEMORY = "256m"
DAEMON_JAVA_OPTS = "-XX:+UseSerialGC -XX:-UsePerfData"
_MEMORY = re.compile(r"^[1-9][0-9]*[kmgt]b?$", re.IGNORECASE)
DAEMON_CONF = "daemon.conf"
# Passed as --properties-file: it also names this folder in the daemons' command lines (see _daemon_alive
# and driver_auth). It holds the secret, so it is private to this user.
_DAEMON_CONF = """\
# Settings of the local Spark master and workers (written by mirrorspark local spark up).
spark.master.rest.enabled false
# Finished applications' work folders (with the jars shipped to them) are removed after a day.
spark.worker.cleanup.enabled true
spark.worker.cleanup.appDataTtl 86400
# Only drivers that know this secret join, and every connection is encrypted (no fallback to SASL,
# which would authenticate without encrypting).
spark.authenticate true
spark.authenticate.secret {secret}
spark.network.crypto.enabled true
spark.network.crypto.saslFallback false
"""
SECRET_KEY = "spark.authenticate.secret"
_LOOPBACK = ("127.0.0.1", "localhost")


def valid_memory(text: str) -> bool:
    """A size Spark's ``--memory`` accepts, with its unit (``512m``, ``2g``)."""
    return bool(_MEMORY.match(text))


def spark_home() -> Path:
    """The pyspark package folder: the wheel ships ``bin/spark-class`` and ``jars/`` there."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``: a worker and the executors it launched."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


@dataclass
class SparkLayout:
    """What ``spark.json`` records: addresses and shape of the cluster, kept after ``down`` for reuse."""

    port: int
    webui_port: int
    workers: int
    cores: int
    memory: str
    worker_webui_ports: list[int] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def web_ui(self) -> str:
        return f"http://127.0.0.1:{self.webui_port}"


class LocalSpark:
    """The local Spark standalone cluster kept under one state folder."""

    def __init__(self, state_dir: Path | None = None) -> None:
        self.folder = (state_dir or paths.default_state_dir()).resolve() / "spark"

    # -- layout -------------------------------------------------------------------------------
    def daemons(self, layout: SparkLayout) -> list[str]:
        """Daemon names in start order: ``master``, ``worker-1`` .. ``worker-N``."""
        return ["master", *(f"worker-{i}" for i in range(1, layout.workers + 1))]

    def log_file(self, name: str) -> Path:
        return self.folder / f"{name}.log"

    def _pid_file(self, name: str) -> Path:
        return self.folder / f"{name}.pid"

    def pid(self, name: str) -> int | None:
        pid_file = self._pid_file(name)
        return int(pid_file.read_text().strip()) if pid_file.is_file() else None

    def load(self) -> SparkLayout | None:
        meta = self.folder / "spark.json"
        if not meta.is_file():
            return None
        data = json.loads(meta.read_text())
        return SparkLayout(**{k: v for k, v in data.items() if k not in ("master_url", "web_ui")})

    def _save(self, layout: SparkLayout) -> None:
        data = {"master_url": layout.master_url, "web_ui": layout.web_ui, **asdict(layout)}
        (self.folder / "spark.json").write_text(json.dumps(data, indent=2) + "\n")

    def _daemon_alive(self, pid: int, name: str) -> bool:
        """True if ``pid`` runs and is this folder's daemon ``name``."""
        return process_alive(pid, MASTER_CLASS if name == "master" else WORKER_CLASS, str(self.folder / DAEMON_CONF))

    # -- up ------------------------------------------------------------------------------------
    def up(self, workers: int = 2, cores: int = 1, memory: str = "1g", port: int = 0,
           timeout: float = 90.0) -> str:
        """Start the master and ``workers`` workers unless already running; return the master URL once
        the master reports every worker ALIVE."""
        if workers < 1 or cores < 1:
            raise LocalClusterError(f"need at least one worker and one core (got {workers} workers, {cores} cores)")
        if not valid_memory(memory):
            raise LocalClusterError(f"invalid worker memory {memory!r}: expected a size such as 512m or 2g")
        running = self._running()
        if running is not None:
            return self._same_as_running(running, workers, cores, memory, port)
        java_executable()  # a clear error before spark-class says "JAVA_HOME is not set"
        layout = self._prepare(workers, cores, memory, port)
        started: list[tuple[str, subprocess.Popen[bytes]]] = []
        deadline = time.monotonic() + timeout
        try:
            started.append(("master", self._launch("master", self._master_args(layout))))
            # A worker that finds no master waits ~10 s before retrying: start workers once it answers.
            self._await(started, deadline, lambda: master_alive(layout.web_ui), "the Spark master did not answer")
            for i, name in enumerate(self.daemons(layout)[1:]):
                started.append((name, self._launch(name, self._worker_args(layout, name, i))))
            self._await(started, deadline, lambda: alive_workers(layout.web_ui) >= layout.workers,
                         f"the Spark master did not report {layout.workers} workers ALIVE (worker logs are in "
                         f"{self.folder})")
        except BaseException:
            for name, proc in reversed(started):
                self._stop(name, proc.pid, timeout=10.0)
            raise
        return layout.master_url

    def _running(self) -> SparkLayout | None:
        """The layout if any daemon still runs; stale pid files are removed on the way."""
        layout = self.load()
        if layout is None:
            return None
        alive = []
        for name in self.daemons(layout):
            pid = self.pid(name)
            if pid is not None and self._daemon_alive(pid, name):
                alive.append(name)
            else:
                self._pid_file(name).unlink(missing_ok=True)
        if not alive:
            return None
        if len(alive) < len(self.daemons(layout)):
            gone = ", ".join(n for n in self.daemons(layout) if n not in alive)
            raise LocalClusterError(
                f"the local Spark cluster is only partly running ({gone} stopped); "
                "run `mirrorspark local spark down` first"
            )
        return layout

    def _same_as_running(self, running: SparkLayout, workers: int, cores: int, memory: str, port: int) -> str:
        have = _shape(running.workers, running.cores, running.memory)
        wanted = _shape(workers, cores, memory)
        if (wanted, port or running.port) != (have, running.port):
            raise LocalClusterError(
                f"a local Spark cluster already runs at {running.master_url} with {have}, not "
                f"{wanted}{f' on port {port}' if port else ''}; run `mirrorspark local spark down` first"
            )
        return running.master_url

    def _prepare(self, workers: int, cores: int, memory: str, port: int) -> SparkLayout:
        previous = self.load()
        if port and not port_is_free(port):
            raise LocalClusterError(f"port {port} on 127.0.0.1 is already in use; pick another with --port")
        taken: set[int] = set()
        port = port or self._reuse(previous.port if previous else None, taken)
        taken.add(port)
        webui = self._reuse(previous.webui_port if previous else None, taken)
        old_ui = previous.worker_webui_ports if previous else []
        worker_uis = [self._reuse(old_ui[i] if i < len(old_ui) else None, taken) for i in range(workers)]
        layout = SparkLayout(port, webui, workers, cores, memory, worker_uis)
        (self.folder / "work").mkdir(parents=True, exist_ok=True)
        # The secret is kept across restarts, so drivers given it by hand keep working.
        secret = _private_properties(self.folder / DAEMON_CONF).get(SECRET_KEY) or secrets.token_hex(32)
        write_private(self.folder / DAEMON_CONF, _DAEMON_CONF.format(secret=secret))
        self._save(layout)
        return layout

    @staticmethod
    def _reuse(previous: int | None, taken: set[int]) -> int:
        """The port used last time if still free (a pasted ``spark.master`` stays valid), else a free one."""
        port = previous if previous and previous not in taken and port_is_free(previous) else 0
        while port in taken or port == 0:
            port = free_port()
        taken.add(port)
        return port

    def _master_args(self, layout: SparkLayout) -> list[str]:
        return [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(layout.port),
                "--webui-port", str(layout.webui_port), "--properties-file", str(self.folder / DAEMON_CONF)]

    def _worker_args(self, layout: SparkLayout, name: str, index: int) -> list[str]:
        work = self.folder / "work" / name
        work.mkdir(parents=True, exist_ok=True)
        return [WORKER_CLASS, "--host", "127.0.0.1", "--cores", str(layout.cores), "--memory", layout.memory,
                "--webui-port", str(layout.worker_webui_ports[index]), "-d", str(work),
                "--properties-file", str(self.folder / DAEMON_CONF), layout.master_url]

    def _env(self) -> dict[str, str]:
        home = spark_home()
        opts = " ".join(filter(None, [os.environ.get("SPARK_DAEMON_JAVA_OPTS"), DAEMON_JAVA_OPTS]))
        return {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
            "SPARK_DAEMON_JAVA_OPTS": opts,
            # Executors inherit this environment. PySpark tasks still run the driver's PYSPARK_PYTHON (which
            # mirrorspark's session sets to its own interpreter): this keeps the two the same.
            "PYSPARK_PYTHON": sys.executable,
        }

    def _launch(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        with self.log_file(name).open("ab") as log:
            proc = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args], env=self._env(), cwd=self.folder,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        self._pid_file(name).write_text(str(proc.pid))
        return proc

    def _await(self, started: list[tuple[str, subprocess.Popen[bytes]]], deadline: float,
               ready: Callable[[], bool], failure: str) -> None:
        """Poll ``ready`` until ``deadline``; fail early, with its log, if a started daemon exits."""
        while True:
            for name, proc in started:
                if proc.poll() is not None:
                    raise LocalClusterError(
                        f"Spark {name} exited with code {proc.returncode} while starting; "
                        f"last lines of {self.log_file(name)}:\n{tail(self.log_file(name))}"
                    )
            if ready():
                return
            if time.monotonic() > deadline:
                raise LocalClusterError(
                    f"{failure} in time; last lines of {self.log_file('master')}:\n{tail(self.log_file('master'))}"
                )
            time.sleep(0.3)

    # -- down / status --------------------------------------------------------------------------
    def down(self, purge: bool = False, timeout: float = 30.0) -> list[str]:
        """Stop the workers (and their executors), then the master; return one line per daemon."""
        layout = self.load()
        if layout is None:
            lines = ["no local Spark cluster"]
        else:
            names = self.daemons(layout)
            lines = [self._down_one(name, timeout) for name in [*names[1:], names[0]]]
        if purge:
            shutil.rmtree(self.folder, ignore_errors=True)
        return lines

    def _down_one(self, name: str, timeout: float) -> str:
        pid = self.pid(name)
        if pid is None:
            return f"{name}: not running"
        if not self._daemon_alive(pid, name):
            self._pid_file(name).unlink(missing_ok=True)
            return f"{name}: stale pid file removed (process {pid} was not running)"
        self._stop(name, pid, timeout)
        return f"{name}: stopped (pid {pid})"

    def _stop(self, name: str, pid: int, timeout: float) -> None:
        """SIGTERM the daemon's process group (its executors too), SIGKILL what is left after ``timeout``."""
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while group_members(pid) and time.monotonic() < deadline:
                reap(pid)
                time.sleep(0.2)
            reap(pid)
            if not group_members(pid):
                break
        self._pid_file(name).unlink(missing_ok=True)

    def status(self) -> list[tuple[str, str]]:
        """(daemon, state) for the master and each worker: running with address, stopped, or stale pid file."""
        layout = self.load()
        if layout is None:
            return []
        rows = []
        for i, name in enumerate(self.daemons(layout)):
            pid = self.pid(name)
            if pid is None:
                rows.append((name, "stopped"))
            elif not self._daemon_alive(pid, name):
                rows.append((name, f"stale pid file (process {pid} is gone); run `mirrorspark local spark down`"))
            elif name == "master":
                rows.append((name, f"running at {layout.master_url}, web UI {layout.web_ui}, pid {pid}"))
            else:
                rows.append((name, f"running, web UI http://127.0.0.1:{layout.worker_webui_ports[i - 1]}, pid {pid}"))
        return rows


def driver_auth(master: str) -> dict[str, str]:
    """The settings a driver needs to join the local cluster whose master is ``master`` (its secret
    among them); empty for any other master, and for a cluster started without authentication. The
    cluster is found by its running master, whose command line names its folder, so a driver finds it
    whatever state dir each was started with."""
    folder = _master_folder(master)
    if folder is None:
        return {}
    conf = _private_properties(folder / DAEMON_CONF)
    if conf.get("spark.authenticate") != "true":  # started by an older mirrorspark: nothing to give
        return {}
    if not conf.get(SECRET_KEY):
        raise LocalClusterError(f"the local Spark cluster at {master} wants a secret, but {folder / DAEMON_CONF} "
                                "has none or is readable by other users; run `mirrorspark local spark down` and "
                                "`up` again")
    crypto = ("spark.network.crypto.enabled", "spark.network.crypto.saslFallback")
    return {"spark.authenticate": "true", SECRET_KEY: conf[SECRET_KEY], **{k: conf[k] for k in crypto if k in conf}}


def _master_folder(master: str) -> Path | None:
    """The folder of this user's local master listening at ``master`` (``spark://127.0.0.1:PORT``)."""
    host, _, port = master.removeprefix("spark://").rpartition(":")
    if not master.startswith("spark://") or host not in _LOOPBACK or not port.isdigit():
        return None
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if proc.stat().st_uid != os.getuid():
                continue
            args = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if MASTER_CLASS in args and _argument(args, "--port") == port:
            conf = _argument(args, "--properties-file")
            if conf is not None and Path(conf).name == DAEMON_CONF:
                return Path(conf).parent
    return None


def _argument(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args[:-1] else None


def _private_properties(path: Path) -> dict[str, str]:
    """The ``key value`` lines of a properties file this module wrote, but the secret only if the file
    is this user's and nobody else may read it (an older, world-readable one gets a new secret)."""
    try:
        info = path.lstat()
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    pairs = (line.split(None, 1) for line in lines if line.strip() and not line.lstrip().startswith("#"))
    conf = {pair[0]: pair[1].strip() if len(pair) > 1 else "" for pair in pairs}
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        conf.pop(SECRET_KEY, None)
    return conf


def master_state(web_ui: str, timeout: float = 2.0) -> dict | None:
    """The master's ``/json/`` document (workers, applications), or None if it does not answer yet."""
    try:
        with urllib.request.urlopen(f"{web_ui}/json/", timeout=timeout) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def master_alive(web_ui: str) -> bool:
    return (master_state(web_ui) or {}).get("status") == "ALIVE"


def alive_workers(web_ui: str) -> int:
    state = master_state(web_ui)
    return sum(1 for w in (state or {}).get("workers", []) if w.get("state") == "ALIVE")


def _shape(workers: int, cores: int, memory: str) -> str:
    return f"{workers} worker{'s' if workers != 1 else ''} x {cores} core{'s' if cores != 1 else ''} x {memory.lower()}"
