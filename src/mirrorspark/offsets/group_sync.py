"""Consumer-group offset sync (MM2's KIP-545): commit translated offsets to the target group.

Only groups with no active members on the target are written (an active group owns its offsets),
and a partition is never moved backwards: MM2's rules, applied before the call instead of after
the broker refuses it.
"""
from __future__ import annotations

import logging

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirrorspark.control.admin import coordinator_gate, not_answering
from mirrorspark.errors import ClusterFailure
from mirrorspark.offsets.checkpoint_store import CheckpointStore
from mirrorspark.partition import Partition

log = logging.getLogger(__name__)

_WRITABLE = {ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD, ConsumerGroupState.UNKNOWN}


def group_state(admin: AdminClient, group: str) -> ConsumerGroupState:
    """The group's state on ``admin``'s cluster; DEAD when it does not exist there."""
    description = admin.describe_consumer_groups([group], request_timeout=30)[group].result()
    return description.state


def committed_offsets(admin: AdminClient, group: str) -> dict[Partition, int]:
    result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                               request_timeout=30)[group].result()
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions or [] if tp.offset >= 0}


def commit_offsets(admin: AdminClient, group: str, offsets: dict[Partition, tuple[int, str]]) -> None:
    partitions = [TopicPartition(topic, partition, offset, metadata) if metadata else
                  TopicPartition(topic, partition, offset)
                  for (topic, partition), (offset, metadata) in sorted(offsets.items())]
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, partitions)],
                                       request_timeout=30)[group].result()


class GroupOffsetSync:
    """Every ``sync.group.offsets.interval.seconds``: the checkpointed offsets onto idle target groups."""

    def __init__(self, flow_name: str, target: AdminClient, store: CheckpointStore) -> None:
        self.flow_name = flow_name
        self.target = target
        self.store = store
        self._reported_active: set[str] = set()

    def run_once(self) -> dict[str, int]:
        """Returns partitions written per group."""
        written: dict[str, int] = {}
        groups = sorted(self.store.groups())
        if groups:
            coordinator_gate(self.target, f"the target of flow {self.flow_name}")
        for group in groups:
            try:
                count = self.sync_group(group)
            except KafkaException as exc:
                if not_answering(exc):  # the rest of the round would only send more requests into an outage
                    raise ClusterFailure(f"flow {self.flow_name}: syncing offsets of group {group} failed: {exc}") \
                        from None
                log.warning("flow %s: syncing offsets of group %s failed: %s", self.flow_name, group, exc)
                continue
            if count:
                written[group] = count
        return written

    def sync_group(self, group: str) -> int:
        state = group_state(self.target, group)
        if state not in _WRITABLE:
            if group not in self._reported_active:
                log.info("flow %s: group %s has active members on the target (%s); its offsets are left to it",
                         self.flow_name, group, state.name)
                self._reported_active.add(group)
            return 0
        self._reported_active.discard(group)
        current = committed_offsets(self.target, group) if state == ConsumerGroupState.EMPTY else {}
        wanted = {}
        for checkpoint in self.store.for_group(group):
            key = (checkpoint.topic, checkpoint.partition)
            if key in current and current[key] >= checkpoint.downstream:
                continue  # never move a target group backwards
            wanted[key] = (checkpoint.downstream, checkpoint.metadata)
        if wanted:
            commit_offsets(self.target, group, wanted)
            log.info("flow %s: synced %d offset(s) of group %s to the target", self.flow_name, len(wanted), group)
        return len(wanted)
