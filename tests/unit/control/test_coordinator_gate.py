"""Group requests are never sent into an outage, and an outage ends a round at its first group:
librdkafka aborts the process when a group-coordinator request meets a connection that just dropped
(upstream issue 4605). The running process asks through Kafka's Java Admin client
(``GroupAdminTest`` and the integration tests); the short commands through librdkafka, gated."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from mirrorspark.config import parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.control.admin import admin_client, coordinator_gate, not_answering
from mirrorspark.control.groups import GroupDescription, GroupRequestRefused, GroupsNotAnswering, RdkafkaGroups
from mirrorspark.errors import ClusterFailure
from mirrorspark.offsets.checkpoint_store import CheckpointStore
from mirrorspark.offsets.checkpoint_task import CheckpointTask
from mirrorspark.offsets.group_filter import GroupFilter
from mirrorspark.offsets.group_sync import GroupOffsetSync
from mirrorspark.policy import policy_for_flow
from mirrorspark.policy.topic_selection import TopicSelection

NOBODY = "127.0.0.1:9"  # nothing listens: a cluster in an outage, as a real client sees it
FLOW = parse_config(parse_properties(f"clusters = a, b\na.bootstrap.servers = {NOBODY}\n"
                                     f"b.bootstrap.servers = {NOBODY}\na->b.enabled = true\n")).enabled_flows[0]


def test_a_cluster_that_does_not_answer_is_refused_by_the_gate_naming_it():
    started = time.monotonic()
    with pytest.raises(ClusterFailure, match="source cluster a does not answer"):
        coordinator_gate(admin_client({"bootstrap.servers": NOBODY}), "source cluster a", timeout=1.0)
    assert time.monotonic() - started < 10


def test_librdkafka_group_requests_ask_the_cluster_first():
    """The gate's answer (5 s), not the group request's own 30 s timeout: no request was sent."""
    started = time.monotonic()
    with pytest.raises(GroupsNotAnswering, match="cluster a does not answer"):
        RdkafkaGroups(admin=admin_client({"bootstrap.servers": NOBODY}), cluster="cluster a").committed("g")
    assert time.monotonic() - started < 15


class Target:
    """A target's groups as the sync sees them: g1..g3 idle; ``fail`` says how a request ends."""

    def __init__(self, fail: Exception | None) -> None:
        self.fail, self.asked, self.committed_to = fail, [], []

    def describe(self, group: str) -> GroupDescription:
        raise AssertionError("a round describes its groups in one request")

    def describe_all(self, groups) -> dict:
        self.asked.append(list(groups))
        if isinstance(self.fail, GroupsNotAnswering):
            raise self.fail
        if self.fail is not None:
            return {group: self.fail for group in groups}
        return {group: GroupDescription(state="DEAD", members=0) for group in groups}

    def committed(self, group: str) -> dict:
        return {}

    def commit(self, group: str, offsets) -> None:
        self.committed_to.append(group)

    def ids(self) -> list[str]:
        return []


def sync_of(target: Target, monkeypatch) -> GroupOffsetSync:
    store = CheckpointStore()
    monkeypatch.setattr(store, "groups", lambda: {"g1", "g2", "g3"})
    return GroupOffsetSync(flow_name="a->b", target=target, store=store)


def test_a_group_sync_round_describes_its_groups_in_one_request_and_ends_when_the_target_does_not_answer(
        monkeypatch):
    target = Target(GroupsNotAnswering("cluster b: describing group g1: timed out"))
    with pytest.raises(ClusterFailure, match="describing group g1"):
        sync_of(target, monkeypatch).run_once()
    assert target.asked == [["g1", "g2", "g3"]] and target.committed_to == []


def test_a_group_the_target_refuses_is_skipped_and_the_round_goes_on(monkeypatch):
    target = Target(GroupRequestRefused("cluster b: describing group: GroupAuthorizationException"))
    assert sync_of(target, monkeypatch).run_once() == {}
    assert target.asked == [["g1", "g2", "g3"]]


def test_a_checkpoint_round_stops_at_the_first_group_the_source_does_not_answer_for():
    selection = TopicSelection(FLOW, policy_for_flow(FLOW.settings, "a"))

    class Source(Target):
        def ids(self) -> list[str]:
            return ["g1", "g2"]

        def committed(self, group: str) -> dict:
            self.asked.append(group)
            raise GroupsNotAnswering(f"cluster a: reading the offsets of group {group}: timed out")

    source = Source(None)
    task = CheckpointTask(flow_name="a->b", target_alias="b", selection=selection,
                          groups=GroupFilter(FLOW.options, None), source=source,
                          target=None,  # type: ignore[arg-type]
                          target_conf={}, translate=lambda topic, partition, offset, bound: None,
                          replication_factor=1, resets=(lambda: set(), lambda done: None))
    task._producer = object()  # type: ignore[assignment]
    with pytest.raises(ClusterFailure, match="offsets of group g1"):
        task.run_once()
    assert source.asked == ["g1"]


def test_only_codes_of_a_cluster_that_does_not_answer_count_as_not_answering():
    assert not_answering(KafkaException(KafkaError(KafkaError._TIMED_OUT)))
    assert not_answering(KafkaException(KafkaError(KafkaError.COORDINATOR_NOT_AVAILABLE)))
    assert not not_answering(KafkaException(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED)))
    assert not not_answering(KafkaException("text only"))


def test_the_java_groups_client_is_made_once_and_its_failures_keep_their_meaning():
    """What Kafka's Admin client in the driver JVM raises (``GroupAdmin.NotAnswering``/``Refused``, as
    py4j hands them over) becomes the same two errors the librdkafka side raises."""
    from mirrorspark.control.groups import JavaGroups
    from mirrorspark.jvm_bridge import JvmError

    made: list[int] = []

    class Admin:
        def __init__(self, kind: str) -> None:
            self.kind = kind

        def committed(self, group: str, timeout_ms: int) -> dict:
            raise JvmError(call="GroupAdmin.committed", kind=self.kind, detail=f"reading the offsets of group {group}",
                           text="")

    def client(kind: str) -> JavaGroups:
        return JavaGroups(admin=lambda: made.append(1) or Admin(kind), cluster="cluster a")  # type: ignore[arg-type]

    answering_not = client("NotAnswering")
    for _ in range(2):
        with pytest.raises(GroupsNotAnswering, match="cluster a: reading the offsets of group g"):
            answering_not.committed("g")
    assert made == [1]
    with pytest.raises(GroupRequestRefused, match="cluster a: reading the offsets of group g"):
        client("Refused").committed("g")
    with pytest.raises(JvmError, match="Py4JNetworkError"):
        client("Py4JNetworkError").committed("g")
