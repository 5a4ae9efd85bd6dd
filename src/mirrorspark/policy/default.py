"""MM2's DefaultReplicationPolicy: remote topics are prefixed with the source alias (``A.orders``)."""
from __future__ import annotations

from mirrorspark.policy.base import ReplicationPolicy


class DefaultReplicationPolicy(ReplicationPolicy):
    """``<source><separator><topic>``; the separator defaults to ``.``."""

    def __init__(self, separator: str = ".", internal_topic_separator_enabled: bool = True) -> None:
        if not separator:
            raise ValueError("replication.policy.separator must not be empty")
        self.separator = separator
        # KIP-949: with the flag off, internal topic names always use '.', as before Kafka 3.1.
        self._internal_sep = separator if internal_topic_separator_enabled else "."

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        return f"{source_cluster_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        if topic is None:
            return None
        source, sep, _ = topic.partition(self.separator)
        return source if sep else None

    def upstream_topic(self, topic: str) -> str | None:
        if topic is None:
            return None
        _, sep, rest = topic.partition(self.separator)
        return rest if sep else None

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        s = self._internal_sep
        return f"mm2-offset-syncs{s}{cluster_alias}{s}internal"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        s = self._internal_sep
        return f"{cluster_alias}{s}checkpoints{s}internal"

    def is_checkpoints_topic(self, topic: str) -> bool:
        s = self._internal_sep
        return topic.endswith(f"{s}checkpoints{s}internal")

    def is_mm2_internal_topic(self, topic: str) -> bool:
        s = self._internal_sep
        return topic.endswith(f"{s}internal") and (topic.startswith("mm2") or self.is_checkpoints_topic(topic))

    def is_internal_topic(self, topic: str) -> bool:
        return super().is_internal_topic(topic) or topic.endswith(f"{self._internal_sep}internal")
