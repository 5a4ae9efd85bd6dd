"""Which source topics a flow replicates: MM2's DefaultTopicFilter (or the flow's Java
``topic.filter.class``) plus its internal-topic, heartbeat and cycle rules
(MirrorSourceConnector.shouldReplicateTopic)."""
from __future__ import annotations

from mirrorspark.config.java_regex import compile_java
from mirrorspark.config.model import FlowConfig
from mirrorspark.config.values import compile_patterns
from mirrorspark.plugins.loading import java_filter
from mirrorspark.policy.base import ReplicationPolicy
from mirrorspark.policy.default import DefaultReplicationPolicy
from mirrorspark.policy.identity import IdentityReplicationPolicy

_NOTHING = "(?!)"  # an empty MM2 list matches nothing


def java_literal(text: str) -> str:
    """Escape ``text`` for a regex valid in both Java and Python (escape every non-word char)."""
    return "".join(ch if ch.isalnum() or ch == "_" else "\\" + ch for ch in text)


def anchored(pattern: str) -> str:
    """Spark's subscribePattern finds the pattern anywhere in a topic name; anchor it to match whole names."""
    return f"^(?:{pattern})$"


def join_patterns(patterns: list[str]) -> str:
    """Patterns of mirrorspark's own, each kept to itself (MM2's LISTs are joined as MM2 joins them)."""
    return "|".join(f"(?:{p})" for p in patterns) if patterns else _NOTHING


class TopicSelection:
    """Decides per topic name whether flow ``source->target`` replicates it."""

    def __init__(self, flow: FlowConfig, policy: ReplicationPolicy) -> None:
        options = flow.options
        self.policy = policy
        self.source_alias = flow.source.alias
        self.target_alias = flow.target.alias
        # MM2's text (MirrorUtils.compilePatternList: the LIST joined with '|'); Spark's source compiles
        # it with java.util.regex, the per-name decision uses its translation (config/java_regex.py).
        self.include = "|".join(options.topics) or _NOTHING
        self.exclude = "|".join(options.topics_exclude) or _NOTHING
        self._include = compile_patterns(options.topics, options.topics_key) or compile_java(_NOTHING)
        self._exclude = compile_patterns(options.topics_exclude, options.topics_exclude_key) or compile_java(_NOTHING)
        self.topic_map = options.topic_map
        self.heartbeats_replicated = options.heartbeats_replicated
        self.custom_filter = java_filter(flow.settings, "topic.filter.class", flow.where("topic.filter.class"))
        if self.custom_filter is not None:  # the Java filter decides: read every topic, ask it per name
            self.include, self.exclude = ".*", _NOTHING

    def topic_filter(self, topic: str) -> bool:
        """``topics`` matches fully and ``topics.exclude`` does not (excludes win), or what the
        flow's Java ``topic.filter.class`` answers (MM2 uses one or the other)."""
        if self.custom_filter is not None:
            return self.custom_filter(topic)
        return bool(self._include.fullmatch(topic)) and not self._exclude.fullmatch(topic)

    def is_cycle(self, topic: str) -> bool:
        """The topic came (possibly over several hops) from the flow's target cluster."""
        source = self.policy.topic_source(topic)
        if source is None:
            return False
        named = getattr(self.policy, "target_name", None)  # MM2 compares with target.cluster.alias when set
        if source == (self.target_alias if named is None else named):
            return True
        upstream = self.policy.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return False
        return self.is_cycle(upstream)

    def remote_name(self, topic: str) -> str:
        """The topic's name on the target: an explicit ``topic.map`` entry, else the policy's."""
        return self.topic_map.get(topic) or self.policy.format_remote_topic(self.source_alias, topic)

    def should_replicate(self, topic: str) -> bool:
        if topic in self.topic_map:
            return True
        heartbeats = self.heartbeats_replicated and self.policy.is_heartbeats_topic(topic)
        return (self.topic_filter(topic) or heartbeats) and not self.policy.is_internal_topic(topic) \
            and not self.is_cycle(topic)

    @staticmethod
    def exact_pattern(topics: frozenset[str] | set[str]) -> str:
        """A Java regex matching exactly ``topics`` (and nothing when there are none)."""
        return anchored(join_patterns([java_literal(t) for t in sorted(topics)]))

    def heartbeats_pattern(self) -> str:
        """A Java regex for the heartbeats topics this flow may read (``heartbeats`` and its remote copies)."""
        return f"(?:.*{java_literal(getattr(self.policy, 'separator', '.'))})?heartbeats"

    def subscribe_pattern(self) -> str:
        """A Java regex for Spark's ``subscribePattern`` that reads as few unwanted topics as possible.

        It is a superset of ``should_replicate`` (custom policies' cycles cannot be expressed), so
        each batch is still filtered by ``should_replicate`` on the exact topic list.
        """
        never = [r"__.*", r"\..*", r".*\-internal", r".*\.internal"]
        if isinstance(self.policy, DefaultReplicationPolicy) and not isinstance(
            self.policy, IdentityReplicationPolicy
        ) and self.policy.separator:
            sep = java_literal(self.policy.separator)
            never.append(f"(?:.*?{sep})?{java_literal(self.target_alias)}{sep}.*")
        heartbeats = [self.heartbeats_pattern()] if self.heartbeats_replicated else []
        wanted = f"(?!(?:{self.exclude})$)(?:{self.include})"
        general = f"(?!(?:{join_patterns(never)})$)(?:{join_patterns([wanted, *heartbeats])})"
        mapped = [java_literal(t) for t in self.topic_map]
        return anchored(join_patterns([general, *mapped]))
