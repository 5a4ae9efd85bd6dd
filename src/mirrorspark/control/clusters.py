"""Cluster access for one process: an answering admin client and its librdkafka settings, once per alias.

Every flow and heartbeat pair of a process shares these, so a cluster is reached (and refused, naming
the keys to check, when it does not answer) before anything is created or copied.
"""
from __future__ import annotations

import contextlib
import threading
import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from mirrorspark.config.model import ClusterConfig
from mirrorspark.control.admin import admin_client
from mirrorspark.control.client_settings import admin_properties, admin_settings
from mirrorspark.control.groups import JavaGroups
from mirrorspark.control.java_clients import uses_java
from mirrorspark.errors import ClusterFailure, ConfigError, OperationalError
from mirrorspark.jvm_bridge import JvmGroupAdmin, SparkJvm

DRIVER_WAIT_S = 300.0  # a group request made while Spark starts waits this long for its driver


class ClusterUnreachable(ClusterFailure):
    """A configured cluster did not answer; the message names the alias and the keys to check."""


class CredentialsRefused(ConfigError):
    """The cluster answered and refused this client's credentials (a wrong secret, an expired token):
    no retry can fix it, the file must change."""


def _refusal(conf: dict[str, str], first: KafkaError) -> str | None:
    """Why the cluster refused the login, or None when it did not (down, a wrong address). An OIDC
    token that cannot be had shows only on the error callback, so a short probe listens for it."""
    if first.code() == KafkaError._AUTHENTICATION:
        return first.str()
    if uses_java(conf) or not str(conf.get("security.protocol", "")).upper().startswith("SASL_"):
        return None  # Kafka's Java client says _AUTHENTICATION itself
    seen: list[KafkaError] = []
    settings: dict[str, object] = {**conf, "error_cb": seen.append}
    probe = AdminClient(settings)  # type: ignore[arg-type]  # the stubs omit callables
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # callbacks are served by poll
        probe.poll(0.5)
        for error in seen:
            text = error.str()
            if error.code() == KafkaError._AUTHENTICATION or "OIDC token" in text or "uthentication failed" in text:
                return text
    return None


def reach(cluster: ClusterConfig, conf: dict[str, str], timeout: float = 15.0) -> AdminClient:
    """An admin client for ``cluster`` (librdkafka settings ``conf``) that has answered a metadata request."""
    try:
        admin = admin_client(conf)  # Kafka's Java client logs in here (a keytab, a login handler)
        admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        refused = _refusal(conf, exc.args[0])
        if refused is not None:
            key = f"{cluster.alias}.sasl.jaas.config"
            raise CredentialsRefused(
                f"cluster {cluster.alias!r} refused this client's credentials (check {key} and, with OAUTHBEARER, "
                f"{cluster.alias}.sasl.oauthbearer.token.endpoint.url): {refused}", key) from None
        raise ClusterUnreachable(
            f"cannot reach cluster {cluster.alias!r} at {cluster.bootstrap_servers} "
            f"(check {cluster.alias}.bootstrap.servers, its security settings ({cluster.alias}.security.protocol, "
            f"{cluster.alias}.ssl.*, {cluster.alias}.sasl.*) and that the cluster is up): {exc.args[0].str()}"
        ) from None
    return admin


class Clusters:
    """The clusters this process talks to, each reached once."""

    def __init__(self) -> None:
        self._found: dict[str, tuple[AdminClient, dict[str, str]]] = {}
        self._settings: dict[str, dict[str, str]] = {}
        self._groups: dict[str, JavaGroups] = {}
        self._driver: SparkJvm | None = None
        self._driver_known = threading.Event()  # set once Spark runs, or failed to start

    def driver_jvm(self) -> SparkJvm | None:
        """The driver JVM, once Spark runs (None before, or when it failed to start)."""
        return self._driver

    def use_jvm(self, jvm: SparkJvm | None) -> None:
        """The driver JVM, once Spark runs: group requests go through Kafka's Admin client there.
        None: Spark failed to start, and a request waiting for it fails now."""
        self._driver = jvm
        self._driver_known.set()

    def groups(self, cluster: ClusterConfig) -> JavaGroups:
        """``cluster``'s consumer groups through Kafka's Admin client in the driver JVM, made at the
        first request (the JVM may still be starting when a flow is assembled)."""
        if cluster.alias not in self._groups:
            def make(cluster: ClusterConfig = cluster) -> JvmGroupAdmin:
                # A flow without state is assembled while Spark starts, and may ask (a takeover's
                # committed progress) before it runs.
                self._driver_known.wait(DRIVER_WAIT_S)
                if self._driver is None:
                    raise OperationalError(f"the consumer groups of {cluster.alias} were asked, and Spark's driver "
                                           f"did not run within {DRIVER_WAIT_S:g} s")
                return self._driver.group_admin(admin_properties(cluster))

            self._groups[cluster.alias] = JavaGroups(admin=make, cluster=f"cluster {cluster.alias}")
        return self._groups[cluster.alias]

    def close(self) -> None:
        """Close the group clients (their JVM threads); at process stop, before Spark."""
        for groups in self._groups.values():
            with contextlib.suppress(OperationalError):  # the JVM is already gone: so are they
                groups.close()
        self._groups.clear()

    def settings(self, cluster: ClusterConfig) -> dict[str, str]:
        """The librdkafka settings of ``cluster``, resolved once, whether it answers or not (a client
        that reaches it by itself when it answers, as a lease's consumer, starts from these)."""
        if cluster.alias not in self._settings:
            self._settings[cluster.alias] = admin_settings(cluster)
        return dict(self._settings[cluster.alias])

    def admin(self, cluster: ClusterConfig) -> tuple[AdminClient, dict[str, str]]:
        """An answering admin client and the librdkafka settings of ``cluster``."""
        if cluster.alias not in self._found:
            conf = self.settings(cluster)
            self._found[cluster.alias] = (reach(cluster, conf), conf)
        return self._found[cluster.alias]

    def conf(self, alias: str) -> dict[str, str] | None:
        """librdkafka settings of a cluster already reached (a copy), or None."""
        found = self._found.get(alias)
        return dict(found[1]) if found is not None else None
