"""Keep a flow's remote topics in step with the source: create them with the source's partition
count, grow their partitions, re-create them if deleted; never delete or shrink anything."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from mirrorspark.config.model import FlowConfig
from mirrorspark.control.admin import check_replication_factor, topic_partitions
from mirrorspark.errors import ConfigError, OperationalError
from mirrorspark.policy.topic_selection import TopicSelection

if TYPE_CHECKING:
    from mirrorspark.control.topic_configs import TopicConfigs

log = logging.getLogger(__name__)
T = TypeVar("T")

# A KRaft controller refuses a request whose change takes more metadata records than this ("Unable to
# perform excessively large batch operation"; ``QuorumController.MAX_RECORDS_PER_USER_OP``), and one that
# adds more partitions ("Excessively large number of partitions per request"). A topic created is a
# topic record, a record per partition and one per config it is given; a partition added, one record.
RECORDS_PER_REQUEST = 10_000


def creation_records(topic: NewTopic) -> int:
    """The metadata records a controller writes to create ``topic``."""
    return 1 + topic.num_partitions + len(topic.config or {})


def in_requests(items: list[T], records: Callable[[T], int]) -> list[list[T]]:
    """``items`` in consecutive requests of at most ``RECORDS_PER_REQUEST`` metadata records each (an
    item larger than that alone in its request: the broker names it when it refuses)."""
    requests: list[list[T]] = []
    size = 0
    for item in items:
        n = records(item)
        if not requests or size + n > RECORDS_PER_REQUEST:
            requests.append([])
            size = 0
        requests[-1].append(item)
        size += n
    return requests


@dataclass(frozen=True)
class TopicPlan:
    """Source topic -> (remote topic, partition count) for everything a flow replicates now, and
    ``source_of``: remote topic -> source topic, the one inverse of ``remote`` (built once per plan;
    a remote topic has one source, ``RemoteNames`` refuses a plan where it would not)."""

    remote: dict[str, str] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)
    source_of: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "source_of", {remote: source for source, remote in self.remote.items()})


class RemoteNames:
    """Which (flow, source topic) writes each remote topic of each target cluster, shared by every flow
    of a process: two sources writing one remote topic (``topic.map`` onto a name the policy gives
    another topic, or two flows into one cluster under IdentityReplicationPolicy) is refused before
    anything is created or written."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owners: dict[tuple[str, str], tuple[str, str]] = {}  # (target, remote) -> (flow, source topic)

    def claim(self, flow: FlowConfig, remote: dict[str, str]) -> None:
        """Record ``flow``'s plan (source topic -> remote topic), replacing its previous one; raise
        ConfigError naming topic.map and both sources when a remote topic already has another source."""
        target = flow.target.alias
        with self._lock:
            owners = {k: v for k, v in self._owners.items() if v[0] != flow.name}
            for source_topic, name in sorted(remote.items()):
                other = owners.get((target, name))
                if other is not None:
                    key = flow.where("topic.map")
                    first = other[1] if other[0] == flow.name else f"{other[1]} of flow {other[0]}"
                    raise ConfigError(
                        f"{key}: remote topic {name!r} on cluster {target!r} would be written from both {first} "
                        f"and {source_topic} of flow {flow.name}: two sources must not write one remote topic; "
                        f"give one of them another name with {key} (or {flow.where('replication.policy.class')}) "
                        f"or leave it out with {flow.where('topics.exclude')}", key)
                owners[(target, name)] = (flow.name, source_topic)
            self._owners = owners


class RemoteTopicsError(OperationalError):
    """A remote topic could not be created or grown; replication must not write to it."""


