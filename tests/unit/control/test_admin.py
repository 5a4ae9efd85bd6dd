"""control.admin without brokers: the replication-factor check, reading a topic to its end."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from mirrorspark.control.admin import check_replication_factor
from mirrorspark.errors import ConfigError


class FakeAdmin:
    """Answers list_topics with ``brokers`` brokers, as AdminClient's metadata does."""

    def __init__(self, brokers: int) -> None:
        self.brokers = brokers

    def list_topics(self, timeout: float = 10.0) -> SimpleNamespace:
        return SimpleNamespace(brokers={i: object() for i in range(self.brokers)}, topics={})


def test_replication_factor_up_to_broker_count_passes():
    check_replication_factor(FakeAdmin(3), 3, "replication.factor", "cluster 'backup'")  # type: ignore[arg-type]
    check_replication_factor(FakeAdmin(3), 1, "replication.factor", "cluster 'backup'")  # type: ignore[arg-type]


def test_replication_factor_above_broker_count_names_key_and_cluster():
    with pytest.raises(ConfigError) as caught:
        check_replication_factor(FakeAdmin(1), 3, "primary->backup.replication.factor",  # type: ignore[arg-type]
                                 "target cluster 'backup'")
    assert str(caught.value) == ("primary->backup.replication.factor=3 but target cluster 'backup' has only 1 "
                                 "broker(s); set primary->backup.replication.factor to at most 1")
    assert caught.value.key == "primary->backup.replication.factor"


class Record:
    def __init__(self, partition: int, offset: int) -> None:
        self._partition, self._offset = partition, offset

    def error(self) -> None:
        return None

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes:
        return b"k%d" % self._offset

    def value(self) -> bytes:
        return b"v"

    def timestamp(self) -> tuple[int, int]:
        return 1, 1000 + self._offset


class FakeReader:
    """A consumer whose partition 0 ends at offset 3 (call time) and that delivers ``batches``."""

    def __init__(self, batches: list[list[Record]]) -> None:
        self.batches = batches

    def list_topics(self, topic: str, timeout: float) -> SimpleNamespace:
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions={0: None})})

    def get_watermark_offsets(self, tp, timeout: float) -> tuple[int, int]:
        return 0, 3

    def assign(self, partitions) -> None:
        pass

    def consume(self, count: int, timeout: float) -> list[Record]:
        return self.batches.pop(0) if self.batches else []

    def close(self) -> None:
        pass


def test_read_to_end_stops_at_the_end_of_call_time(monkeypatch):
    import mirrorspark.control.admin as admin

    reader = FakeReader([[Record(0, 0), Record(0, 1)], [Record(0, 2), Record(0, 3)]])  # 3 was written later
    monkeypatch.setattr(admin, "consumer", lambda conf: reader)
    assert [(key, offset) for key, _, _, offset, _ in admin.read_to_end({}, "t")] == \
        [(b"k0", 0), (b"k1", 1), (b"k2", 2)]


def test_read_to_end_refuses_a_partial_read(monkeypatch):
    import mirrorspark.control.admin as admin
    from mirrorspark.errors import OperationalError

    reader = FakeReader([[Record(0, 0)]])  # then nothing: offsets 1 and 2 never come
    monkeypatch.setattr(admin, "consumer", lambda conf: reader)
    with pytest.raises(OperationalError, match=r"made no progress for 0 s before its end \(t\[0\] \(end 3\)\)"):
        list(admin.read_to_end({}, "t", timeout=0.2))


def test_a_partition_whose_leader_is_being_elected_is_asked_again():
    import time as _time

    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    from mirrorspark.control.admin import watermarks

    class Settling:
        calls = 0

        def get_watermark_offsets(self, tp, timeout):
            self.calls += 1
            if self.calls < 3:
                raise KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION))
            return (0, 42)

    consumer = Settling()
    assert watermarks(consumer, TopicPartition("t", 0), deadline=_time.monotonic() + 5) == (0, 42)
    assert consumer.calls == 3

    class Broken(Settling):
        def get_watermark_offsets(self, tp, timeout):
            raise KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))

    with pytest.raises(KafkaException):
        watermarks(Broken(), TopicPartition("t", 0), deadline=_time.monotonic() + 5)


def test_a_groups_own_setting_reads_as_librdkafka_names_its_source():
    from confluent_kafka.admin import ConfigSource

    from mirrorspark.control.java_clients import _config_source

    assert _config_source("DYNAMIC_GROUP_CONFIG") == ConfigSource.GROUP_CONFIG
    assert _config_source("DYNAMIC_TOPIC_CONFIG") == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert _config_source("DYNAMIC_BROKER_LOGGER_CONFIG") == ConfigSource.UNKNOWN_CONFIG


class StaleMetadataAdmin:
    """librdkafka's admin client as measured right after CreateTopics: list_offsets calls a topic created
    moments before unknown, from its cached metadata, until a DescribeTopics of it refreshes the cache."""

    def __init__(self, *, existing: dict[str, int], cached: set[str]) -> None:
        self.existing = existing  # topic -> partition count on the cluster
        self.cached = set(cached)  # topics the client's metadata knows
        self.described: list[list[str]] = []

    @staticmethod
    def _done(result=None, error=None):
        from concurrent.futures import Future

        future: Future = Future()
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
        return future

    def list_offsets(self, wanted, **_):
        from confluent_kafka import KafkaError, KafkaException

        return {tp: self._done(SimpleNamespace(offset=7))
                if tp.topic in self.cached and tp.partition < self.existing.get(tp.topic, 0)
                else self._done(error=KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
                for tp in wanted}

    def describe_topics(self, topics, **_):
        from confluent_kafka import KafkaError, KafkaException

        names = list(topics.topic_names)
        self.described.append(names)
        out = {}
        for topic in names:
            if topic in self.existing:
                self.cached.add(topic)
                parts = [SimpleNamespace(id=p, leader=SimpleNamespace(id=1)) for p in range(self.existing[topic])]
                out[topic] = self._done(SimpleNamespace(topic_id=f"id-{topic}", partitions=parts))
            else:
                out[topic] = self._done(error=KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
        return out


def test_a_topic_just_created_is_not_taken_for_missing_because_the_clients_metadata_lags():
    from mirrorspark.control.admin import partition_offsets

    admin = StaleMetadataAdmin(existing={"old": 1, "new": 2}, cached={"old"})
    ends = partition_offsets(admin, [("old", 0), ("new", 0), ("new", 1), ("gone", 0)], timeout=5)
    assert ends == {("old", 0): 7, ("new", 0): 7, ("new", 1): 7}, "a deleted topic alone is left out"
    assert admin.described == [["gone", "new"]], "one description of the partitions called unknown"


def test_a_partition_the_cluster_does_not_have_is_left_out_without_waiting():
    import time as _time

    from mirrorspark.control.admin import partition_offsets

    admin = StaleMetadataAdmin(existing={"t": 1}, cached={"t"})
    started = _time.monotonic()
    assert partition_offsets(admin, [("t", 0), ("t", 1)], timeout=5) == {("t", 0): 7}
    assert _time.monotonic() - started < 1, "a partition the description lacks is not asked again"
