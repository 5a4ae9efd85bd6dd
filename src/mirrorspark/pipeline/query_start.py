"""Where a flow's query starts reading: the topics it subscribes to and, on a first start after
MirrorMaker 2 or with ``auto.offset.reset = none``, an explicit starting offset per partition.

Both are decided here together because Spark wants a starting offset for every partition its
subscription assigns. Both trigger modes build their source options from this one answer.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from mirrorspark.config.java_regex import JavaRegexError, compile_java
from mirrorspark.config.model import FlowConfig
from mirrorspark.control.admin import topic_partitions
from mirrorspark.control.remote_topics import RemoteTopics, TopicPlan
from mirrorspark.partition import Partition
from mirrorspark.pipeline.query_options import check_saved_positions
from mirrorspark.policy.topic_selection import TopicSelection

log = logging.getLogger(__name__)


class QueryStart:
    """A flow's subscription and first positions; ``takeover`` holds where MM2 stopped
    (``migrate from-mm2 --execute``), empty otherwise."""

    def __init__(self, *, flow: FlowConfig, selection: TopicSelection, remote_topics: RemoteTopics,
                 takeover: dict[Partition, int] | None = None) -> None:
        self.flow = flow
        self.selection = selection
        self.remote_topics = remote_topics
        self.takeover = takeover if takeover is not None else {}  # shared: a re-created topic's move here
        self.subscribed: frozenset[str] | None = None  # the topics a Java topic filter accepted at the last start

    def subscribe_pattern(self) -> str:
        """What the source subscribes to: the policy's superset of the selected topics; exactly the topics
        found at start with ``refresh.topics.enabled = false``; exactly the topics a Java
        ``topic.filter.class`` accepts now (no regex can say what it accepts: the topic refresh restarts
        the query when that set changes, see ``filter_moved``)."""
        fixed = self.remote_topics.fixed_topics
        if fixed is None and self.selection.custom_filter is not None:
            fixed = self.subscribed = frozenset(self.remote_topics.plan.remote)
        return self.selection.subscribe_pattern() if fixed is None else self.selection.exact_pattern(fixed)

    def filter_moved(self, plan: TopicPlan) -> bool:
        """True when a Java topic filter accepts other topics than the running query subscribed to."""
        return self.subscribed is not None and frozenset(plan.remote) != self.subscribed

    def explicit(self, first_start: bool) -> bool:
        """Whether a start with no committed batch needs explicit starting offsets (after MM2, or
        ``auto.offset.reset = none``); later starts resume from Spark's checkpoint."""
        reset, _ = self.flow.source_reset()
        return first_start and bool(self.takeover or reset == "none")

    def starting_offsets(self, pattern: str) -> dict[str, dict[str, int]]:
        """Spark's startingOffsets for the first start after MM2: its positions where it has them, the
        flow's auto.offset.reset elsewhere (``none``, as in MM2: a partition without one is an error).
        Spark wants an offset for every partition its pattern assigns, so every source topic the
        pattern matches, as Java matches it, is listed (a topic created meanwhile fails the start, and
        the restart lists it)."""
        reset, where = self.flow.source_reset()
        default = -2 if reset == "earliest" else -1
        plan = self.remote_topics.plan.partitions
        # Spark's source matches its subscribePattern with java.util.regex (matches()): so does this list.
        try:
            java = compile_java(pattern)
        except JavaRegexError:  # the flow's patterns were checked at load: the planned topics then
            matched = dict(plan)
        else:
            matched = {t: n for t, n in topic_partitions(self.remote_topics.source).items() if java.fullmatch(t)}
        offsets = {topic: {str(p): self.takeover.get((topic, p), default) for p in range(count)}
                   for topic, count in sorted(matched.items())}
        if reset == "none":
            check_saved_positions(self.flow.name, where, matched, self.takeover)
            if not self.takeover:
                return offsets
        log.info("flow %s: first start after MirrorMaker 2: %d partition(s) resume where MM2 stopped", self.flow.name,
                 sum(1 for key in self.takeover if key[0] in plan))
        return offsets

    def starting_json(self, pattern: str, topics: Mapping[str, int] | None = None) -> str:
        """``starting_offsets`` as Spark's JSON, limited to ``topics`` when given (an assignment)."""
        offsets = self.starting_offsets(pattern)
        return json.dumps(offsets if topics is None else {t: o for t, o in offsets.items() if t in topics})
