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
import threading
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
        from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

        java = jdk.find_tool("java")
        if java is None:
            raise PluginHostUnavailable(jdk.JAVA_MISSING)
        self.classpath = classpath
        entries = [str(paths.kafka_libs() / "*"), *(str(p) for p in classpath)]
        try:
            port, token = launch_gateway(classpath=os.pathsep.join(entries),
                                         javaopts=["-Xmx256m", "-Xss1m", *jdk.kerberos_options()],
                                         die_on_exit=True, java_path=java, enable_auth=True)
        except Exception as exc:  # noqa: BLE001 - py4j raises bare exceptions when the JVM does not come up
            raise PluginHostUnavailable(f"the JVM for Java plug-ins did not start ({java}): {exc}") from None
        self.gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port, auth_token=token,
                                                                        auto_convert=True))
        log.info("Java plug-ins: JVM started with %d plug-in place(s)", len(classpath))

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


def host_for(classpath: list[Path]) -> JavaHost:
    """The process's JVM for this plug-in classpath, started on first use."""
    key = tuple(str(p) for p in classpath)
    with _lock:
        if key not in _hosts:
            _hosts[key] = JavaHost(classpath)
        return _hosts[key]


@atexit.register
def _close_all() -> None:
    for host in _hosts.values():
        with contextlib.suppress(Exception):  # exiting: the JVM also dies with our standard input
            host.close()
