"""Fail a consumer group over from one cluster to another with the translated offsets.

The plan comes from the checkpoints on the cluster the group moves to (written by the flow
``from->to``), so it works while the old cluster is down; when that cluster answers, the plan
also shows how far behind the checkpoints and the replication are. Committing happens only for
a group with no active members on the new cluster.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from confluent_kafka import KafkaException

from mirrorspark.client import client_for
from mirrorspark.config.model import MirrorConfig
from mirrorspark.control.admin import admin_client, partition_offsets
from mirrorspark.control.client_settings import admin_settings
from mirrorspark.control.groups import RdkafkaGroups
from mirrorspark.errors import ConfigError, Conflict, OperationalError
from mirrorspark.integrity.loss import LossReport
from mirrorspark.partition import Partition


class GroupActive(Conflict):
    """The group has members on the cluster it should move to."""


class RecordsLost(Conflict):
    """Records the group has not read yet were reported lost by the flow (never replicated, gone
    from the source): failing over skips them, so it is only done when the user says so."""


class CheckpointAhead(OperationalError):
    """A checkpoint points past the end of its remote partition (or the partition is gone): it was
    written for data that is not there (a re-created remote topic), and committing it would skip
    records the consumer never read."""


@dataclass
class PartitionPlan:
    topic: str            # on the new cluster
    partition: int
    source_topic: str     # on the old cluster
    checkpoint_upstream: int
    translated: int
    end: int | None = None                 # log end on the new cluster
    current: int | None = None             # the group's committed offset there now
    source_committed: int | None = None    # the group's committed offset on the old cluster
    source_end: int | None = None
    lost: int | None = None                # records reported lost at or after the group's position (None: unknown)
    # Active/active on the same names: records of the topic both clusters write that the group read on
    # the old cluster and reads again from the checkpoint (None: not such a topic, or not known here).
    read_twice: int | None = None

    @property
    def behind_checkpoint(self) -> int | None:
        """Records the group consumed after the last checkpoint (re-delivered after failover)."""
        return None if self.source_committed is None else max(0, self.source_committed - self.checkpoint_upstream)

    @property
    def not_replicated(self) -> int | None:
        """Unconsumed records on the old cluster not yet on the new one (contiguous estimate)."""
        if self.source_end is None or self.source_committed is None or self.end is None:
            return None
        return max(0, (self.source_end - self.source_committed) - (self.end - self.translated))

    @property
    def past_end(self) -> bool:
        """The translated offset is beyond the end of the remote partition (which exists)."""
        return self.end is not None and self.translated > self.end

    @property
    def missing(self) -> bool:
        """The remote partition does not exist (any more): nothing to commit for it."""
        return self.end is None

    def as_dict(self) -> dict:
        return {**asdict(self), "behind_checkpoint": self.behind_checkpoint, "not_replicated": self.not_replicated,
                "past_end": self.past_end, "missing": self.missing}


@dataclass
class FailoverPlan:
    group: str
    source: str
    target: str
    state: str
    partitions: list[PartitionPlan]
    source_reachable: bool


def _connection(config: MirrorConfig, alias: str) -> dict:
    if alias not in config.clusters:
        raise ConfigError(f"cluster {alias!r} is not in clusters ({', '.join(config.clusters)})", "clusters")
    return admin_settings(config.clusters[alias])


def _lost_unread(reports: Sequence[LossReport] | None, row: PartitionPlan) -> int | None:
    """Records of the row's source partition the flow reported lost where the group has not read yet."""
    if reports is None:
        return None
    position = row.source_committed if row.source_committed is not None else row.checkpoint_upstream
    return sum(r.records for r in reports if r.topic == row.source_topic and r.partition == row.partition
               and (r.last < 0 or r.last >= position))


