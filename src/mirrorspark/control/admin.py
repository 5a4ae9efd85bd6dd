"""Admin clients and the small admin calls the rest of mirrorspark builds on."""
from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirrorspark.control.java_clients import uses_java
from mirrorspark.errors import ClusterFailure, ConfigError, NotFound, OperationalError
from mirrorspark.partition import Partition, kafka_topic_id

_QUIET = logging.getLogger("mirrorspark.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def admin_client(conf: dict[str, Any]) -> AdminClient:
    """An admin client: Kafka's Java one when ``conf`` asks for it (``java_clients``), else librdkafka's,
    whose chatter goes to a silent logger, not stderr."""
    if uses_java(conf):
        from mirrorspark.control.java_clients import JavaAdminClient

        return cast(AdminClient, JavaAdminClient(conf))
    # AdminClient's stub types config values as str/int/float/bool, leaving out the documented "logger".
    settings: dict[str, Any] = {**conf, "logger": _QUIET}
    return AdminClient(settings)


def producer(conf: dict[str, Any]):
    """A producer: Kafka's Java one when ``conf`` asks for it, else librdkafka's (quiet)."""
    if uses_java(conf):
        from mirrorspark.control.java_clients import JavaProducer

        return JavaProducer(conf)
    from confluent_kafka import Producer

    return Producer({**conf, "logger": _QUIET})


def consumer(conf: dict[str, Any]) -> Consumer:
    """A consumer: Kafka's Java one when ``conf`` asks for it, else librdkafka's (quiet)."""
    if uses_java(conf):
        from mirrorspark.control.java_clients import JavaConsumer

        return cast(Consumer, JavaConsumer(conf))
    return Consumer({**conf, "logger": _QUIET})


def broker_answers(bootstrap: str, timeout: float = 5.0) -> bool:
    """True when a broker at ``bootstrap`` answers a metadata request within ``timeout``."""
    try:
        admin_client({"bootstrap.servers": bootstrap}).list_topics(timeout=timeout)
    except KafkaException:
        return False
    return True


def group_coordinator_ready(bootstrap: str, timeout: float = 5.0) -> bool:
    """True once ``__consumer_offsets`` exists and its coordinator has loaded. A fresh broker creates
    that topic on the first group request; offsets committed while it loads can be lost, so local
    clusters are not handed out before this holds."""
    admin = admin_client({"bootstrap.servers": bootstrap})
    try:
        admin.describe_consumer_groups(["mirrorspark-local-ready"], request_timeout=timeout)[
            "mirrorspark-local-ready"].result()
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        code = error.code() if error is not None and hasattr(error, "code") else None
        if code in (KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                    KafkaError.NOT_COORDINATOR, KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT):
            return False
    return "__consumer_offsets" in admin.list_topics(timeout=timeout).topics


# Codes that mean the cluster (or its group coordinator) is not answering now, not that the request is wrong.
_NOT_ANSWERING = frozenset({
    KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN, KafkaError.REQUEST_TIMED_OUT,
    KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.NETWORK_EXCEPTION, KafkaError._WAIT_COORD, KafkaError._RESOLVE,
})


def not_answering(exc: KafkaException) -> bool:
    """True when ``exc`` says the cluster or its coordinator does not answer (retry later), not that
    the request itself was refused."""
    error = exc.args[0] if exc.args else None
    return isinstance(error, KafkaError) and error.code() in _NOT_ANSWERING


def coordinator_gate(admin: AdminClient, cluster: str, timeout: float = 5.0) -> None:
    """Raise :class:`ClusterFailure` unless ``cluster`` answers a DescribeCluster request now.

    Called before a round of group-coordinator admin requests (group offsets, group descriptions):
    librdkafka aborts the whole process when such a request meets a connection that has just dropped
    (upstream issue 4605, an assertion in its coordinator request path), which is what happens when
    they are sent into an outage. A cluster that does not answer is asked again at the next round."""
    try:
        admin.describe_cluster(request_timeout=timeout).result(timeout + 1)
    except (KafkaException, TimeoutError) as exc:
        raise ClusterFailure(f"{cluster} does not answer ({exc}); its group requests wait for the next round") \
            from None


def client_conf(cluster: str | dict[str, Any]) -> dict[str, Any]:
    """librdkafka settings from a bootstrap address or from ready-made settings."""
    return {"bootstrap.servers": cluster} if isinstance(cluster, str) else dict(cluster)


def end_offsets(cluster: str | dict[str, Any], topic: str, timeout: float = 10.0) -> dict[int, int]:
    """Log-end offset per partition of ``topic`` (empty if the topic does not exist)."""
    reader = consumer({**client_conf(cluster), "group.id": "mirrorspark-offsets"})
    try:
        metadata = reader.list_topics(topic, timeout=timeout).topics[topic]
        if metadata.error is not None:
            return {}
        deadline = time.monotonic() + timeout
        return {p: watermarks(reader, TopicPartition(topic, p), deadline=deadline)[1]
                for p in sorted(metadata.partitions)}
    finally:
        reader.close()


_SETTLING = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART,
             KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.FENCED_LEADER_EPOCH)


