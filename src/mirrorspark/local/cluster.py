"""Start, stop and inspect real local Kafka clusters, one KRaft combined-mode JVM each.

Each cluster has a state folder ``<state>/local/<name>/`` holding its ``cluster.json``, its
``server.properties``, its data, its log and its pid file, so ``status`` and ``down`` work from any
later process.
"""
from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mirrorspark import jdk, paths
from mirrorspark.errors import OperationalError
from mirrorspark.local import oidc, registry, server_properties
from mirrorspark.local.security import (
    CLIENT_USER,
    Secrets,
    SecurityError,
    SecurityOptions,
    broker_jvm_options,
    broker_properties,
    client_properties,
    create_scram_user,
    token_endpoint_port,
    uses_scram,
)
from mirrorspark.private_files import write_private

DEFAULT_JVM_OPTS = ["-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"]
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class LocalClusterError(OperationalError):
    """A local cluster could not be started, stopped or found; the message says what to do."""


@dataclass(frozen=True)
class ClusterSpec:
    """What the user asked for: ``name`` or ``name:port``, and how its client listener is secured."""

    name: str
    port: int | None = None
    security: SecurityOptions = field(default_factory=SecurityOptions)
    schema_registry: bool = False  # a local schema registry beside the broker (``local.registry``)

    @classmethod
    def parse(cls, text: str, security: SecurityOptions | None = None,
              schema_registry: bool = False) -> ClusterSpec:
        name, _, port = text.partition(":")
        if not _NAME.match(name):
            raise LocalClusterError(f"invalid cluster name {name!r}: use letters, digits, '.', '_' or '-'")
        sec = security or SecurityOptions()
        if not port:
            return cls(name, None, sec, schema_registry)
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise LocalClusterError(f"invalid port {port!r} for cluster {name!r}: expected 1-65535")
        return cls(name, int(port), sec, schema_registry)


@dataclass
class RunningCluster:
    """A started cluster as recorded in its state folder."""

    name: str
    port: int
    controller_port: int
    cluster_id: str
    protocol: str = "PLAINTEXT"
    sasl_mechanism: str = "SCRAM-SHA-512"
    authorizer: bool = False
    internal_port: int | None = None
    pid: int | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def plain_bootstrap(self) -> str:
        """A PLAINTEXT address of the broker (the internal listener when the client one is secured)."""
        return f"127.0.0.1:{self.internal_port or self.port}"

    @property
    def security(self) -> SecurityOptions:
        return SecurityOptions(self.protocol, self.sasl_mechanism, self.authorizer)