class RemoteTopics:
    """Maintains the remote topics of one flow on its target cluster."""

    def __init__(self, *, flow: FlowConfig, selection: TopicSelection, source: AdminClient, target: AdminClient,
                 target_refresh_seconds: float = 600.0, configs: TopicConfigs | None = None,
                 names: RemoteNames | None = None,
                 before_recreate: Callable[[list[str]], None] | None = None) -> None:
        """``before_recreate``: called with remote topics deleted on the target just before they are made
        again (the restart drops what this process's producers still retry for them)."""
        self.flow = flow
        self.before_recreate = before_recreate
        self.selection = selection
        self.policy = selection.policy
        self.source = source
        self.target = target
        self.target_refresh_seconds = target_refresh_seconds
        self.configs = configs
        self.names = names if names is not None else RemoteNames()
        self._lock = threading.Lock()
        self.plan = TopicPlan()
        self._last_target_check = 0.0
        self.fixed_topics: frozenset[str] | None = None
        self.created: set[str] = set()  # remote topics this process created: they hold nothing it did not write
        self.seen: set[str] = set()  # remote topics found on the target since the start
        self.gone: set[str] = set()  # ... and deleted there since, not re-created yet (see ``refresh``)

    def source_of(self, remote_topic: str) -> str | None:
        """The source topic replicated into ``remote_topic`` by this flow, if any."""
        return self.plan.source_of.get(remote_topic)

    def freeze_topics(self) -> frozenset[str]:
        """``refresh.topics.enabled = false``: replicate only the topics found now (MM2 finds new
        ones only at its next start). Partitions those topics gain are still followed, because
        Spark reads them anyway and dropping their records would lose data."""
        self.fixed_topics = frozenset(self.refresh(force_target_check=True).remote)
        return self.fixed_topics

    def check_replication_factor(self) -> None:
        """Refuse a replication.factor the target cannot honour, before any data moves."""
        rf = self.flow.options.replication_factor
        check_replication_factor(self.target, rf, self.flow.where("replication.factor"),
                                 f"target cluster {self.flow.target.alias!r}")

    def refresh(self, force_target_check: bool = False, recreate: bool = True) -> TopicPlan:
        """Re-read source topics; create or grow remote topics when needed. Cheap when nothing changed.
        Called before every batch and, on the refresh interval, by the control scheduler.

        ``recreate=False`` (the scheduler's refresh, which runs beside a batch being written) leaves a
        remote topic deleted on the target uncreated and in ``gone``: made again under a running batch,
        the batch's late records would land in the new topic and its refill copy them again. The flow
        restarts instead, and the restart's refresh re-creates it while nothing writes."""
        with self._lock:
            return self._refresh(force_target_check, recreate)

    def _refresh(self, force_target_check: bool, recreate: bool = True) -> TopicPlan:
        source_topics = topic_partitions(self.source)
        wanted = {t: n for t, n in source_topics.items() if self.selection.should_replicate(t)
                  and (self.fixed_topics is None or t in self.fixed_topics)}
        due = time.monotonic() - self._last_target_check >= self.target_refresh_seconds
        if wanted == self.plan.partitions and not (force_target_check or due):
            return self.plan
        remote = {t: self.selection.remote_name(t) for t in wanted}
        self.names.claim(self.flow, remote)  # before anything is created: one source per remote topic
        self._reconcile(wanted, remote, recreate)
        self._last_target_check = time.monotonic()
        self.plan = TopicPlan(remote, wanted)
        return self.plan

    def _reconcile(self, wanted: dict[str, int], remote: dict[str, str], recreate: bool = True) -> None:
        existing = topic_partitions(self.target)
        self.seen.update(name for name in remote.values() if name in existing)
        new = [t for t in wanted if remote[t] not in existing]
        deleted = {remote[t] for t in new if remote[t] in self.seen}
        if not recreate and deleted:
            if deleted - self.gone:
                log.warning("flow %s: remote topic(s) %s deleted on the target: re-created when the flow restarts, "
                            "while no batch writes", self.flow.name, sorted(deleted - self.gone))
            self.gone |= deleted
            new = [t for t in new if remote[t] not in deleted]
        else:
            self.gone -= deleted
        if deleted and recreate and self.before_recreate is not None:
            self.before_recreate(sorted(deleted))
        described = self.configs.describe(new) if self.configs is not None and new else {}
        to_create = [NewTopic(remote[t], wanted[t], self.flow.options.replication_factor,
                              config=self.configs.for_creation(described.get(t, {})) if self.configs else {})
                     for t in new]
        to_grow = [NewPartitions(remote[t], n) for t, n in wanted.items()
                   if remote[t] in existing and existing[remote[t]] < n]
        if to_create:
            for request in in_requests(to_create, creation_records):
                self._wait(self.target.create_topics(request), "create", tolerate=KafkaError.TOPIC_ALREADY_EXISTS)
            log.info("flow %s: created remote topics %s", self.flow.name, sorted(t.topic for t in to_create))
            self.created.update(t.topic for t in to_create)
            self.seen.update(t.topic for t in to_create)
        if to_grow:
            for growth in in_requests(to_grow, lambda g: g.new_total_count - existing[g.topic]):
                self._wait(self.target.create_partitions(growth), "grow", tolerate=KafkaError.INVALID_PARTITIONS)
            log.info("flow %s: grew partitions of %s", self.flow.name, sorted(p.topic for p in to_grow))
        if to_create or to_grow:
            self._await_metadata({remote[t]: n for t, n in wanted.items()})

    def _wait(self, futures: dict, action: str, tolerate: int) -> None:
        for topic, future in futures.items():
            try:
                future.result(timeout=60)
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() == tolerate:
                    continue
                raise RemoteTopicsError(
                    f"flow {self.flow.name}: cannot {action} remote topic {topic!r} on cluster "
                    f"{self.flow.target.alias!r}: {error.str()}") from exc

    def _await_metadata(self, expected: dict[str, int], timeout: float = 30.0) -> None:
        """Wait until the target's metadata shows every remote partition, so writes find them."""
        deadline = time.monotonic() + timeout
        while True:
            existing = topic_partitions(self.target)
            missing = [t for t, n in expected.items() if existing.get(t, 0) < n]
            if not missing:
                return
            if time.monotonic() > deadline:
                raise RemoteTopicsError(f"flow {self.flow.name}: remote topics {missing} not visible on "
                                        f"cluster {self.flow.target.alias!r} after {timeout:.0f} s")
            time.sleep(0.2)