def watermarks(consumer: Consumer, tp: TopicPartition, *, deadline: float) -> tuple[int, int]:
    """The partition's log start and end; a partition whose leader is still being elected (just
    created) or moving (a broker restarted) is asked again until ``deadline`` (monotonic)."""
    while True:
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=max(1.0, deadline - time.monotonic()))
            return low, high
        except KafkaException as exc:
            if exc.args[0].code() not in _SETTLING or time.monotonic() >= deadline:
                raise
            time.sleep(0.2)


def broker_count(admin: AdminClient, timeout: float = 10.0) -> int:
    return len(admin.list_topics(timeout=timeout).brokers)


def check_replication_factor(admin: AdminClient, rf: int, key: str, cluster: str) -> None:
    """Refuse replication factor ``rf`` when the cluster behind ``admin`` has fewer brokers, before
    any data moves. ``key`` is the setting as the user wrote it (``flow.where(...)``), ``cluster``
    the cluster as the message names it (``cluster 'backup'``, ``target cluster 'backup'``)."""
    brokers = broker_count(admin)
    if rf > brokers:
        raise ConfigError(f"{key}={rf} but {cluster} has only {brokers} broker(s); set {key} to at most {brokers}",
                          key)


def topic_partitions(admin: AdminClient, timeout: float = 10.0) -> dict[str, int]:
    """Every topic on the cluster with its partition count (one metadata request). Kafka's Java Admin
    answers the counts alone; librdkafka's metadata has every partition's details."""
    counts = getattr(admin, "partition_counts", None)
    if counts is not None:
        return cast(dict[str, int], counts(timeout=timeout))
    metadata = admin.list_topics(timeout=timeout)
    return {
        name: len(topic.partitions)
        for name, topic in metadata.topics.items()
        if topic.error is None
    }


def ensure_compacted_topic(admin: AdminClient, name: str, replication_factor: int, timeout: float = 30.0) -> bool:
    """Create MM2's single-partition compacted internal topic ``name`` unless it exists.

    Returns True when it was created now. An existing topic is left as it is (MM2 does the same).
    """
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import NewTopic

    if name in admin.list_topics(timeout=timeout).topics:
        return False
    future = admin.create_topics([NewTopic(name, 1, replication_factor,
                                           config={"cleanup.policy": "compact"})])[name]
    try:
        future.result(timeout=timeout)
    except KafkaException as exc:
        if exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        raise
    return True


def send_all(producer: Any, topic: str, records: list[tuple[bytes, bytes | None]], what: str, timeout: float = 30.0,
             timestamp: int | None = None) -> None:
    """Produce ``(key, value)`` records to partition 0 of ``topic`` and wait for every acknowledgement.

    Raises with ``what`` in the message if any record was not written, so callers never assume a
    write that did not happen.
    """
    failures: list[str] = []

    def report(err, _msg) -> None:
        if err is not None:
            failures.append(err.str())

    for key, value in records:
        extra = {"timestamp": timestamp} if timestamp is not None else {}
        producer.produce(topic, value, key, partition=0, on_delivery=report, **extra)
    remaining = producer.flush(timeout)
    if remaining or failures:
        reason = failures[0] if failures else f"{remaining} not acknowledged within {timeout:.0f} s"
        raise ClusterFailure(f"writing {len(records)} {what} to {topic} failed: {reason}")


_LEADER_MOVING = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_LEADER_EPOCH,
                  KafkaError.FENCED_LEADER_EPOCH)  # a just-created partition or a moving leader


def partition_offsets(admin: AdminClient, partitions: list[Partition], earliest: bool = False,
                      timeout: float = 15.0, read_committed: bool = False) -> dict[Partition, int]:
    """Log start (``earliest``) or end offsets of ``partitions`` (the last stable offset with
    ``read_committed``); partitions that do not exist (a deleted topic) are left out. A partition
    whose leader is moving (a topic just created, a broker restarting) is asked again for up to
    ``timeout`` seconds. A partition the client calls unknown is left out only once the cluster's
    own description lacks it: librdkafka's client answers "unknown" for topics created moments
    before, from its cached metadata, for minutes, and a partition taken for missing is one whose
    end a flow does not record before writing to it (docs/adr/0027-grouped-source-real-time.md, section 9)."""
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import OffsetSpec

    spec = OffsetSpec.earliest() if earliest else OffsetSpec.latest()
    isolation = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
    out: dict[Partition, int] = {}
    pending = list(partitions)
    deadline = time.monotonic() + timeout
    while pending:
        futures = admin.list_offsets({TopicPartition(t, p): spec for t, p in pending}, isolation_level=isolation,
                                     request_timeout=timeout)
        retry: list[Partition] = []
        unknown: list[Partition] = []
        for tp, future in futures.items():
            try:
                out[(tp.topic, tp.partition)] = future.result().offset
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION,
                                    KafkaError._UNKNOWN_TOPIC):
                    unknown.append((tp.topic, tp.partition))
                    continue
                if (error.code() in _LEADER_MOVING or error.code() == KafkaError._NOENT) \
                        and time.monotonic() < deadline:  # _NOENT: none of the partitions asked has a leader yet
                    retry.append((tp.topic, tp.partition))
                    continue
                raise
        if unknown and time.monotonic() < deadline:  # described: the client's metadata is refreshed with it
            layout = topic_layout(admin, sorted({t for t, _ in unknown}), timeout)
            retry += [(t, p) for t, p in unknown if p in layout.get(t, ("", {}))[1]]
        pending = retry
        if pending:
            time.sleep(0.2)
    return out


