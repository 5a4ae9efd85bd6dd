"""A cluster's consumer groups as the control plane reads and writes them: the ids, a group's
committed offsets, its state and members, and offsets committed for an idle group.

Two clients give the same answers. The running process asks through Kafka's own Admin client in
the driver JVM (:class:`JavaGroups`): these are group-coordinator requests, and librdkafka aborts
the whole process when one meets a connection that has just dropped (its issue 4605, both instances
of the second hour soak, ADR 0022), which is what a cluster outage does to a replicator that runs for
months. The short commands (``failover``, ``audit``), which start no JVM, ask through librdkafka
(:class:`RdkafkaGroups`), each request sent only after the cluster answered.

Either raises :class:`GroupsNotAnswering` (a :class:`ClusterFailure`: ask again later) when the
cluster or its coordinator does not answer, and :class:`GroupRequestRefused` when it answered no.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirrorspark.control.admin import coordinator_gate, not_answering
from mirrorspark.errors import ClusterFailure, OperationalError
from mirrorspark.partition import Partition

if TYPE_CHECKING:
    from mirrorspark.jvm_bridge import JvmGroupAdmin

TIMEOUT_S = 30.0
# States in which a group has no member that owns its offsets (MM2 writes only those; a group that
# does not exist is DEAD).
IDLE_STATES = frozenset({"EMPTY", "DEAD", "UNKNOWN"})
# librdkafka's names of the two rebalancing states, as Kafka's Java client names them.
_KAFKA_NAMES = {"PREPARING_REBALANCING": "PREPARING_REBALANCE", "COMPLETING_REBALANCING": "COMPLETING_REBALANCE"}

Offsets = Mapping[Partition, tuple[int, str]]  # partition -> (offset, metadata)


class GroupsNotAnswering(ClusterFailure):
    """The cluster or its group coordinator did not answer: the request is asked again later."""


class GroupRequestRefused(OperationalError):
    """The cluster answered and refused a group request (authorization, a group with members)."""


@dataclass(frozen=True)
class GroupDescription:
    """A group's state as Kafka names it (``EMPTY``, ``STABLE``, ``DEAD``...), its member count and,
    where the client gives them, its members as ``client-id@host`` (to name them in a refusal)."""

    state: str
    members: int
    names: tuple[str, ...] = ()

    @property
    def idle(self) -> bool:
        """No member owns its offsets: they may be written from outside."""
        return self.state in IDLE_STATES


class Groups(Protocol):
    """One cluster's consumer groups."""

    def ids(self) -> list[str]: ...

    def committed(self, group: str) -> dict[Partition, tuple[int, str]]: ...

    def describe(self, group: str) -> GroupDescription: ...

    def describe_all(self, groups: Sequence[str]) -> dict[str, GroupDescription | GroupRequestRefused]: ...

    def commit(self, group: str, offsets: Offsets) -> None: ...


class RdkafkaGroups:
    """Through a librdkafka admin client; the cluster is asked first (``coordinator_gate``) before a
    command's first group request, so none is sent into an outage."""

    def __init__(self, *, admin: AdminClient, cluster: str) -> None:
        self.admin = admin
        self.cluster = cluster
        self._answered = False

    def ids(self) -> list[str]:
        listed = self._ask("listing consumer groups", lambda: self.admin.list_consumer_groups(
            request_timeout=TIMEOUT_S).result())
        return sorted(g.group_id for g in listed.valid)

    def committed(self, group: str) -> dict[Partition, tuple[int, str]]:
        result = self._ask(f"reading the offsets of group {group}", lambda: self.admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT_S)[group].result())
        return {(tp.topic, tp.partition): (tp.offset, tp.metadata or "") for tp in result.topic_partitions or []
                if tp.offset >= 0 and tp.error is None}

    def describe(self, group: str) -> GroupDescription:
        found = self._ask(f"describing group {group}", lambda: self.admin.describe_consumer_groups(
            [group], request_timeout=TIMEOUT_S)[group].result())
        return _described(found)

    def describe_all(self, groups: Sequence[str]) -> dict[str, GroupDescription | GroupRequestRefused]:
        if not groups:
            return {}
        futures = self._ask("describing groups", lambda: self.admin.describe_consumer_groups(
            list(groups), request_timeout=TIMEOUT_S))
        out: dict[str, GroupDescription | GroupRequestRefused] = {}
        for group in sorted(futures):
            try:
                found = self._ask(f"describing group {group}", futures[group].result)
            except GroupRequestRefused as exc:
                out[group] = exc
                continue
            out[group] = _described(found)
        return out

    def commit(self, group: str, offsets: Offsets) -> None:
        partitions = [TopicPartition(topic, partition, offset, metadata) if metadata else
                      TopicPartition(topic, partition, offset)
                      for (topic, partition), (offset, metadata) in sorted(offsets.items())]
        self._ask(f"committing offsets of group {group}", lambda: self.admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, partitions)], request_timeout=TIMEOUT_S)[group].result())

    def _ask(self, what: str, call: Callable):
        if not self._answered:
            try:
                coordinator_gate(self.admin, self.cluster)
            except ClusterFailure as exc:
                raise GroupsNotAnswering(str(exc)) from None
            self._answered = True
        try:
            return call()
        except KafkaException as exc:
            if not_answering(exc):
                self._answered = False  # ask the cluster first again before the next request
                raise GroupsNotAnswering(f"{self.cluster}: {what}: {exc}") from None
            raise GroupRequestRefused(f"{self.cluster}: {what}: {exc}") from None


