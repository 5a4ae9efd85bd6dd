"""A local schema registry beside a local cluster: Apicurio Registry (in memory), whose Confluent-
compatible API is at ``/apis/ccompat/v7``; a detached process of its own like the broker, its pid,
port and log in the cluster's folder (``registry/``). For demos and the schema drills (ADR 0028)."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

from mirrorspark import paths
from mirrorspark.errors import OperationalError

API = "/apis/ccompat/v7"
SERVE = "apicurio-registry-app"  # in the process's command line: how its pid is told from a reused one


class RegistryStartError(OperationalError):
    """The local registry did not start (no jar, a port taken, a JVM that exited)."""


def url(port: int, *, tls: bool = False) -> str:
    return f"{'https' if tls else 'http'}://127.0.0.1:{port}{API}"


def _pid_file(folder: Path) -> Path:
    return folder / "registry" / "registry.pid"


def running_port(folder: Path) -> int | None:
    """The port of this cluster's registry when its process runs."""
    meta = folder / "registry" / "registry.json"
    pid = _pid_file(folder)
    if not meta.is_file() or not pid.is_file():
        return None
    if not _alive(int(pid.read_text()), folder):
        return None
    return int(json.loads(meta.read_text())["port"])


def ensure(folder: Path, *, java: str, port: int, timeout: float = 120.0,
           tls: tuple[Path, Path] | None = None) -> int:
    """Start the registry unless it runs; return its port once its API answers. ``tls``: a PEM
    certificate and key, the API then answers HTTPS only on ``port`` (a registry behind TLS, as in production)."""
    found = running_port(folder)
    if found is not None:
        return found
    try:
        jar = paths.schema_registry_jar()
    except paths.SetupMissing as exc:
        raise RegistryStartError(str(exc)) from None
    (folder / "registry").mkdir(parents=True, exist_ok=True)
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    log = (folder / "logs" / "registry.log").open("ab")
    serve = [f"-Dquarkus.http.port={port}"] if tls is None else [
        f"-Dquarkus.http.ssl-port={port}", "-Dquarkus.http.insecure-requests=disabled", "-Dquarkus.http.port=0",
        f"-Dquarkus.http.ssl.certificate.files={tls[0]}", f"-Dquarkus.http.ssl.certificate.key-files={tls[1]}"]
    proc = subprocess.Popen([java, "-Xmx256m", *serve, "-Dquarkus.http.host=127.0.0.1",
                             f"-Dmirrorspark.cluster.folder={folder}", "-jar", str(jar)],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                            cwd=jar.parent)
    log.close()
    _pid_file(folder).write_text(str(proc.pid))
    (folder / "registry" / "registry.json").write_text(json.dumps({"port": port}))
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RegistryStartError(f"the schema registry of {folder.name} exited with code {proc.returncode}; see "
                                     f"{folder / 'logs' / 'registry.log'}")
        try:
            trust = None if tls is None else ssl.create_default_context(cafile=str(tls[0]))
            with urllib.request.urlopen(url(port, tls=tls is not None) + "/subjects", timeout=2, context=trust):
                return port
        except OSError:
            if time.monotonic() > deadline:
                stop(folder)
                raise RegistryStartError(f"the schema registry of {folder.name} did not answer on port {port} within "
                                         f"{timeout:.0f} s; see {folder / 'logs' / 'registry.log'}") from None
            time.sleep(0.5)


def stop(folder: Path, timeout: float = 30.0) -> bool:
    """Stop this cluster's registry; False when none ran."""
    pid_file = _pid_file(folder)
    if not pid_file.is_file():
        return False
    pid = int(pid_file.read_text())
    ran = _alive(pid, folder)
    if ran:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(pid, folder) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.2)
        if _alive(pid, folder):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _reap(pid)
    pid_file.unlink(missing_ok=True)
    return ran


def _alive(pid: int, folder: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return SERVE in cmdline and str(folder) in cmdline


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
