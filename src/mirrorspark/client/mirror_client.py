"""MM2's MirrorClient / RemoteClusterUtils in Python: no Spark, one cluster at a time. Java-style
settings (as in mm2.properties) are read by Kafka's Java clients, as MM2's own MirrorClient reads them
(Kerberos, a callback handler, a Java key store mean what they mean there); librdkafka's settings by
librdkafka.

Everything is read from the cluster the client is connected to: heartbeat topics tell which
clusters replicate into it and over how many hops, checkpoint topics tell where a consumer group
of a remote cluster should resume here.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mirrorspark.control.admin import admin_client
from mirrorspark.control.client_settings import java_conf
from mirrorspark.formats import Checkpoint
from mirrorspark.offsets.checkpoint_store import decode_checkpoints, read_compacted_topic
from mirrorspark.partition import Partition
from mirrorspark.policy import DefaultReplicationPolicy, ReplicationPolicy


class MirrorClient:
    """Replication facts of one cluster, from its topics (MM2's ``MirrorClient``)."""

    def __init__(self, conf: Mapping[str, Any], policy: ReplicationPolicy | None = None,
                 java_style: bool = True, timeout: float = 30.0) -> None:
        """``conf``: the cluster's client settings, Java-style as in mm2.properties (``bootstrap.servers``,
        ``security.protocol``, ``ssl.*``, ``sasl.*``), or librdkafka's (or the control plane's own, as
        ``admin_settings`` makes them) with ``java_style=False``."""
        self.conf = java_conf({k: str(v) for k, v in conf.items()}, []) if java_style else dict(conf)
        self.policy = policy or DefaultReplicationPolicy()
        self.timeout = timeout
        self._admin = admin_client(self.conf)

    def topics(self) -> set[str]:
        metadata = self._admin.list_topics(timeout=self.timeout)
        return {name for name, topic in metadata.topics.items() if topic.error is None}

    def heartbeat_topics(self) -> set[str]:
        return {t for t in self.topics() if self.policy.is_heartbeats_topic(t)}

    def checkpoint_topics(self) -> set[str]:
        return {t for t in self.topics() if self.policy.is_checkpoints_topic(t)}

    def upstream_clusters(self) -> set[str]:
        """Every cluster along the chains of this cluster's heartbeat topics."""
        found: set[str] = set()
        for topic in self.heartbeat_topics():
            found |= set(upstream_chain(self.policy, topic))
        return found

    def replication_hops(self, upstream_alias: str) -> int:
        """Fewest hops from ``upstream_alias`` to here over heartbeat topics; -1 if not upstream."""
        hops = [h for h in (count_hops(self.policy, t, upstream_alias) for t in self.heartbeat_topics()) if h > 0]
        return min(hops) if hops else -1

    def remote_topics(self, source_alias: str | None = None) -> set[str]:
        """Replicated topics here (not internal, with a source), optionally from one cluster only."""
        out = set()
        for topic in self.topics():
            source = self.policy.topic_source(topic)
            if source is not None and not self.policy.is_internal_topic(topic) and \
                    (source_alias is None or source == source_alias):
                out.add(topic)
        return out

    def remote_consumer_checkpoints(self, group: str, remote_alias: str) -> dict[Partition, Checkpoint]:
        """The latest checkpoint per local (topic, partition) of ``group``, from ``remote_alias``'s
        checkpoints topic on this cluster."""
        latest: dict[Partition, Checkpoint] = {}
        topic = self.policy.checkpoints_topic(remote_alias)
        found, _ = decode_checkpoints(topic, read_compacted_topic(self.conf, topic, self.timeout))
        for checkpoint, _ in found:
            if checkpoint.group == group:
                latest[(checkpoint.topic, checkpoint.partition)] = checkpoint
        return latest

    def remote_consumer_offsets(self, group: str, remote_alias: str) -> dict[Partition, int]:
        """MM2's ``remoteConsumerOffsets`` / ``RemoteClusterUtils.translateOffsets``: where ``group``
        of cluster ``remote_alias`` should resume here, per local (topic, partition)."""
        return {tp: c.downstream for tp, c in self.remote_consumer_checkpoints(group, remote_alias).items()}


def upstream_chain(policy: ReplicationPolicy, topic: str) -> list[str]:
    """The sources along a topic's chain: ``B.A.heartbeats`` -> [B, A]."""
    chain: list[str] = []
    current: str | None = topic
    while current is not None:
        source = policy.topic_source(current)
        if source is None or source in chain:
            break
        chain.append(source)
        upstream = policy.upstream_topic(current)
        current = None if upstream == current else upstream
    return chain


def count_hops(policy: ReplicationPolicy, topic: str, alias: str) -> int:
    """Hops from ``alias`` along ``topic``'s chain; -1 when ``alias`` is not on it."""
    chain = upstream_chain(policy, topic)
    return chain.index(alias) + 1 if alias in chain else -1


def translate_offsets(conf: Mapping[str, Any], remote_alias: str, group: str,
                      policy: ReplicationPolicy | None = None) -> dict[Partition, int]:
    """``RemoteClusterUtils.translateOffsets``: ``conf`` are the settings of the local cluster."""
    return MirrorClient(conf, policy).remote_consumer_offsets(group, remote_alias)
