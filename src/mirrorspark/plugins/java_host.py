"""A small JVM that hosts the Java plug-ins of an mm2.properties file, reached through py4j.

Why a JVM of its own rather than Spark's driver: ``validate`` and the control plane's first plan run
before (or without) Spark, and a plug-in must answer the same there as in the run. The JVM starts
on the first Java plug-in a process needs, with Kafka's MM2 jars (the interfaces) and the plug-in
places (``plugins.jars``) on its classpath, and exits with the process (py4j's die-on-exit: its
standard input closes). Calls are answered in a few hundred microseconds; the wrappers cache what
a plug-in says about a name, as MM2's callers ask again and again.
"""
from __future__ import annotations

import atexit
import contextlib
import logging
import os
import subprocess
import threading
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mirrorspark import jdk, paths
from mirrorspark.errors import ConfigError, OperationalError

log = logging.getLogger(__name__)

MIRROR = "org.apache.kafka.connect.mirror."
INTERFACES = {"replication.policy.class": MIRROR + "ReplicationPolicy",
              "topic.filter.class": MIRROR + "TopicFilter",
              "group.filter.class": MIRROR + "GroupFilter",
              "config.property.filter.class": MIRROR + "ConfigPropertyFilter"}


class PluginHostUnavailable(OperationalError):
    """The plug-in JVM did not start: the message names java and the classpath's first entries."""


class JavaHost:
    """One py4j gateway to a JVM whose classpath holds Kafka's MM2 jars and the given plug-in places."""

    def __init__(self, classpath: list[Path]) -> None:
        from py4j.java_gateway import GatewayParameters, JavaGateway, find_jar_path

        java = jdk.find_tool("java")
        if java is None:
            raise PluginHostUnavailable(jdk.JAVA_MISSING)
        self.classpath = classpath
        self.said: deque[str] = deque(maxlen=20)  # the JVM's last lines on stderr, for the message if it dies
        # Kafka's jars, and mirrorspark's code compiled against them (share groups), then the plug-in places.
        entries = [find_jar_path(), str(paths.kafka_libs() / "*"), str(paths.clients_jar()),
                   *(str(p) for p in classpath)]
        # C1 only, as Spark's JVMs (ADR 0017): this JVM runs control-plane calls, never the record path, and
        # C2 compiling them was a third of a quiet 3,000-partition flow's CPU (ADR 0027).
        command = [java, "-classpath", os.pathsep.join(entries), "-Xmx256m", "-Xss1m", "-XX:TieredStopAtLevel=1",
                   "-XX:+UseSerialGC", *jdk.kerberos_options(),
                   "py4j.GatewayServer", "--die-on-broken-pipe", "--enable-auth", "0"]
        try:
            # A process group of its own: a Ctrl-C or a SIGTERM to mirrorspark's group must not end the
            # JVM the graceful stop still asks (offset syncs, the lease); it ends with our standard input
            # (die-on-broken-pipe). Set by the kernel's spawn, not py4j's ``preexec_fn``: Python code run
            # in the forked child can finalize objects there, and a py4j connection finalized in the child
            # shuts down the socket it shares with this process (Spark's gateway saw its connections reset).
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, process_group=0)
        except OSError as exc:
            raise PluginHostUnavailable(f"the JVM for Java plug-ins did not start ({java}): {exc}") from None
        try:
            port = int(self.proc.stdout.readline())  # type: ignore[union-attr]
            token = self.proc.stdout.readline().decode().rstrip("\r\n")  # type: ignore[union-attr]
        except ValueError:  # it exited before saying its port: its own words say why
            self.proc.kill()
            said = self.proc.stderr.read().decode(errors="replace").strip().splitlines()  # type: ignore[union-attr]
            raise PluginHostUnavailable(f"the JVM for Java plug-ins did not start ({java}): "
                                        f"{said[-1] if said else 'no output'}") from None
        for stream, keep in ((self.proc.stdout, None), (self.proc.stderr, self.said)):
            threading.Thread(target=_drain, args=(stream, keep), daemon=True, name="java-host-output").start()
        self.gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port, auth_token=token,
                                                                        auto_convert=True))
        _clients.add(id(self.gateway._gateway_client))
        own_errors()
        log.info("Java plug-ins and clients: JVM %d started with %d plug-in place(s)", self.proc.pid, len(classpath))

    def alive(self) -> bool:
        """False once the JVM has exited (killed, out of memory): the next ``host_for`` starts another."""
        return self.proc.poll() is None

    def instance(self, key: str, class_name: str, settings: Mapping[str, str]) -> Any:
        """A new ``class_name`` of the interface ``key`` plugs into, configured with ``settings``
        as MM2 configures it (its ``configure`` with the connector's settings)."""
        from py4j.protocol import Py4JError

        jvm = self.gateway.jvm
        interface = INTERFACES[key]
        try:
            cls = jvm.java.lang.Class.forName(class_name)
        except Py4JError:
            raise ConfigError(f"{key}={class_name!r}: the class is not on the plug-in classpath "
                              f"({', '.join(str(p) for p in self.classpath) or 'empty'})", key) from None
        if not jvm.java.lang.Class.forName(interface).isAssignableFrom(cls):
            raise ConfigError(f"{key}={class_name!r} does not implement {interface}", key)
        try:
            made = cls.getDeclaredConstructor(self.gateway.new_array(jvm.java.lang.Class, 0)) \
                .newInstance(self.gateway.new_array(jvm.java.lang.Object, 0))
            if jvm.java.lang.Class.forName("org.apache.kafka.common.Configurable").isInstance(made):
                conf = jvm.java.util.HashMap()  # MM2 configures what is Configurable, with the connector's settings
                for name, value in settings.items():
                    conf.put(name, value)
                made.configure(conf)
        except Py4JError as exc:
            raise ConfigError(f"{key}={class_name!r} failed to initialise: {java_message(exc)}", key) from None
        log.info("%s: Java class %s loaded", key, class_name)
        return made

    def close(self) -> None:
        self.gateway.shutdown()


