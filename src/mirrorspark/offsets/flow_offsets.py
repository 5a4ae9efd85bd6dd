"""Everything offset-related for one flow, wired together: syncs, checkpoints, group sync.

Settings (MM2's names and defaults): ``emit.offset-syncs.enabled`` (false turns syncs and
checkpoints off), ``offset-syncs.topic.location`` (source|target),
``offset-syncs.topic.replication.factor``, ``emit.checkpoints.enabled``,
``emit.checkpoints.interval.seconds``, ``checkpoints.topic.replication.factor``,
``sync.group.offsets.enabled``, ``sync.group.offsets.interval.seconds``, ``groups``,
``groups.exclude``.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka.admin import AdminClient

from mirrorspark.config.model import FlowConfig
from mirrorspark.control.admin import check_replication_factor, ensure_compacted_topic
from mirrorspark.control.groups import Groups
from mirrorspark.control.scheduler import OFFSETS, flow_lane
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.offsets import moved_aside, read_twice
from mirrorspark.offsets.checkpoint_task import CheckpointTask
from mirrorspark.offsets.group_filter import GroupFilter
from mirrorspark.offsets.group_sync import GroupOffsetSync
from mirrorspark.offsets.range_log import RangeLog
from mirrorspark.offsets.ranges import OffsetRanges
from mirrorspark.offsets.sync_writer import OffsetSyncWriter, make_sync_producer
from mirrorspark.partition import OffsetRun, Partition
from mirrorspark.plugins.loading import java_filter
from mirrorspark.policy.topic_selection import TopicSelection
from mirrorspark.sink_report import WrittenRun
from mirrorspark.state.files import StateFiles

log = logging.getLogger(__name__)


class FlowOffsets:
    """Offset syncs, checkpoints and group offset sync of one flow."""

    def __init__(self, *, flow: FlowConfig, selection: TopicSelection, source: AdminClient, target: AdminClient,
                 source_conf: dict[str, Any], target_conf: dict[str, Any], state: StateFiles,
                 source_of: Callable[[str], str | None], group_clients: tuple[Groups, Groups],
                 metrics: MirrorMetrics | None = None) -> None:
        """``group_clients``: the source's and the target's consumer groups (checkpoints read the first,
        group offset sync writes the second)."""
        self.flow = flow
        self.source_of = source_of  # remote topic -> source topic, from the flow's topic plan
        self.enabled = flow.options.emit_offset_syncs
        self._state = state
        self.range_log = RangeLog(state.child("offset-ranges"))
        self.ranges: OffsetRanges = self.range_log.load() if self.enabled else OffsetRanges()
        self.writer: OffsetSyncWriter | None = None
        self.checkpoints: CheckpointTask | None = None
        self.group_sync: GroupOffsetSync | None = None
        if not self.enabled:
            return
        on_target = flow.options.offset_syncs_on_target
        sync_admin, sync_conf = (target, target_conf) if on_target else (source, source_conf)
        other = flow.source.alias if on_target else flow.target.alias
        self.sync_topic = selection.policy.offset_syncs_topic(other)
        self._sync_cluster = flow.target.alias if on_target else flow.source.alias
        self._sync_admin = sync_admin
        self.writer = OffsetSyncWriter(flow.name, self.ranges, self._save, self.sync_topic,
                                       make_sync_producer(sync_conf))
        if flow.options.emit_checkpoints:
            groups = GroupFilter(flow.options, java_filter(flow.settings, "group.filter.class",
                                                           flow.where("group.filter.class")))
            self.checkpoints = CheckpointTask(
                flow_name=flow.name, target_alias=flow.target.alias, selection=selection, groups=groups,
                source=group_clients[0], target=target, target_conf=target_conf, translate=self.ranges.translate,
                replication_factor=flow.options.checkpoints_replication_factor,
                resets=(self.pending_checkpoint_resets, self.checkpoint_resets_done), metrics=metrics)
            if flow.options.sync_group_offsets:
                self.group_sync = GroupOffsetSync(flow_name=flow.name, target=group_clients[1],
                                                  store=self.checkpoints.store)
        self._target = target

    def translate_back(self, remote_topic: str, partition: int, committed: int) -> tuple[str, int] | None:
        """For the reverse flow's checkpoints: a committed offset on this flow's remote topic ->
        (source topic, source offset), exact inside replicated runs."""
        source_topic = self.source_of(remote_topic)
        if source_topic is None:
            return None
        upstream = self.ranges.inverse(source_topic, partition, committed)
        return None if upstream is None else (source_topic, upstream)

    def link_reverse(self, reverse: FlowOffsets) -> None:
        """``reverse`` is the flow target->source in this process: checkpoint failback through it, and
        on a topic both clusters write (active/active on the same names) the target's own records."""
        if self.checkpoints is not None and reverse.enabled:
            self.checkpoints.translate_back = reverse.translate_back
            if self.flow.same_names and reverse.flow.same_names:
                self.checkpoints.other_origin = reverse.first_unread
                self.checkpoints.copies = self.ranges.copies_between
                self.checkpoints.on_read_twice = self._save_read_twice

    def first_unread(self, remote_topic: str, partition: int, committed: int) -> int | None:
        """For the reverse flow's checkpoints on a topic both clusters write: a consumer of this flow's
        target at ``committed`` -> the source offset of the first record of this flow's source it has
        not read."""
        source_topic = self.source_of(remote_topic)
        return None if source_topic is None else self.ranges.first_unread(source_topic, partition, committed)

    def _save_read_twice(self, figures: dict[tuple[str, str, int], tuple[int, int]]) -> None:
        read_twice.save(self._state, figures)

    def move_aside(self, topic: str, partition: int, copied: Sequence[OffsetRun], end: int) -> bool:
        """Records of the source partition up to ``end`` were moved aside by ``reconcile`` (see
        ``OffsetRanges.move_aside``); saved at once."""
        if not self.enabled:
            return False
        moved = self.ranges.move_aside(topic, partition, copied, end)
        found = self.ranges.copied_end(topic, partition)
        if found is not None and found[2] is not None:
            moved_aside.record(self._state, topic, partition, found[0], found[2])  # before the mapping says so
        self.range_log.save(self.ranges, [(topic, partition)])
        return moved

    def translate(self, topic: str, partition: int, offset: int) -> int | None:
        """The target offset of the source record at ``offset`` (or of the next one copied)."""
        return self.ranges.translate(topic, partition, offset) if self.enabled else None

    def copied_end(self, topic: str, partition: int) -> tuple[int, int, int | None] | None:
        return self.ranges.copied_end(topic, partition) if self.enabled else None

    def forget_topic(self, topic: str) -> None:
        """Drop the runs of a source topic whose source or remote topic was re-created: they would
        translate into offsets of a topic that no longer exists (translation never ahead of data)."""
        dropped = self.ranges.forget(topic)
        if dropped:
            self.range_log.save(self.ranges, dropped)
            log.warning("flow %s: offset mapping of %s dropped (%d partition(s)); checkpoints for it restart from "
                        "the next replicated records", self.flow.name, topic, len(dropped))

    def bind_remote(self, topic: str, remote: str, partitions: int, starts: Callable[[], dict[int, int]]) -> None:
        """Bind ``topic``'s runs to its remote topic (``remote`` = "<name>@<topic id>"). A remote topic
        that is not the one the runs were written to (re-created, or another name after a change of
        ``topic.map``/policy/separator) starts a new mapping whose floor is its log start (``starts``,
        read only then); checkpoints emitted under the old one are replaced at the next round."""
        if not self.enabled:
            return
        before = {p: self.ranges.binding(topic, p).remote for p in range(partitions)}
        if all(old == remote for old in before.values()):
            return
        floors = starts() if any(old not in (None, remote) for old in before.values()) else {}
        restarted = [p for p in range(partitions) if self.ranges.bind(topic, p, remote, floors.get(p, 0))]
        self.range_log.save(self.ranges, [(topic, p) for p, old in before.items() if old != remote])
        if restarted:
            log.warning("flow %s: %s now replicates into %s, not the topic its offset mapping was written to: the "
                        "mapping of %d partition(s) starts again at the new topic's start, and checkpoints are "
                        "rewritten to it", self.flow.name, topic, remote, len(restarted))

    def truncate_remote(self, topic: str, partition: int, end: int) -> None:
        """The remote partition of ``topic`` lost its records from ``end`` on (an unclean leader election)."""
        if self.enabled:
            self.ranges.truncate(topic, partition, end)
            self.range_log.save(self.ranges, [(topic, partition)])

    def first_upstream(self, topic: str, partition: int) -> int | None:
        """The first source offset the current mapping knows was written (None: no runs)."""
        rows = self.ranges.rows(topic, partition) if self.enabled else []
        return rows[0].run.upstream if rows else None

    def pending_checkpoint_resets(self) -> set[Partition]:
        """(source topic, partition) whose checkpoints still point into a previous remote topic."""
        return self.ranges.checkpoint_resets()

    def checkpoint_resets_done(self, done: set[Partition]) -> None:
        for topic, partition in done:
            self.ranges.checkpoints_reset(topic, partition)
        if done:
            self.range_log.save(self.ranges, done)

    def _save(self, partitions: set[Partition]) -> None:
        self.range_log.save(self.ranges, partitions)

    def check_replication_factors(self) -> None:
        """Internal topics' replication factors against the brokers of the cluster hosting them."""
        if not self.enabled:
            return
        options = self.flow.options
        checks = [("offset-syncs.topic.replication.factor", options.offset_syncs_replication_factor,
                   self._sync_admin, self._sync_cluster)]
        if self.checkpoints is not None:
            checks.append(("checkpoints.topic.replication.factor", options.checkpoints_replication_factor,
                           self._target, self.flow.target.alias))
        for key, rf, admin, alias in checks:
            check_replication_factor(admin, rf, self.flow.where(key), f"cluster {alias!r}")

    def start(self) -> None:
        """Create the internal topics and reload existing checkpoints (before any data moves)."""
        if not self.enabled:
            return
        rf = self.flow.options.offset_syncs_replication_factor
        if ensure_compacted_topic(self._sync_admin, self.sync_topic, rf):
            log.info("flow %s: created offset-syncs topic %s on %s", self.flow.name, self.sync_topic,
                     self._sync_cluster)
        if self.checkpoints is not None:
            self.checkpoints.start()

    def on_written(self, runs: Sequence[WrittenRun], source_of: Mapping[str, str]) -> None:
        """Called in the batch, after the sink's save() returned, with the batch's runs and the
        topic plan's remote topic -> source topic."""
        if self.writer is None or not runs:
            return
        self.writer.on_batch(runs, source_of)

    def schedule(self, scheduler, check_topics: Callable[[], Mapping[str, str]] | None = None) -> None:
        """Checkpoints and group sync on the flow's offsets thread; ``check_topics`` (the flow's topic
        identity check, returning the remote topics' ids) runs before each checkpoint round that has
        groups to checkpoint, so a remote topic re-created since the last topic refresh is re-bound,
        and its old checkpoints replaced, in that same round."""
        if self.checkpoints is not None:
            interval = self.flow.options.checkpoints_interval
            task = self.checkpoints

            def round_() -> None:
                task.run_once(check_topics)
            scheduler.every(f"flow {self.flow.name}: checkpoints", interval, round_, initial_delay=min(interval, 5.0),
                            lane=flow_lane(self.flow.name, OFFSETS))
        if self.group_sync is not None:
            interval = self.flow.options.group_offsets_interval
            scheduler.every(f"flow {self.flow.name}: group offset sync", interval, self.group_sync.run_once,
                            initial_delay=interval, lane=flow_lane(self.flow.name, OFFSETS))

    def last_checkpoints(self) -> threading.Thread | None:
        """At a stop, after the query recorded its last batch: one more checkpoint round in a thread of
        its own (the caller bounds the wait). A real-time batch is recorded at its end or at the stop,
        so a group that had read its records kept a checkpoint behind them, or none, and a failover
        right after the stop read them again; this round brings the checkpoints up to every record the
        flow recorded. A source that does not answer leaves them as they were: behind, never ahead."""
        task = self.checkpoints
        if task is None:
            return None

        def round_() -> None:
            try:
                written = task.run_once()
            except Exception as exc:  # noqa: BLE001 - a stop goes on whatever the clusters answer
                log.warning("flow %s: the checkpoints were not brought up to date at the stop: %s", self.flow.name,
                            exc)
                return
            if written:
                log.info("flow %s: %d checkpoint(s) brought up to date at the stop", self.flow.name, written)
        thread = threading.Thread(target=round_, name=f"last checkpoints of flow {self.flow.name}", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        if self.checkpoints is not None:
            self.checkpoints.close()
        if self.writer is not None:
            self.writer.close()
