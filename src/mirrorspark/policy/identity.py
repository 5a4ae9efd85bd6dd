"""MM2's IdentityReplicationPolicy: remote topics keep their name (one-way migration, no cycles)."""
from __future__ import annotations

from mirrorspark.policy.default import DefaultReplicationPolicy


class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Topics are not renamed, except heartbeats, which keep the default prefixing so that
    replication hops can still be traced. The source of a topic is the configured source alias."""

    def __init__(self, source_cluster_alias: str | None = None, separator: str = ".",
                 internal_topic_separator_enabled: bool = True) -> None:
        super().__init__(separator, internal_topic_separator_enabled)
        self.source_cluster_alias = source_cluster_alias

    def _looks_like_heartbeats(self, topic: str) -> bool:
        return topic is not None and topic.endswith(self.heartbeats_topic())

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        if self._looks_like_heartbeats(topic):
            return super().format_remote_topic(source_cluster_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        if self._looks_like_heartbeats(topic):
            return super().topic_source(topic)
        return self.source_cluster_alias

    def upstream_topic(self, topic: str) -> str | None:
        if self._looks_like_heartbeats(topic):
            return super().upstream_topic(topic)
        return topic

    def original_topic(self, topic: str) -> str:
        if self._looks_like_heartbeats(topic):
            return super().original_topic(topic)
        return topic
