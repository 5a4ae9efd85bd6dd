"""RemoteTopics keeps a flow's remote topics in step with the source (create, grow, re-create; never
delete or shrink), against fake admin clients that implement only what it calls."""
from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewPartitions, NewTopic

from mirrorspark.config import ConfigError, parse_config
from mirrorspark.config.model import FlowConfig
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.control.remote_topics import RemoteNames, RemoteTopics, RemoteTopicsError, TopicPlan
from mirrorspark.policy import policy_for_flow
from mirrorspark.policy.topic_selection import TopicSelection

CLUSTERS = "clusters = A, B, C\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nC.bootstrap.servers = c:1\n"


class FakeAdmin:
    """A cluster's topics behind the three AdminClient calls RemoteTopics makes: list_topics (topics
    with their partitions, and brokers), create_topics and create_partitions (futures per topic)."""

    def __init__(self, topics: dict[str, int] | None = None, brokers: int = 1) -> None:
        self.topics = dict(topics or {})
        self.brokers = brokers
        self.listed = 0
        self.created: list[tuple[str, int, int, dict[str, str]]] = []
        self.grown: list[tuple[str, int]] = []
        # topic -> the error its next create or grow fails with, and whether the change happened all the same
        # (another writer got there first)
        self.failures: dict[str, tuple[KafkaError, bool]] = {}

    def list_topics(self, timeout: float | None = None) -> Any:
        self.listed += 1
        return SimpleNamespace(
            topics={name: SimpleNamespace(partitions=dict.fromkeys(range(n)), error=None)
                    for name, n in self.topics.items()},
            brokers=dict.fromkeys(range(self.brokers)))

    def _answer(self, topic: str, apply: Any) -> Future:
        future: Future = Future()
        error, applied = self.failures.pop(topic, (None, True))
        if applied:
            apply()
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(KafkaException(error))
        return future

    def create_topics(self, new_topics: list[NewTopic]) -> dict[str, Future]:
        self.created += [(t.topic, t.num_partitions, t.replication_factor, dict(t.config)) for t in new_topics]
        return {t.topic: self._answer(t.topic, lambda t=t: self.topics.__setitem__(t.topic, t.num_partitions))
                for t in new_topics}

    def create_partitions(self, new_parts: list[NewPartitions]) -> dict[str, Future]:
        self.grown += [(p.topic, p.new_total_count) for p in new_parts]
        return {p.topic: self._answer(p.topic, lambda p=p: self.topics.__setitem__(p.topic, p.new_total_count))
                for p in new_parts}


def flow_of(extra: str = "", name: str = "A->B") -> FlowConfig:
    text = CLUSTERS + "A->B.enabled = true\nA->C.enabled = true\nB->C.enabled = true\nreplication.factor = 1\n" + extra
    return next(f for f in parse_config(parse_properties(text)).flows if f.name == name)


def remote_topics(source: FakeAdmin, target: FakeAdmin, extra: str = "", name: str = "A->B",
                  **kwargs: Any) -> RemoteTopics:
    flow = flow_of(extra, name)
    selection = TopicSelection(flow, policy_for_flow(flow.settings, flow.source.alias))
    return RemoteTopics(flow=flow, selection=selection, source=source, target=target,  # type: ignore[arg-type]
                        **kwargs)


def test_remote_topics_are_created_with_the_source_partition_counts():
    source = FakeAdmin({"orders": 3, "payments": 1, "__consumer_offsets": 50, "x.internal": 1, "B.orders": 2})
    target = FakeAdmin({"local": 4})
    remote = remote_topics(source, target, "A->B.replication.factor = 1\n")
    plan = remote.refresh()
    # Internal and excluded topics stay home, and B.orders came from the target (a cycle).
    assert plan == TopicPlan({"orders": "A.orders", "payments": "A.payments"}, {"orders": 3, "payments": 1})
    assert sorted(target.created) == [("A.orders", 3, 1, {}), ("A.payments", 1, 1, {})]
    assert target.topics == {"local": 4, "A.orders": 3, "A.payments": 1} and target.grown == []
    assert remote.source_of("A.orders") == "orders" and remote.source_of("local") is None
    assert source.created == [] and source.grown == []  # the source is only read


def test_topic_map_and_replication_factor_are_honoured():
    source, target = FakeAdmin({"orders": 2}), FakeAdmin(brokers=3)
    remote = remote_topics(source, target, "A->B.topic.map = orders:orders-copy\nA->B.replication.factor = 3\n")
    assert remote.refresh().remote == {"orders": "orders-copy"}
    assert target.created == [("orders-copy", 2, 3, {})]


