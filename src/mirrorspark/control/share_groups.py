"""Share groups (KIP-932) of one cluster, for ``promote``.

A share group has no committed offsets: each partition has a start offset below which every record
was delivered and acknowledged, and records above it may be acknowledged one by one. ``promote``
moves the start offset, translated, to the target: records the group acknowledged above it are
delivered again there (at least once, never skipped). Only Kafka's Java Admin client speaks these
requests (librdkafka has none), so they go through the client JVM whatever the cluster's settings.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from mirrorspark.config.model import ClusterConfig
from mirrorspark.errors import ClusterFailure
from mirrorspark.partition import Partition

# A share group without members: its start offsets may be set from outside.
IDLE = ("EMPTY", "DEAD")


@dataclass(frozen=True, kw_only=True)
class ShareGroup:
    """A share group as the cluster describes it; ``members`` as ``member-id (client-id@host)``."""

    group: str
    state: str
    members: tuple[str, ...] = ()

    @property
    def idle(self) -> bool:
        return self.state in IDLE and not self.members


def share_groups(cluster: ClusterConfig) -> ShareGroups:
    """The share groups of ``cluster``, through Kafka's Java client made from its admin settings (also
    where ``mirrorspark.control.clients`` has the rest of the control plane on librdkafka)."""
    from mirrorspark.control.client_settings import admin_properties, admin_settings, java_conf
    from mirrorspark.control.java_clients import uses_java
    from mirrorspark.plugins.jars import plugin_classpath

    conf = admin_settings(cluster)  # the checks of the cluster's keys, refused naming the key
    if not uses_java(conf):
        conf = java_conf(admin_properties(cluster), plugin_classpath(cluster.client_options))
    return ShareGroups.connect(conf, cluster.alias)


class ShareGroups:
    """The share groups of the cluster ``cluster`` (an alias, for messages) through ``client``, Kafka's
    Java Admin client (``JavaAdminClient``: ``ask_share_groups``)."""

    def __init__(self, *, client: Any, cluster: str, timeout: float = 30.0) -> None:
        self.cluster = cluster
        self._timeout_ms = int(timeout * 1000)
        self._client = client

    @classmethod
    def connect(cls, conf: Mapping[str, Any], cluster: str) -> ShareGroups:
        """Through a new Java Admin client made from ``conf``, a Java client's settings
        (``client_settings.java_conf``)."""
        from mirrorspark.control.java_clients import JavaAdminClient

        try:
            return cls(client=JavaAdminClient(conf), cluster=cluster)
        except KafkaException as exc:
            raise ClusterFailure(f"cluster {cluster}: no admin client for share groups: {exc.args[0].str()}") from None

    def _ask(self, what: str, call: Any) -> Any:
        try:
            return self._client.ask_share_groups(what, call)
        except KafkaException as exc:
            raise ClusterFailure(f"cluster {self.cluster}: {exc.args[0].str()}") from None

    def ids(self) -> list[str]:
        """The cluster's share groups; none where the brokers predate them (Kafka before 4.0 does not
        know a listing by group type)."""
        try:
            rows = self._client.ask_share_groups("listing share groups", lambda java: java.list(self._timeout_ms))
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.UNSUPPORTED_VERSION:
                return []
            raise ClusterFailure(f"cluster {self.cluster}: {exc.args[0].str()}") from None
        return sorted(group for group, _ in rows)

    def describe(self, group: str) -> ShareGroup:
        """The group; one the cluster does not know is ``DEAD`` with no members."""
        row = self._ask(f"describing share group {group}",
                        lambda java: java.describe(json.dumps([group]), self._timeout_ms))[group]
        if "error" in row:
            code, _, text = row["error"]
            if code == KafkaError.GROUP_ID_NOT_FOUND:
                return ShareGroup(group=group, state="DEAD")
            raise ClusterFailure(f"cluster {self.cluster}: {text}")
        ok = row["ok"]
        return ShareGroup(group=group, state=ok["state"],
                          members=tuple(f"{member} ({client}@{host})" for member, client, host, _ in ok["members"]))

    def start_offsets(self, group: str) -> dict[Partition, tuple[int, int | None]]:
        """Per partition, (start offset, lag): below the start offset the group has delivered and
        acknowledged everything; the lag counts the records up to the end it has not acknowledged
        (None: the broker does not say). Kafka moves the stored start offset lazily: a group that
        acknowledged every record may show an old one with a lag of 0. Partitions it has not started
        are left out."""
        rows = self._ask(f"reading the start offsets of share group {group}",
                         lambda java: java.startOffsets(group, self._timeout_ms))
        return {(topic, partition): (offset, lag) for topic, partition, offset, lag in rows}

    def set_start_offsets(self, group: str, offsets: Mapping[Partition, int]) -> None:
        """The group's start offsets (it must have no members); a group the cluster lacks is made."""
        rows = json.dumps([[t, p, o] for (t, p), o in sorted(offsets.items())])
        self._ask(f"setting the start offsets of share group {group}",
                  lambda java: java.alterStartOffsets(group, rows, self._timeout_ms) or "null")

    def configs(self, group: str) -> dict[str, str]:
        """The settings given to the group itself (``share.auto.offset.reset``...), not the defaults:
        where a partition it has not started begins, how long a record stays locked."""
        try:
            future = self._client.describe_configs([ConfigResource("GROUP", group)],
                                                   request_timeout=self._timeout_ms / 1000)
            entries = next(iter(future.values())).result()
        except KafkaException as exc:
            raise ClusterFailure(f"cluster {self.cluster}: the settings of group {group}: {exc.args[0].str()}") \
                from None
        return {name: entry.value for name, entry in entries.items()
                if entry.source == ConfigSource.GROUP_CONFIG and entry.value is not None}

    def set_configs(self, group: str, values: Mapping[str, str | None]) -> None:
        """Set the group's own settings (None: removed, back to the cluster's default)."""
        if not values:
            return
        ops = [ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET if value is not None else
                           AlterConfigOpType.DELETE) for name, value in values.items()]
        try:
            for future in self._client.incremental_alter_configs(
                    [ConfigResource("GROUP", group, incremental_configs=ops)],
                    request_timeout=self._timeout_ms / 1000).values():
                future.result()
        except KafkaException as exc:
            raise ClusterFailure(f"cluster {self.cluster}: setting {', '.join(values)} of group {group}: "
                                 f"{exc.args[0].str()}") from None

    def delete(self, group: str) -> None:
        row = self._ask(f"deleting share group {group}",
                        lambda java: java.delete(json.dumps([group]), self._timeout_ms))[group]
        if "error" in row and row["error"][0] != KafkaError.GROUP_ID_NOT_FOUND:
            raise ClusterFailure(f"cluster {self.cluster}: {row['error'][2]}")

    def close(self) -> None:
        self._client.close()