def _described(found) -> GroupDescription:
    """librdkafka's ConsumerGroupDescription as Kafka's Java client names it."""
    return GroupDescription(state=_KAFKA_NAMES.get(found.state.name, found.state.name), members=len(found.members),
                            names=tuple(sorted(f"{m.client_id}@{(m.host or '').lstrip('/')}" for m in found.members)))


class JavaGroups:
    """Through Kafka's Admin client in the driver JVM, made at the first request from ``admin()``
    (the JVM starts while the flows are assembled) with the cluster's client settings as MM2 gives
    them to its admin client."""

    def __init__(self, *, admin: Callable[[], JvmGroupAdmin], cluster: str) -> None:
        self._make = admin
        self._admin: JvmGroupAdmin | None = None
        self._lock = threading.Lock()  # the scheduler's lanes and the status page ask from their threads
        self.cluster = cluster

    def _java(self) -> JvmGroupAdmin:
        with self._lock:
            if self._admin is None:
                self._admin = self._make()
            return self._admin

    def ids(self) -> list[str]:
        return self._ask(lambda java: java.group_ids(int(TIMEOUT_S * 1000)))

    def committed(self, group: str) -> dict[Partition, tuple[int, str]]:
        return self._ask(lambda java: java.committed(group, int(TIMEOUT_S * 1000)))

    def describe(self, group: str) -> GroupDescription:
        state, members = self._ask(lambda java: java.describe(group, int(TIMEOUT_S * 1000)))
        return GroupDescription(state=state, members=members)

    def describe_all(self, groups: Sequence[str]) -> dict[str, GroupDescription | GroupRequestRefused]:
        if not groups:
            return {}
        found = self._ask(lambda java: java.describe_all(groups, int(TIMEOUT_S * 1000)))
        return {group: GroupRequestRefused(f"{self.cluster}: {row}") if isinstance(row, str)
                else GroupDescription(state=row[0], members=row[1]) for group, row in found.items()}

    def commit(self, group: str, offsets: Offsets) -> None:
        self._ask(lambda java: java.commit(group, offsets, int(TIMEOUT_S * 1000)))

    def committed_stable(self, group: str, partitions: Sequence[Partition]) -> tuple[dict[Partition, tuple[int, str]],
                                                                                      list[Partition]]:
        """The offsets a read_committed consumer sees, and the partitions whose offset sits in an open
        transaction (no answer for them yet)."""
        return self._ask(lambda java: java.committed_stable(group, partitions, int(TIMEOUT_S * 1000)))

    def fence(self, transactional_ids: Sequence[str]) -> None:
        """Abort what previous holders of these transactional ids left open, and refuse those holders."""
        self._ask(lambda java: java.fence(transactional_ids, int(TIMEOUT_S * 1000)))

    def fence_open(self, prefix: str) -> list[str]:
        """Fence every transactional id under ``prefix`` whose transaction is open on the cluster (whatever
        task layout its writer had); returns the ids fenced."""
        return self._ask(lambda java: java.fence_open(prefix, int(TIMEOUT_S * 1000)))

    def close(self) -> None:
        with self._lock:
            admin, self._admin = self._admin, None
        if admin is not None:
            admin.close()

    def _ask(self, call: Callable):
        from mirrorspark.jvm_bridge import JvmError

        try:
            return call(self._java())
        except JvmError as exc:
            if exc.kind == "NotAnswering":
                raise GroupsNotAnswering(f"{self.cluster}: {exc.detail}") from None
            if exc.kind == "Refused":
                raise GroupRequestRefused(f"{self.cluster}: {exc.detail}") from None
            raise