def test_partitions_grow_with_the_source_and_are_never_shrunk():
    source, target = FakeAdmin({"orders": 2, "small": 1}), FakeAdmin({"A.small": 5})
    remote = remote_topics(source, target)
    remote.refresh()
    assert target.grown == [] and target.topics["A.small"] == 5  # more on the target: left as it is
    source.topics["orders"] = 6
    assert remote.refresh().partitions == {"orders": 6, "small": 1}
    assert target.grown == [("A.orders", 6)] and target.topics["A.orders"] == 6
    assert [c[0] for c in target.created] == ["A.orders"]


def test_an_unchanged_source_is_cheap_until_the_target_check_is_due():
    source, target = FakeAdmin({"orders": 1}), FakeAdmin()
    remote = remote_topics(source, target)  # target_refresh_seconds: 600
    plan = remote.refresh()
    listed = target.listed
    del target.topics["A.orders"]  # deleted on the target behind the replicator's back
    assert remote.refresh() is plan and target.listed == listed  # the target is not asked
    assert remote.refresh(force_target_check=True) == plan
    assert target.topics == {"A.orders": 1} and len(target.created) == 2  # re-created

    due = remote_topics(source, FakeAdmin(), target_refresh_seconds=0)
    due.refresh()
    del due.target.topics["A.orders"]  # type: ignore[attr-defined]
    due.refresh()
    assert due.target.topics == {"A.orders": 1}  # type: ignore[attr-defined]


def test_new_source_topics_are_picked_up_unless_the_topics_are_frozen():
    source, target = FakeAdmin({"orders": 1}), FakeAdmin()
    remote = remote_topics(source, target)
    source.topics["invoices"] = 2
    assert set(remote.refresh().remote) == {"orders", "invoices"}

    source, target = FakeAdmin({"orders": 1}), FakeAdmin()
    frozen = remote_topics(source, target)
    assert frozen.freeze_topics() == frozenset({"orders"})
    source.topics["invoices"] = 2
    source.topics["orders"] = 3  # partitions of a frozen topic are still followed
    assert frozen.refresh().partitions == {"orders": 3}
    assert "A.invoices" not in target.topics and target.topics["A.orders"] == 3


def test_new_remote_topics_take_the_configs_topic_configs_gives_them():
    class Configs:
        def __init__(self) -> None:
            self.described: list[list[str]] = []

        def describe(self, topics: list[str]) -> dict[str, dict[str, str]]:
            self.described.append(sorted(topics))
            return {t: {"cleanup.policy": "compact", "source.only": "x"} for t in topics}

        def for_creation(self, config: dict[str, str]) -> dict[str, str]:
            return {k: v for k, v in config.items() if k != "source.only"}

    configs = Configs()
    source, target = FakeAdmin({"orders": 1, "kept": 1}), FakeAdmin({"A.kept": 1})
    remote_topics(source, target, configs=configs).refresh()
    assert configs.described == [["orders"]]  # only the topics created now are described
    assert target.created == [("A.orders", 1, 1, {"cleanup.policy": "compact"})]


def test_a_topic_created_meanwhile_is_fine_and_other_errors_stop_the_flow():
    source, target = FakeAdmin({"orders": 1}), FakeAdmin()
    target.failures["A.orders"] = (KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "exists"), True)
    assert remote_topics(source, target).refresh().remote == {"orders": "A.orders"}
    assert [c[0] for c in target.created] == ["A.orders"] and target.topics == {"A.orders": 1}

    source, target = FakeAdmin({"orders": 1}), FakeAdmin()
    target.failures["A.orders"] = (KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "not allowed to create"), False)
    with pytest.raises(RemoteTopicsError) as err:
        remote_topics(source, target).refresh()
    assert str(err.value) == "flow A->B: cannot create remote topic 'A.orders' on cluster 'B': not allowed to create"

    source, target = FakeAdmin({"orders": 4}), FakeAdmin({"A.orders": 1})
    target.failures["A.orders"] = (KafkaError(KafkaError.POLICY_VIOLATION, "no more partitions"), False)
    with pytest.raises(RemoteTopicsError, match=r"cannot grow remote topic 'A.orders'.*no more partitions"):
        remote_topics(source, target).refresh()


