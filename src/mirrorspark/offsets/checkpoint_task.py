"""Checkpoints: the source consumer groups' committed offsets, translated for the target.

Every ``emit.checkpoints.interval.seconds`` the task lists the flow's groups on the source (MM2's
``groups``/``groups.exclude``, only groups with commits on replicated topics), translates each
committed offset with the writer-reported offset ranges (exact where the source offsets are
contiguous), and writes MM2-format checkpoints to ``<source>.checkpoints.internal`` on the target,
only when newer by MM2's rule. Nothing is emitted for a partition with nothing replicated.

Active/active on the same names: a topic holds records of both clusters (each flow skips the
other's copies), and one offset cannot say how far a consumer read in each. The checkpoint is then
the lower of the two positions (this flow's records, and the reverse flow's: the first record of the
target's own that the group has not read), so a failed-over consumer skips nothing; the records it
reads twice are counted from the runs, logged, and kept in ``read-twice.json`` for ``failover``.

Translation is bound to the remote topic's id: while the runs point into another topic than the one
now on the target (re-created, not re-bound yet) nothing is emitted for it. After a re-binding the
old checkpoints of its partitions are replaced even though they look "newer" by MM2's rule (their
target offsets belong to the old topic), so a failed-over consumer never starts past unread data.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from mirrorspark.control.admin import ensure_compacted_topic, producer, send_all, topic_ids
from mirrorspark.control.groups import GroupRequestRefused, Groups
from mirrorspark.formats import Checkpoint
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.offsets.checkpoint_store import CheckpointStore
from mirrorspark.offsets.group_filter import GroupFilter
from mirrorspark.partition import Partition
from mirrorspark.policy.topic_selection import TopicSelection

log = logging.getLogger(__name__)

Translate = Callable[[str, int, int, "str | None"], "int | None"]
# (pending resets: (source topic, partition) whose checkpoints point into an old remote topic, resets done)
Resets = tuple[Callable[[], set[Partition]], Callable[[set[Partition]], None]]
# (topic on the source that came from the target, partition, committed) -> (original topic, offset there)
TranslateBack = Callable[[str, int, int], "tuple[str, int] | None"]
# (topic on the source, partition, committed) -> target offset of the target's first own record not read
FirstUnread = Callable[[str, int, int], "int | None"]
# (source topic, partition, low, high) -> target offsets low..high-1 holding this flow's copies
Copies = Callable[[str, int, int, int], int]


def both_origins(mine: int, theirs: int | None, copies_between: Callable[[int, int], int]) -> tuple[int, int]:
    """(checkpoint, records read twice) on a topic both clusters write. ``mine``: where this flow's first
    copy the group has not read is on the target; ``theirs``: where the target's first own record it
    has not read is (None: nothing of the target's was copied to the source yet). The lower one skips
    neither; between the two the group reads again this flow's copies (``theirs`` lower) or the
    target's own records (``mine`` lower), each already read on the source."""
    if theirs is None or theirs == mine:
        return mine, 0
    low, high = min(mine, theirs), max(mine, theirs)
    copies = copies_between(low, high)
    return low, copies if theirs < mine else (high - low) - copies


class CheckpointTask:
    """One flow's checkpoint emission (MM2's MirrorCheckpointTask)."""

    def __init__(self, *, flow_name: str, target_alias: str, selection: TopicSelection, groups: GroupFilter,
                 source: Groups, target: AdminClient, target_conf: dict[str, Any], translate: Translate,
                 replication_factor: int, resets: Resets | None = None, metrics: MirrorMetrics | None = None) -> None:
        self.flow_name = flow_name
        self.target_alias = target_alias
        self.selection = selection
        self.policy = selection.policy
        self.groups = groups
        self.source = source  # the source cluster's consumer groups
        self.target = target
        self.target_conf = target_conf
        self.translate = translate
        self.replication_factor = replication_factor
        self.pending_resets, self.resets_done = resets or (set, lambda done: None)
        self._remote_ids: dict[str, str | None] = {}  # remote topic -> its topic id, for one round
        self.topic = self.policy.checkpoints_topic(selection.source_alias)
        self.store = CheckpointStore()
        self.translate_back: TranslateBack | None = None  # set when the reverse flow runs in this process
        # Active/active on the same names, with the reverse flow in this process: the target's own
        # records count too (``_both_origins``); (group, topic, partition) -> (upstream, read twice).
        self.other_origin: FirstUnread | None = None
        self.copies: Copies | None = None
        self.read_twice: dict[tuple[str, str, int], tuple[int, int]] = {}
        self.on_read_twice: Callable[[dict[tuple[str, str, int], tuple[int, int]]], None] | None = None
        self._producer: Producer | None = None
        self.metrics = metrics  # checkpoint-latency-ms, skipped internal records

    def start(self) -> None:
        """Create the checkpoints topic if needed and reload what it holds (monotonic across restarts)."""
        if ensure_compacted_topic(self.target, self.topic, self.replication_factor):
            log.info("flow %s: created checkpoints topic %s", self.flow_name, self.topic)
        self.store.load(self.target_conf, self.topic)
        if self.metrics is not None and self.store.skipped:
            self.metrics.internal_skipped.labels(source=self.selection.source_alias, target=self.target_alias,
                                                 topic=self.topic).inc(self.store.skipped)
        self._producer = producer({**self.target_conf, "acks": "all", "linger.ms": 5})

    def renamed(self, topic: str) -> str:
        """MM2's renaming: a topic that came from the target maps back to its original name."""
        if self.policy.topic_source(topic) == self.target_alias:
            return self.policy.original_topic(topic)
        return self.selection.remote_name(topic)

    def source_groups(self) -> list[str]:
        return [group for group in self.source.ids() if self.groups(group)]

    def _bound(self, remote_topic: str) -> str | None:
        """"<name>@<topic id>" of the remote topic as it is now on the target (None: it does not exist)."""
        if remote_topic not in self._remote_ids:
            self._remote_ids.update({remote_topic: None, **topic_ids(self.target, [remote_topic])})
        topic_id = self._remote_ids[remote_topic]
        return None if topic_id is None else f"{remote_topic}@{topic_id}"

    def checkpoints(self, group: str, resets: AbstractSet[Partition] = frozenset()) -> list[Checkpoint]:
        """Translated checkpoints of one group that are newer than the stored ones (or replace one
        written for a previous remote topic: ``resets``)."""
        out = []
        for (topic, partition), (offset, metadata) in sorted(self.source.committed(group).items()):
            reset = False
            if self.selection.should_replicate(topic):
                renamed = self.renamed(topic)
                bound = self._bound(renamed)
                downstream = None if bound is None else self.translate(topic, partition, offset, bound)
                if downstream is not None and self.other_origin is not None:
                    downstream = self._both_origins(group, topic, partition, offset, downstream)
                reset = (topic, partition) in resets
            elif self.translate_back is not None and self.policy.topic_source(topic) == self.target_alias:
                # Failback: a remote topic of the reverse flow maps back onto its original topic,
                # exactly, through the reverse flow's writer-reported ranges (MM2 has no syncs here).
                back = self.translate_back(topic, partition, offset)
                renamed, downstream = back if back is not None else (topic, None)
            else:
                continue
            if downstream is None or downstream < 0:
                log.debug("flow %s: group %s %s-%d at %d not translatable yet", self.flow_name, group,
                          topic, partition, offset)
                continue
            checkpoint = Checkpoint(group, renamed, partition, offset, downstream, metadata)
            if reset or self.store.is_newer(checkpoint):
                out.append(checkpoint)
        return out

    def _both_origins(self, group: str, topic: str, partition: int, committed: int, mine: int) -> int:
        """The checkpoint on a topic both clusters write (``both_origins``), its read-twice count kept."""
        theirs = self.other_origin(topic, partition, committed) if self.other_origin else None
        copies = self.copies or (lambda *_: 0)
        checkpoint, twice = both_origins(mine, theirs, lambda low, high: copies(topic, partition, low, high))
        key = (group, self.renamed(topic), partition)
        if twice and self.read_twice.get(key, (None, None))[1] != twice:
            log.info("flow %s: group %s %s-%d (active/active on the same names): the checkpoint at %d keeps the "
                     "records of both clusters unread; a failover reads %d record(s) a second time", self.flow_name,
                     group, topic, partition, checkpoint, twice)
        self.read_twice[key] = (committed, twice)
        return checkpoint

    def _replacements(self, resets: set[Partition], written: set[tuple[str, str, int]]) -> list[Checkpoint]:
        """Stored checkpoints of re-bound partitions that no group commit replaced this round: the
        same source offset translated into the new remote topic."""
        out = []
        for source_topic, partition in sorted(resets):
            remote = self.selection.remote_name(source_topic)
            bound = self._bound(remote)
            for group in sorted(self.store.groups()):
                old = self.store.latest.get((group, remote, partition))
                if old is None or (group, remote, partition) in written or bound is None:
                    continue
                downstream = self.translate(source_topic, partition, old.upstream, bound)
                if downstream is not None and downstream != old.downstream:
                    out.append(Checkpoint(group, remote, partition, old.upstream, downstream, old.metadata))
        return out

    def run_once(self, check: Callable[[], Mapping[str, str]] | None = None) -> int:
        """One round over all groups; returns checkpoints written. ``check`` (the flow's topic identity
        check) runs first when a group is in scope or checkpoints wait to be replaced, and returns the
        remote topic ids it read: no second describe call for them. A round with neither writes
        nothing the check would protect, and skips it: at thousands of partitions it was most of an
        idle flow's control-plane CPU (the topic refresh still checks every topic)."""
        assert self._producer is not None, "start() first"
        groups = self.source_groups()
        self._forget_groups(set(groups))
        self._remote_ids = dict(check() if check is not None and (groups or self.pending_resets()) else {})
        resets = self.pending_resets()
        written: list[Checkpoint] = []
        for group in groups:
            try:
                found = self.checkpoints(group, resets)
            except GroupRequestRefused as exc:  # not answering ends the round: GroupsNotAnswering goes up
                log.warning("flow %s: reading offsets of group %s failed: %s", self.flow_name, group, exc)
                continue
            created = time.time()
            send_all(self._producer, self.topic, [(c.key_bytes(), c.value_bytes()) for c in found],
                     f"checkpoints of group {group}", timestamp=int(created * 1000))
            self._observe_latency(found, (time.time() - created) * 1000)
            written.extend(found)
        if resets:
            replaced = self._replacements(resets, {(c.group, c.topic, c.partition) for c in written})
            send_all(self._producer, self.topic, [(c.key_bytes(), c.value_bytes()) for c in replaced],
                     "checkpoints replaced after a remote topic changed", timestamp=int(time.time() * 1000))
            written.extend(replaced)
            # Only where the new remote topic exists; the others are replaced once it does.
            self.resets_done({(t, p) for t, p in resets if self._bound(self.selection.remote_name(t)) is not None})
        if written and self.other_origin is not None and self.on_read_twice is not None:
            self.on_read_twice(self.read_twice)
        if written:
            for checkpoint in written:
                self.store.put(checkpoint)
            log.info("flow %s: wrote %d checkpoint(s) to %s", self.flow_name, len(written), self.topic)
        return len(written)

    def _forget_groups(self, groups: set[str]) -> None:
        """Groups that vanished from the source: out of the store and out of the metrics."""
        if self.store.retain(groups) and self.metrics is not None:
            self.metrics.forget_groups(source=self.selection.source_alias, target=self.target_alias, keep=groups)

    def _observe_latency(self, found: list[Checkpoint], millis: float) -> None:
        """MM2's checkpoint-latency-ms: creation of a checkpoint to its acknowledgement."""
        if self.metrics is None:
            return
        source, target = self.selection.source_alias, self.target_alias
        for c in found:
            self.metrics.checkpoint_acknowledged(source=source, target=target, group=c.group, topic=c.topic,
                                                 partition=c.partition, millis=millis)
        if found:
            self.metrics.checkpoint_timed(source=source, target=target, millis=millis)

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(10)