def plan_failover(config: MirrorConfig, group: str, source: str, target: str,
                  losses: Sequence[LossReport] | None = None,
                  read_twice: Mapping[tuple[str, str, int], tuple[int, int]] | None = None) -> FailoverPlan:
    """What moving ``group`` from ``source`` to ``target`` would commit, from ``target``'s checkpoints."""
    target_conf = _connection(config, target)
    client = client_for(config, target, remote_alias=source)
    checkpoints = client.remote_consumer_checkpoints(group, source)
    target_admin = admin_client(target_conf)
    target_groups = RdkafkaGroups(admin=target_admin, cluster=f"cluster {target}")
    state = target_groups.describe(group).state
    current = {key: offset for key, (offset, _) in target_groups.committed(group).items()}
    policy = client.policy
    rows = []
    ends = partition_offsets(target_admin, sorted(checkpoints))  # one request; partitions gone are left out
    for (topic, partition), cp in sorted(checkpoints.items()):
        source_topic = (policy.upstream_topic(topic) if policy.topic_source(topic) == source
                        else policy.format_remote_topic(target, topic)) or topic
        rows.append(PartitionPlan(topic, partition, source_topic, cp.upstream, cp.downstream,
                                  ends.get((topic, partition)), current.get((topic, partition))))
    reachable = _fill_source_side(config, group, source, rows)
    for row in rows:
        row.lost = _lost_unread(losses, row)
        upstream, twice = (read_twice or {}).get((group, row.topic, row.partition), (None, None))
        row.read_twice = twice if upstream == row.checkpoint_upstream else None
    return FailoverPlan(group, source, target, state, rows, reachable)


def _fill_source_side(config: MirrorConfig, group: str, source: str, rows: list[PartitionPlan]) -> bool:
    """Source-side figures when the old cluster answers within a few seconds (it may be down)."""
    conf = {**_connection(config, source), "socket.timeout.ms": 5000}
    try:
        admin = admin_client(conf)
        admin.list_topics(timeout=5)
        committed = {key: offset for key, (offset, _) in
                     RdkafkaGroups(admin=admin, cluster=f"cluster {source}").committed(group).items()}
        source_ends = partition_offsets(admin, sorted({(row.source_topic, row.partition) for row in rows}), timeout=5)
        for row in rows:
            row.source_committed = committed.get((row.source_topic, row.partition))
            row.source_end = source_ends.get((row.source_topic, row.partition))
    except (KafkaException, OperationalError):  # down, or its group not readable: figures left out
        return False
    return True


def execute_failover(config: MirrorConfig, plan: FailoverPlan, allow_loss: bool = False) -> dict[Partition, int]:
    """Commit the plan's offsets for the group on the new cluster; never moves a partition backwards.

    Raises GroupActive when consumers of the group are connected there, and CheckpointAhead (nothing
    committed) when a translated offset is past its remote partition's end. Checkpoints of remote
    partitions that no longer exist are left out (the CLI lists them).
    """
    lost = [row for row in plan.partitions if row.lost]
    if lost and not allow_loss:
        listed = ", ".join(f"{r.source_topic}[{r.partition}]: {r.lost}" for r in lost)
        raise RecordsLost(f"refusing to fail group {plan.group!r} over: records it has not read yet were never "
                          f"replicated and are gone from {plan.source!r} ({listed}; see `mirrorspark status`). The "
                          "group would skip them on the new cluster; add --allow-loss to fail over anyway")
    ahead = [row for row in plan.partitions if row.past_end]
    if ahead:
        listed = ", ".join(f"{r.topic}[{r.partition}] checkpoint {r.translated} > end {r.end}" for r in ahead)
        raise CheckpointAhead(f"refusing to fail group {plan.group!r} over: {listed}. The checkpoints were written for "
                              "records that are not on the target (a remote topic deleted or re-created?); wait for "
                              f"the flow {plan.source}->{plan.target} to write new checkpoints, then run it again")
    target_groups = RdkafkaGroups(admin=admin_client(_connection(config, plan.target)),
                                  cluster=f"cluster {plan.target}")
    described = target_groups.describe(plan.group)
    if not described.idle:
        raise GroupActive(f"group {plan.group!r} has active members on cluster {plan.target!r} (state "
                          f"{described.state}); stop its consumers there first, then run the command again")
    wanted = {(row.topic, row.partition): (row.translated, "") for row in plan.partitions
              if not row.missing and (row.current is None or row.current < row.translated)}
    if wanted:
        target_groups.commit(plan.group, wanted)
    return {key: offset for key, (offset, _) in wanted.items()}