def java_executable() -> str:
    """``$JAVA_HOME/bin/java`` or ``java`` on PATH."""
    found = jdk.find_tool("java")
    if not found:
        raise LocalClusterError(jdk.JAVA_MISSING)
    return found


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def process_alive(pid: int, *markers: str) -> bool:
    """True if ``pid`` runs with every marker in its command line (guards against a recycled pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return all(marker in cmdline for marker in markers)


def pid_alive(pid: int, state_dir: Path) -> bool:
    """True if ``pid`` runs and is this cluster's broker."""
    return process_alive(pid, "kafka.Kafka", str(state_dir))


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class LocalClusters:
    """The local clusters kept under one state folder."""

    def __init__(self, state_dir: Path | None = None, jvm_opts: list[str] | None = None) -> None:
        self.root = (state_dir or paths.default_state_dir()).resolve() / "local"
        self.jvm_opts = jvm_opts if jvm_opts is not None else list(DEFAULT_JVM_OPTS)

    # -- layout -------------------------------------------------------------------------------
    def folder(self, name: str) -> Path:
        return self.root / name

    def _pid_file(self, name: str) -> Path:
        return self.folder(name) / "broker.pid"

    def _log_file(self, name: str) -> Path:
        return self.folder(name) / "logs" / "server.out"

    def load(self, name: str) -> RunningCluster | None:
        meta = self.folder(name) / "cluster.json"
        if not meta.is_file():
            return None
        cluster = RunningCluster(**json.loads(meta.read_text()))
        pid_file = self._pid_file(name)
        cluster.pid = int(pid_file.read_text().strip()) if pid_file.is_file() else None
        return cluster

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if (p / "cluster.json").is_file())

    # -- up ------------------------------------------------------------------------------------
    def up(self, specs: list[ClusterSpec], timeout: float = 90.0) -> list[RunningCluster]:
        """Start each cluster not already running; return when every broker answers an admin call."""
        java = java_executable()
        try:  # an installed wheel fetches them on first use: before any folder is prepared
            paths.kafka_libs()
        except paths.SetupMissing as exc:
            raise LocalClusterError(str(exc)) from None
        started: list[tuple[RunningCluster, subprocess.Popen[bytes]]] = []
        result: list[RunningCluster] = []
        for spec in specs:
            running = self._running(spec.name)
            if running is not None:
                if spec.port is not None and spec.port != running.port:
                    raise LocalClusterError(
                        f"cluster {spec.name!r} already runs on port {running.port}, not {spec.port}; "
                        "run `mirrorspark local down` first"
                    )
                self._check_same_security(spec, running)
                result.append(running)
                continue
            cluster = self._prepare(spec, java)
            proc = self._launch(cluster, java)
            started.append((cluster, proc))
            result.append(cluster)
        by_name = {spec.name: spec for spec in specs}
        for cluster, proc in started:
            ready = self._ready_or_again(cluster, proc, by_name[cluster.name], java, timeout)
            result[result.index(cluster)] = ready
            self._create_users(ready, timeout)
        for cluster in result:
            self._serve_tokens(cluster)
        for spec in specs:
            if spec.schema_registry:
                self._serve_schemas(spec.name, java)
        return result

    def _serve_schemas(self, name: str, java: str) -> None:
        """The cluster's schema registry, a detached process of its own like the broker (``local.registry``)."""
        folder = self.folder(name)
        try:
            registry.ensure(folder, java=java, port=registry.running_port(folder) or free_port())
        except registry.RegistryStartError as exc:
            raise LocalClusterError(f"cluster {name!r}: {exc}") from None

    def registry_url(self, name: str) -> str | None:
        """The URL of cluster ``name``'s local schema registry, None when none runs."""
        port = registry.running_port(self.folder(name))
        return None if port is None else registry.url(port)

    def _ready_or_again(self, cluster: RunningCluster, proc: subprocess.Popen[bytes], spec: ClusterSpec, java: str,
                        timeout: float, attempts: int = 3) -> RunningCluster:
        """Wait for the broker; one that lost a port to another process between the port's check and its
        bind (two test workers start clusters at once) is started again on free ports."""
        for attempt in range(attempts):
            try:
                self._await_ready(cluster, proc, timeout)
                return cluster
            except LocalClusterError as exc:
                if "Address already in use" not in str(exc) or attempt == attempts - 1 or spec.port is not None:
                    raise
            cluster = self._prepare(spec, java)  # the taken port is not free now: others are chosen
            proc = self._launch(cluster, java)
        return cluster

    def _serve_tokens(self, cluster: RunningCluster) -> None:
        """An OAUTHBEARER cluster's token endpoint, a detached process of its own like the broker."""
        if not (cluster.security.uses_sasl and cluster.security.sasl_mechanism == "OAUTHBEARER"):
            return
        folder = self.folder(cluster.name)
        pid_file = folder / "oidc" / "endpoint.pid"
        if pid_file.is_file() and process_alive(int(pid_file.read_text()), oidc.SERVE, str(folder)):
            return
        port = token_endpoint_port(folder)
        log = (folder / "logs" / "oidc.log").open("ab")
        proc = subprocess.Popen([sys.executable, "-m", oidc.SERVE, str(folder), str(port), CLIENT_USER],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        pid_file.write_text(str(proc.pid))
        deadline = time.monotonic() + 15
        while not _port_open(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise LocalClusterError(f"cluster {cluster.name!r}: its token endpoint did not start on port {port}; "
                                        f"see {folder / 'logs' / 'oidc.log'}")
            time.sleep(0.1)

    def _stop_tokens(self, name: str) -> None:
        pid_file = self.folder(name) / "oidc" / "endpoint.pid"
        if pid_file.is_file():
            pid = int(pid_file.read_text())
            if process_alive(pid, oidc.SERVE, str(self.folder(name))):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
                reap(pid)
            pid_file.unlink(missing_ok=True)

    def _create_users(self, cluster: RunningCluster, timeout: float) -> None:
        """The SCRAM client user, once the broker answers (never on a command line)."""
        if not uses_scram(cluster.security):
            return
        try:
            create_scram_user(cluster.security, self.folder(cluster.name), cluster.plain_bootstrap, cluster.bootstrap,
                              Secrets.load_or_create(self.folder(cluster.name)), timeout)
        except SecurityError as exc:
            raise LocalClusterError(f"cluster {cluster.name!r}: {exc}") from None

    def _running(self, name: str) -> RunningCluster | None:
        cluster = self.load(name)
        if cluster is None or cluster.pid is None:
            return None
        if pid_alive(cluster.pid, self.folder(name)):
            return cluster
        # Stale pid file (crash, reboot): the broker is gone, so starting afresh is safe.
        self._pid_file(name).unlink(missing_ok=True)
        return None

    def _check_same_security(self, spec: ClusterSpec, existing: RunningCluster) -> None:
        if spec.security != existing.security:
            raise LocalClusterError(
                f"cluster {spec.name!r} was created with {_describe(existing.security)}, not "
                f"{_describe(spec.security)}; run `mirrorspark local down --purge {spec.name}` first"
            )

    def client_settings(self, name: str) -> dict[str, str]:
        """Java-style client settings (``bootstrap.servers`` and security) for cluster ``name``."""
        cluster = self.load(name)
        if cluster is None:
            raise LocalClusterError(f"no local cluster named {name!r} under {self.root}")
        props = {"bootstrap.servers": cluster.bootstrap}
        if (schemas := self.registry_url(name)) is not None:
            props["schema.registry.url"] = schemas
        if cluster.security.secured:
            props.update(client_properties(cluster.security, self.folder(name),
                                           Secrets.load_or_create(self.folder(name))))
        return props

    def _prepare(self, spec: ClusterSpec, java: str) -> RunningCluster:
        folder = self.folder(spec.name)
        previous = self.load(spec.name)
        if previous is not None:
            self._check_same_security(spec, previous)
        port = spec.port or (previous.port if previous and port_is_free(previous.port) else free_port())
        if not port_is_free(port):
            raise LocalClusterError(
                f"port {port} on 127.0.0.1 is already in use; pick another with `{spec.name}:PORT`"
            )
        controller_port = previous.controller_port if previous and port_is_free(previous.controller_port) else 0
        while controller_port in (0, port):
            controller_port = free_port()
        internal_port = None
        if spec.security.secured:
            internal_port = previous.internal_port if previous and previous.internal_port and \
                port_is_free(previous.internal_port) else 0
            while internal_port in (0, port, controller_port):
                internal_port = free_port()
        cluster_id = previous.cluster_id if previous else _new_cluster_id()
        (folder / "logs").mkdir(parents=True, exist_ok=True)
        (folder / "data").mkdir(parents=True, exist_ok=True)
        sec = spec.security
        cluster = RunningCluster(spec.name, port, controller_port, cluster_id, sec.protocol, sec.sasl_mechanism,
                                 sec.authorizer, internal_port)
        (folder / "cluster.json").write_text(json.dumps({k: v for k, v in asdict(cluster).items() if k != "pid"}))
        secret = Secrets.load_or_create(folder)
        try:
            extra = broker_properties(sec, folder, port, internal_port or 0, controller_port, secret)
        except SecurityError as exc:
            raise LocalClusterError(f"cluster {spec.name!r}: {exc}") from None
        # Holds keystore passwords and JAAS entries: private from creation.
        write_private(folder / "server.properties", server_properties.render(port, controller_port, folder / "data",
                                                                             extra))
        (folder / "log4j2.properties").write_text(server_properties.LOG4J2)
        if sec.secured:
            write_private(folder / "client.properties",
                          "".join(f"{k}={v}\n" for k, v in self.client_settings(spec.name).items()))
        self._format(cluster, java)
        return cluster

    def _classpath_args(self, name: str) -> list[str]:
        folder = self.folder(name)
        return [
            "-cp", f"{paths.kafka_libs()}/*",
            f"-Dlog4j2.configurationFile={folder / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={folder / 'logs'}",
        ]

    def _format(self, cluster: RunningCluster, java: str) -> None:
        folder = self.folder(cluster.name)
        cmd = [
            java, "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
            *self._classpath_args(cluster.name),
            "kafka.tools.StorageTool", "format", "--config", str(folder / "server.properties"),
            f"--cluster-id={cluster.cluster_id}", "--standalone", "--ignore-formatted",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise LocalClusterError(
                f"formatting storage of cluster {cluster.name!r} failed (exit {done.returncode}):\n"
                f"{(done.stderr or done.stdout).strip()[-2000:]}"
            )

    def _launch(self, cluster: RunningCluster, java: str) -> subprocess.Popen[bytes]:
        folder = self.folder(cluster.name)
        if cluster.security.uses_sasl and cluster.security.sasl_mechanism == "GSSAPI":
            from mirrorspark.local import kerberos

            try:
                kerberos.start_kdc(folder)  # the broker logs in to it as it starts
            except kerberos.KerberosError as exc:
                raise LocalClusterError(f"cluster {cluster.name!r}: {exc}") from None
        log = self._log_file(cluster.name).open("ab")
        proc = subprocess.Popen(
            [java, *self.jvm_opts, *broker_jvm_options(cluster.security, folder), *self._classpath_args(cluster.name),
             "kafka.Kafka",
             str(folder / "server.properties")],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        log.close()
        cluster.pid = proc.pid
        self._pid_file(cluster.name).write_text(str(proc.pid))
        return proc

    def _await_ready(self, cluster: RunningCluster, proc: subprocess.Popen[bytes], timeout: float) -> None:
        from mirrorspark.control.admin import broker_answers, group_coordinator_ready

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self._pid_file(cluster.name).unlink(missing_ok=True)
                raise LocalClusterError(
                    f"broker of cluster {cluster.name!r} exited with code {proc.returncode} while starting; "
                    f"last lines of {self._log_file(cluster.name)}:\n{tail(self._log_file(cluster.name))}"
                )
            if _port_open(cluster.port) and broker_answers(cluster.plain_bootstrap, timeout=2.0) \
                    and group_coordinator_ready(cluster.plain_bootstrap, timeout=2.0):
                return
            time.sleep(0.3)
        self._stop_pid(cluster.name, cluster.pid)
        raise LocalClusterError(
            f"broker of cluster {cluster.name!r} did not answer within {timeout:.0f} s; last lines of its log:\n"
            f"{tail(self._log_file(cluster.name))}"
        )

    # -- down / status --------------------------------------------------------------------------
    def down(self, names: list[str] | None = None, purge: bool = False, timeout: float = 60.0) -> list[str]:
        """Stop the named (default: all) clusters by pid and wait; return one line per cluster."""
        lines = []
        for name in names or self.names():
            cluster = self.load(name)
            if cluster is None:
                raise LocalClusterError(f"no local cluster named {name!r} under {self.root}")
            if cluster.pid is None:
                lines.append(f"{name}: not running")
            elif not pid_alive(cluster.pid, self.folder(name)):
                self._pid_file(name).unlink(missing_ok=True)
                lines.append(f"{name}: stale pid file removed (process {cluster.pid} was not running)")
            else:
                self._stop_pid(name, cluster.pid, timeout)
                lines.append(f"{name}: stopped (pid {cluster.pid})")
            self._stop_tokens(name)
            if registry.stop(self.folder(name)):
                lines.append(f"{name}: schema registry stopped")
            from mirrorspark.local import kerberos

            kerberos.stop_kdc(self.folder(name))
            if purge:
                shutil.rmtree(self.folder(name), ignore_errors=True)
        return lines

    def _stop_pid(self, name: str, pid: int | None, timeout: float = 60.0) -> None:
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while pid_alive(pid, self.folder(name)) and time.monotonic() < deadline:
            reap(pid)
            time.sleep(0.2)
        if pid_alive(pid, self.folder(name)):
            os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)
            reap(pid)
        self._pid_file(name).unlink(missing_ok=True)

    def status(self) -> list[tuple[str, str]]:
        """(name, state) per known cluster: running with address, stopped, or stale pid file."""
        rows = []
        for name in self.names():
            cluster = self.load(name)
            assert cluster is not None
            if cluster.pid is None:
                rows.append((name, "stopped"))
            elif pid_alive(cluster.pid, self.folder(name)):
                rows.append((name, f"running {cluster.bootstrap} pid {cluster.pid}"))
            else:
                rows.append((name, f"stale pid file (process {cluster.pid} is gone); run `mirrorspark local down`"))
        return rows


def _describe(options: SecurityOptions) -> str:
    text = options.protocol + (f"/{options.sasl_mechanism}" if options.uses_sasl else "")
    return text + (" with an authorizer" if options.authorizer else " without an authorizer")


def _new_cluster_id() -> str:
    """22-character base64url UUID, as ``kafka-storage random-uuid`` prints (may start with '-')."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def reap(pid: int) -> None:
    """Collect a child's exit status so it does not linger as a zombie (when we started it)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