def _drain(stream: Any, keep: deque[str] | None) -> None:
    """Read the JVM's output to its end (a full pipe would stop it); ``keep`` its last lines."""
    for line in iter(stream.readline, b""):
        if keep is not None:
            keep.append(line.decode(errors="replace").rstrip())


class PluginInstance:
    """A configured plug-in object that outlives its JVM: if the JVM died, the next call makes the
    object again, configured as before, in the JVM ``host_for`` starts in its place (a policy or a
    filter answers from its name alone, so nothing else is carried over)."""

    def __init__(self, classpath: list[Path], key: str, class_name: str, settings: Mapping[str, str]) -> None:
        self._classpath = classpath
        self._made_with = (key, class_name, dict(settings))
        self._again = threading.Lock()
        self._host = host_for(classpath)
        self._object = self._host.instance(*self._made_with)

    def __getattr__(self, name: str) -> Any:  # only names this class does not have: the Java object's methods
        if not self._host.alive():
            with self._again:
                if not self._host.alive():
                    self._host = host_for(self._classpath)
                    self._object = self._host.instance(*self._made_with)
        return getattr(self._object, name)


def java_message(exc: Exception) -> str:
    """The Java exception's first line (py4j adds the whole trace and its own text)."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return str(java.toString())
        except Exception:  # noqa: BLE001 - the gateway may be gone: fall back to py4j's text
            pass
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


_hosts: dict[tuple[str, ...], JavaHost] = {}
_lock = threading.Lock()
_clients: set[int] = set()  # the py4j gateway clients of these JVMs (ids)
_installed: list[Any] = []  # the dispatcher installed last, and what it passes Spark's calls to


def own_errors() -> None:
    """Keep pyspark's exception hook off this JVM's calls. pyspark replaces py4j's answer reader for
    every gateway of the process (``install_exception_handler``, again at each session) with one that
    asks Spark's JVM about a Java exception: asked about an object of this JVM, it fails or finds
    another object. A reader of ours sends this JVM's answers to py4j's own reader and the rest to
    whatever pyspark installed; checked before each call, as pyspark may install its hook again."""
    import py4j.java_gateway as gateway
    import py4j.protocol as protocol

    current = gateway.get_return_value
    if _installed and current is _installed[0]:
        return
    spark = current

    def answer(result: Any, client: Any, *rest: Any) -> Any:
        if id(client) in _clients:
            return protocol.get_return_value(result, client, *rest)
        return spark(result, client, *rest)

    _installed[:] = [answer]
    gateway.get_return_value = answer


def host_for(classpath: list[Path]) -> JavaHost:
    """The process's JVM for this plug-in classpath, started on first use, and again if it died: a
    replicator outlives a JVM that was killed or ran out of memory, as it outlives a broker. A JVM reads
    the Kerberos configuration (``KRB5_CONFIG``) once, when it starts: another one gets a JVM of its own."""
    key = (*(str(p) for p in classpath), os.environ.get("KRB5_CONFIG", ""))
    with _lock:
        host = _hosts.get(key)
        if host is not None and not host.alive():
            last = " | ".join(line for line in list(host.said)[-3:] if line)
            log.error("the JVM of Java plug-ins and clients (pid %d) exited with code %s%s; starting another",
                      host.proc.pid, host.proc.returncode, f" ({last})" if last else "")
            with contextlib.suppress(Exception):
                host.gateway.shutdown()
            host = None
        if host is None:
            host = _hosts[key] = JavaHost(classpath)
        return host


@atexit.register
def _close_all() -> None:
    for host in _hosts.values():
        with contextlib.suppress(Exception):  # exiting: the JVM also dies with our standard input
            host.close()