def test_a_partition_count_reached_meanwhile_is_fine():
    source, target = FakeAdmin({"orders": 4}), FakeAdmin({"A.orders": 1})
    target.failures["A.orders"] = (KafkaError(KafkaError.INVALID_PARTITIONS, "already has 4"), True)
    assert remote_topics(source, target).refresh().partitions == {"orders": 4}
    assert target.grown == [("A.orders", 4)] and target.topics == {"A.orders": 4}


def test_a_replication_factor_above_the_target_broker_count_is_refused():
    remote = remote_topics(FakeAdmin(), FakeAdmin(brokers=2), "A->B.replication.factor = 3\n")
    with pytest.raises(ConfigError) as err:
        remote.check_replication_factor()
    assert err.value.key == "A->B.replication.factor"
    assert "target cluster 'B' has only 2 broker(s)" in str(err.value)
    remote_topics(FakeAdmin(), FakeAdmin(brokers=3), "A->B.replication.factor = 3\n").check_replication_factor()


def test_two_flows_writing_one_remote_topic_are_refused_before_anything_is_created():
    names = RemoteNames()
    identity = "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
    target = FakeAdmin()
    remote_topics(FakeAdmin({"orders": 1}), target, identity, "A->C", names=names).refresh()
    assert [c[0] for c in target.created] == ["orders"]
    other = remote_topics(FakeAdmin({"orders": 2, "audit": 1}), target, identity, "B->C", names=names)
    with pytest.raises(ConfigError, match="'orders' on cluster 'C' would be written from both orders of flow A->C"):
        other.refresh()
    assert [c[0] for c in target.created] == ["orders"] and target.grown == []
    assert other.plan == TopicPlan()


def test_refresh_returns_once_the_target_metadata_shows_the_new_partitions():
    class SlowMetadata(FakeAdmin):
        """Created topics show in the metadata only from the third listing after their creation."""

        def __init__(self) -> None:
            super().__init__()
            self.pending: dict[str, int] = {}
            self.shown_in: int | None = None

        def list_topics(self, timeout: float | None = None) -> Any:
            if self.pending and self.listed >= self.shown_in:  # type: ignore[operator]
                self.topics.update(self.pending)
                self.pending.clear()
            return super().list_topics(timeout)

        def create_topics(self, new_topics: list[NewTopic]) -> dict[str, Future]:
            futures = super().create_topics(new_topics)
            self.pending, self.topics = dict(self.topics), {}
            self.shown_in = self.listed + 2
            return futures

    target = SlowMetadata()
    remote_topics(FakeAdmin({"orders": 3}), target).refresh()
    assert target.topics == {"A.orders": 3} and target.listed >= 3


def test_the_schedulers_refresh_leaves_a_deleted_remote_topic_to_the_restart():
    """A remote topic deleted on the target is not made again beside a running batch (its late records
    would land in the new topic, and the refill copy them again): it waits in ``gone`` for the restart's
    refresh, which re-creates it. A topic never seen before is created by either."""
    source, target = FakeAdmin({"orders": 2}), FakeAdmin()
    topics = remote_topics(source, target)
    topics.refresh(force_target_check=True, recreate=False)
    assert target.topics == {"A.orders": 2} and not topics.gone  # new: created by the scheduler's refresh too
    del target.topics["A.orders"]
    topics.refresh(force_target_check=True, recreate=False)
    assert "A.orders" not in target.topics and topics.gone == {"A.orders"}
    topics.refresh(force_target_check=True)  # the restart's
    assert target.topics == {"A.orders": 2} and not topics.gone


def test_what_producers_still_retry_for_a_deleted_remote_topic_is_dropped_before_it_is_made_again():
    """The twelfth soak run: the restart re-created a deleted remote topic while the stopped query's
    producer still retried 3 records a partition for it; they landed at its first offsets and its refill
    copied them again. The restart now hears of the topics it is about to make again first (and drops what
    this JVM's producers hold); a topic never seen is created without it."""
    source, target = FakeAdmin({"orders": 2, "pay": 1}), FakeAdmin()
    heard: list[tuple[list[str], dict]] = []
    topics = remote_topics(source, target)
    topics.before_recreate = lambda names: heard.append((names, dict(target.topics)))
    topics.refresh(force_target_check=True)
    assert heard == []  # first creation: nothing can have been sent to them
    del target.topics["A.orders"]
    topics.refresh(force_target_check=True, recreate=False)
    assert heard == []  # the scheduler's refresh leaves it to the restart
    topics.refresh(force_target_check=True)
    assert heard == [(["A.orders"], {"A.pay": 1})]  # told before the topic exists again
    assert target.topics == {"A.orders": 2, "A.pay": 1}
