"""Cluster access for one process: an answering admin client and its librdkafka settings, once per alias.

Every flow and heartbeat pair of a process shares these, so a cluster is reached (and refused, naming
the keys to check, when it does not answer) before anything is created or copied.
"""
from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from mirrorspark.config.model import ClusterConfig
from mirrorspark.control.admin import admin_client
from mirrorspark.control.client_settings import admin_settings
from mirrorspark.errors import OperationalError


class ClusterUnreachable(OperationalError):
    """A configured cluster did not answer; the message names the alias and the keys to check."""


def reach(cluster: ClusterConfig, conf: dict[str, str], timeout: float = 15.0) -> AdminClient:
    """An admin client for ``cluster`` (librdkafka settings ``conf``) that has answered a metadata request."""
    admin = admin_client(conf)
    try:
        admin.list_topics(timeout=timeout)
    except KafkaException as exc:
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

    def admin(self, cluster: ClusterConfig) -> tuple[AdminClient, dict[str, str]]:
        """An answering admin client and the librdkafka settings of ``cluster``."""
        if cluster.alias not in self._found:
            conf = admin_settings(cluster)
            self._found[cluster.alias] = (reach(cluster, conf), conf)
        return self._found[cluster.alias]

    def conf(self, alias: str) -> dict[str, str] | None:
        """librdkafka settings of a cluster already reached (a copy), or None."""
        found = self._found.get(alias)
        return dict(found[1]) if found is not None else None