def topic_ids(admin: AdminClient, topics: list[str], timeout: float = 15.0) -> dict[str, str]:
    """Topic id of each existing topic of ``topics`` (a re-created topic gets a new one). Kafka's Java
    Admin answers the ids alone; librdkafka's describes the whole topics."""
    ask = getattr(admin, "topic_ids", None)
    if ask is None:
        return {topic: topic_id for topic, (topic_id, _) in topic_layout(admin, topics, timeout).items()}
    out: dict[str, str] = {}
    for topic, future in ask(list(topics), request_timeout=timeout).items() if topics else ():
        try:
            out[topic] = kafka_topic_id(str(future.result()))
        except KafkaException as exc:
            if exc.args[0].code() not in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                raise
    return out


def topic_layout(admin: AdminClient, topics: list[str], timeout: float = 15.0
                 ) -> dict[str, tuple[str, dict[int, int]]]:
    """Topic id and each partition's leader (-1: none) of each existing topic of ``topics``: one
    DescribeTopics. A partition's end can only go back when its leader changes."""
    from confluent_kafka import TopicCollection

    if not topics:
        return {}
    out: dict[str, tuple[str, dict[int, int]]] = {}
    ask = getattr(admin, "topic_leaders", None)  # Kafka's Java Admin answers ids and leaders alone
    futures = ask(list(topics), request_timeout=timeout) if ask is not None \
        else admin.describe_topics(TopicCollection(list(topics)), request_timeout=timeout)
    for topic, future in futures.items():
        try:
            found = future.result()
        except KafkaException as exc:
            if exc.args[0].code() not in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                raise
            continue
        if ask is not None:
            topic_id, leaders = found
            out[topic] = (kafka_topic_id(str(topic_id)), leaders)
            continue
        leaders = {p.id: (p.leader.id if p.leader is not None else -1) for p in found.partitions}
        out[topic] = (kafka_topic_id(str(found.topic_id)), leaders)
    return out


class TopicMissing(NotFound):
    """The topic to read does not exist."""


def read_to_end(conf: dict[str, Any], topic: str, timeout: float = 60.0, partitions: list[int] | None = None
                ) -> Iterator[tuple[bytes | None, bytes | None, int, int, int]]:
    """(key, value, partition, offset, timestamp ms) of every record of ``topic`` (or of ``partitions``)
    up to the end offsets at call time, in offset order per partition. Internal topics (checkpoints,
    MM2's Connect offsets and syncs) are read this way. Raises TopicMissing, and OperationalError when
    ``timeout`` seconds pass without a record before the end: a partial read is never taken for a whole."""
    reader = consumer({**conf, "group.id": "mirrorspark-internal-reader", "enable.auto.commit": False,
                       "enable.partition.eof": True})
    try:
        metadata = reader.list_topics(topic, timeout=timeout).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise TopicMissing(f"topic {topic} does not exist")
        ends: dict[int, int] = {}
        starts: list[TopicPartition] = []
        for partition in sorted(metadata.partitions if partitions is None else partitions):
            low, high = watermarks(reader, TopicPartition(topic, partition), deadline=time.monotonic() + timeout)
            if high > low:
                ends[partition] = high
                starts.append(TopicPartition(topic, partition, low))
        if not starts:
            return
        reader.assign(starts)
        deadline = time.monotonic() + timeout  # moved on by every batch that brings something
        while ends:
            if time.monotonic() > deadline:
                left = ", ".join(f"{topic}[{p}] (end {end})" for p, end in sorted(ends.items()))
                raise OperationalError(f"reading {topic} made no progress for {timeout:.0f} s before its end "
                                       f"({left}): refused rather than read in part")
            for msg in reader.consume(10_000, 1.0):
                deadline = time.monotonic() + timeout
                error = msg.error()
                partition = cast(int, msg.partition())  # None only on errors that concern no partition
                if error:
                    if error.code() == KafkaError._PARTITION_EOF:
                        ends.pop(partition, None)
                        continue
                    raise KafkaException(error)
                offset = cast(int, msg.offset())  # set on every record
                if partition not in ends:
                    continue  # past the end offset of the call: a record written meanwhile
                yield msg.key(), msg.value(), partition, offset, msg.timestamp()[1]
                if offset >= ends[partition] - 1:
                    ends.pop(partition, None)
    finally:
        reader.close()
