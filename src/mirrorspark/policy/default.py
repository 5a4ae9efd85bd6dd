"""MM2's DefaultReplicationPolicy: remote topics are prefixed with the source alias (``A.orders``)."""
from __future__ import annotations

from mirrorspark.policy.base import ReplicationPolicy


class DefaultReplicationPolicy(ReplicationPolicy):
    """``<source><separator><topic>``; the separator defaults to ``.``."""

    def __init__(self, separator: str = ".", internal_topic_separator_enabled: bool = True) -> None:
        self.separator = separator
        # MM2's source.cluster.alias / target.cluster.alias, when a file sets them (the "no prefix" recipe
        # sets both empty): the names written into topic names instead of the flow's cluster aliases.
        self.source_name: str | None = None
        self.target_name: str | None = None
        self.syncs_on_target = False  # offset-syncs.topic.location = target: named after the source
        # KIP-949: with the flag off, internal topic names always use '.', as before Kafka 3.1.
        self._internal_sep = separator if internal_topic_separator_enabled else "."

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        alias = source_cluster_alias if self.source_name is None else self.source_name
        return f"{alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        if topic is None:
            return None
        if not self.separator:  # MM2 splits on the empty pattern: one character per part
            return topic[0] if len(topic) >= 2 else None
        source, sep, _ = topic.partition(self.separator)
        return source if sep else None

    def upstream_topic(self, topic: str) -> str | None:
        if topic is None:
            return None
        if not self.separator:
            return topic[1:] if len(topic) >= 2 else None
        _, sep, rest = topic.partition(self.separator)
        return rest if sep else None

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        s = self._internal_sep
        named = self.source_name if self.syncs_on_target else self.target_name
        return f"mm2-offset-syncs{s}{cluster_alias if named is None else named}{s}internal"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        s = self._internal_sep
        return f"{cluster_alias if self.source_name is None else self.source_name}{s}checkpoints{s}internal"

    def is_checkpoints_topic(self, topic: str) -> bool:
        s = self._internal_sep
        return topic.endswith(f"{s}checkpoints{s}internal")

    def is_mm2_internal_topic(self, topic: str) -> bool:
        s = self._internal_sep
        return topic.endswith(f"{s}internal") and (topic.startswith("mm2") or self.is_checkpoints_topic(topic))

    def is_internal_topic(self, topic: str) -> bool:
        if not self._internal_sep:  # MM2's rule alone: mm2-offset-syncsinternal, checkpointsinternal...
            return super().is_internal_topic(topic) or self.is_mm2_internal_topic(topic)
        return super().is_internal_topic(topic) or topic.endswith(f"{self._internal_sep}internal")
