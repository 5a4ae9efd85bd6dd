"""The ReplicationPolicy interface, with MM2's semantics (connect/mirror-client ReplicationPolicy)."""
from __future__ import annotations

from abc import ABC, abstractmethod


class ReplicationPolicy(ABC):
    """Names remote topics and recovers their origin, so flows can be chained without cycles."""

    @abstractmethod
    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        """Name on the target of ``topic`` replicated from ``source_cluster_alias``."""

    @abstractmethod
    def topic_source(self, topic: str) -> str | None:
        """Alias of the cluster ``topic`` was replicated from, or None for a local topic."""

    @abstractmethod
    def upstream_topic(self, topic: str) -> str | None:
        """Name of ``topic`` on the cluster it was replicated from, or None for a local topic."""

    def original_topic(self, topic: str) -> str:
        """Name of the topic on the cluster where it was first produced (follows every hop)."""
        upstream = self.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return topic
        return self.original_topic(upstream)

    def heartbeats_topic(self) -> str:
        return "heartbeats"

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        return f"mm2-offset-syncs.{cluster_alias}.internal"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        return f"{cluster_alias}.checkpoints.internal"

    def is_heartbeats_topic(self, topic: str) -> bool:
        return self.heartbeats_topic() == self.original_topic(topic)

    def is_checkpoints_topic(self, topic: str) -> bool:
        return topic.endswith(".checkpoints.internal")

    def is_mm2_internal_topic(self, topic: str) -> bool:
        return topic.endswith(".internal") and (topic.startswith("mm2") or self.is_checkpoints_topic(topic))

    def is_internal_topic(self, topic: str) -> bool:
        """Kafka- and Connect-internal topics, never replicated whatever the filters say."""
        return (
            self.is_mm2_internal_topic(topic)
            or topic.startswith("__")
            or topic.startswith(".")
            or topic.endswith("-internal")
            or topic.endswith(".internal")
        )
