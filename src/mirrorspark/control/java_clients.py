"""Kafka's Java clients for the control plane, behind the small part of confluent-kafka's API the
control plane uses, so a cluster whose client settings only Kafka's Java clients honour (Kerberos,
a login or client callback handler such as MSK IAM's, ``ssl.engine.factory.class``) is asked by the
same client MM2 uses, with its settings unchanged.

The clients live in the process's plug-in JVM (``plugins/java_host.py``: Kafka's jars, mirrorspark's
jar and the jars of ``plugin.path``/``spark.jars``, where a callback handler's class is found) and are
reached over py4j (``io.mirrorspark.control.AdminBridge``, ``ConsumerBridge``, ``ProducerBridge``).
Answers come back as confluent-kafka's own value types (metadata, futures, ``Message``), and failures
as ``KafkaException`` carrying Kafka's error code (librdkafka uses the same numbers; a timeout is
``_TIMED_OUT``, a failed login ``_AUTHENTICATION``), so the code reading them is the same whichever
client asked. ADR 0024 says why and what it costs.

A client is chosen by its settings: ``control/admin.py``'s factories make these when the settings
carry :data:`JAVA_PROPERTIES` (``client_settings.java_conf``).
"""
from __future__ import annotations

import contextlib
import json
import os
import struct
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar, cast

from confluent_kafka import (
    OFFSET_INVALID,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    Node,
    TopicPartition,
    TopicPartitionInfo,
)
from confluent_kafka.admin import (
    AclBinding,
    BrokerMetadata,
    ClusterMetadata,
    ConfigEntry,
    ConfigSource,
    ConsumerGroupDescription,
    ConsumerGroupListing,
    DescribeClusterResult,
    ListConsumerGroupsResult,
    ListOffsetsResultInfo,
    MemberAssignment,
    MemberDescription,
    PartitionMetadata,
    TopicDescription,
    TopicMetadata,
)

T = TypeVar("T")
_ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
_OAUTH_URL_KEYS = ("sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.jwks.endpoint.url")
_allowed_lock = threading.Lock()

# The settings key that carries the Java client's own settings (JSON), and the one that carries the
# classpath its classes are loaded from (os.pathsep-joined). Neither is a Kafka key.
JAVA_PROPERTIES = "mirrorspark.java.properties"
JAVA_CLASSPATH = "mirrorspark.java.classpath"

# Settings mirrorspark's own code adds to a client's (librdkafka's names) and their Java meaning;
# anything else it adds is librdkafka's alone and left out.
_CONSUMER_KEYS = {"group.id": "group.id", "enable.auto.commit": "enable.auto.commit",
                  "isolation.level": "isolation.level", "auto.offset.reset": "auto.offset.reset",
                  "session.timeout.ms": "session.timeout.ms", "max.poll.interval.ms": "max.poll.interval.ms",
                  "heartbeat.interval.ms": "heartbeat.interval.ms", "client.id": "client.id",
                  "fetch.max.bytes": "fetch.max.bytes", "max.partition.fetch.bytes": "max.partition.fetch.bytes",
                  "partition.assignment.strategy": "partition.assignment.strategy"}
_ASSIGNORS = {"cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
              "range": "org.apache.kafka.clients.consumer.RangeAssignor",
              "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor"}
_PRODUCER_KEYS = {"linger.ms": "linger.ms", "transactional.id": "transactional.id",
                  "transaction.timeout.ms": "transaction.timeout.ms", "acks": "acks",
                  "enable.idempotence": "enable.idempotence", "message.max.bytes": "max.request.size"}
_RESETS = {"smallest": "earliest", "beginning": "earliest", "largest": "latest", "end": "latest", "error": "none"}
_TIMESTAMP_TYPES = {0: TIMESTAMP_NOT_AVAILABLE, 1: TIMESTAMP_CREATE_TIME, 2: TIMESTAMP_LOG_APPEND_TIME}
_OFFSET_SPECS = {"EarliestSpec": -2, "LatestSpec": -1, "MaxTimestampSpec": -3}
# Kafka's group states by confluent-kafka's names (it has none for the new protocol's ASSIGNING and
# RECONCILING: a group in either has members, as in a rebalance).
_CONFIG_SOURCES = {"DYNAMIC_GROUP_CONFIG": "GROUP_CONFIG"}
_SENDS_PER_CALL = 500  # sends packed into one py4j call at most (ADR 0024)
_GROUP_STATES = {"PREPARING_REBALANCE": "PREPARING_REBALANCING", "COMPLETING_REBALANCE": "COMPLETING_REBALANCING",
                 "ASSIGNING": "PREPARING_REBALANCING", "RECONCILING": "PREPARING_REBALANCING"}


def uses_java(conf: Mapping[str, Any]) -> bool:
    """True when ``conf`` asks for Kafka's Java clients."""
    return JAVA_PROPERTIES in conf


def _split(conf: Mapping[str, Any], extra: Mapping[str, str]) -> tuple[dict[str, str], list[Path]]:
    """The Java settings and classpath of ``conf``, with the keys mirrorspark added in librdkafka's
    names (``extra`` maps them) translated."""
    props = dict(json.loads(str(conf[JAVA_PROPERTIES])))
    for key, java_key in extra.items():
        if key in conf and not callable(conf[key]):
            value = str(conf[key]).lower() if isinstance(conf[key], bool) else str(conf[key])
            if key == "auto.offset.reset":
                value = _RESETS.get(value, value)
            elif key == "partition.assignment.strategy":
                value = ",".join(_ASSIGNORS.get(v.strip(), v.strip()) for v in value.split(","))
            props[java_key] = value
    classpath = [Path(p) for p in str(conf.get(JAVA_CLASSPATH, "")).split(os.pathsep) if p]
    return props, classpath


def _host(classpath: list[Path]) -> Any:
    """The plug-in JVM with mirrorspark's jar and ``classpath`` (started again if it died)."""
    from mirrorspark import paths
    from mirrorspark.plugins.java_host import host_for

    return host_for([paths.mirrorspark_jar(), *classpath])


class _JavaClient:
    """A Python client whose Java client lives in the plug-in JVM. If that JVM dies (killed, out of
    memory), the next call makes the Java client again in a new one (``_made_again`` restores what the
    caller set up), so the control plane outlives the JVM as it outlives a broker; the call that was
    in flight fails as librdkafka's would on a broken connection (``_TRANSPORT``, retriable)."""

    _what = "a client"
    _props: dict[str, str]  # the Java client's settings

    def __init__(self, classpath: list[Path]) -> None:
        self._classpath = classpath
        self._again = threading.Lock()
        self._home = _host(classpath)
        _call(f"creating {self._what}", lambda: self._allow(self._props))
        self._bridge = _call(f"creating {self._what}", lambda: self._make(self._home.gateway.jvm))

    def _make(self, jvm: Any) -> Any:
        raise NotImplementedError

    def _made_again(self) -> None:
        """What the new Java client needs of the old one's state (an assignment, pending deliveries)."""

    def _allow(self, props: Mapping[str, str]) -> None:
        """Let Kafka's client ask the OAuth endpoints the file names (a token file's ``file:`` URL too).
        Since Kafka 4.0 it asks only URLs a
        JVM property lists (against connector configs from Connect's REST, which mirrorspark has not):
        the operator's file is trusted as MM2's worker file is. A property set in ``KAFKA_OPTS`` (as for
        MM2) or ``JAVA_TOOL_OPTIONS`` is the operator's own list and is left as it is."""
        urls = [props.get(key, "").strip() for key in _OAUTH_URL_KEYS]
        urls = [url for url in urls if url.lower().startswith(("http://", "https://", "file:"))]  # file: a token
        if not urls or any(_ALLOWED_URLS in os.environ.get(v, "") for v in ("KAFKA_OPTS", "JAVA_TOOL_OPTIONS")):
            return
        system = self._home.gateway.jvm.java.lang.System
        with _allowed_lock:
            allowed = [u for u in str(system.getProperty(_ALLOWED_URLS) or "").split(",") if u]
            missing = [url for url in urls if url not in allowed]
            if missing:
                system.setProperty(_ALLOWED_URLS, ",".join(allowed + missing))

    @property
    def _java(self) -> Any:
        if not self._home.alive() and not getattr(self, "_closed", False):
            with self._again:  # one new Java client, whichever threads find the JVM gone
                if not self._home.alive():
                    self._home = _host(self._classpath)
                    _call(f"creating {self._what} again", lambda: self._allow(self._props))
                    self._bridge = _call(f"creating {self._what} again", lambda: self._make(self._home.gateway.jvm))
                    self._made_again()
        return self._bridge


def _error(code: int, text: str, retriable: bool = False) -> KafkaException:
    return KafkaException(KafkaError(int(code), str(text), retriable=bool(retriable)))


def _call(what: str, thunk: Callable[[], T]) -> T:
    """``thunk()``, a call into the JVM; its failure as the ``KafkaException`` librdkafka would raise."""
    from py4j.protocol import Py4JError, Py4JJavaError, Py4JNetworkError

    from mirrorspark.plugins.java_host import own_errors

    own_errors()
    try:
        return thunk()
    except Py4JJavaError as exc:
        java = exc.java_exception
        try:
            if str(java.getClass().getSimpleName()) == "ClientError":
                raise _error(java.code(), str(java.getMessage()), java.retriable()) from None
            raise _error(KafkaError._INVALID_ARG, f"{what}: {java.toString()}") from None
        except Py4JError:
            raise _error(KafkaError._TRANSPORT, f"{what}: the client JVM did not answer") from None
    except Py4JNetworkError:
        raise _error(KafkaError._TRANSPORT, f"{what}: the client JVM is gone") from None
    except Py4JError as exc:
        raise _error(KafkaError._FAIL, f"{what}: {exc}") from None


class _Settled(Future):
    """A Future answered when made. The Java bridge answers a call whole, and a per-partition answer
    (offsets of 10,000 partitions) made as many ``Future`` objects, each with its own lock and
    condition: a fifth of an idle flow's Python time at that size (py-spy, ADR 0027 section 14)."""

    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:  # no Condition
        self._value, self._error = value, error

    def result(self, timeout: float | None = None) -> Any:
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._error

    def done(self) -> bool:
        return True

    def running(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    def cancel(self) -> bool:
        return False

    def add_done_callback(self, fn: Callable[[Future], object]) -> None:
        fn(self)

    def set_result(self, result: Any) -> None:
        raise RuntimeError("a settled future is answered once")

    def set_exception(self, exception: BaseException | None) -> None:
        raise RuntimeError("a settled future is answered once")


def _done(value: Any) -> Future:
    return _Settled(value)


def _failed(error: KafkaException) -> Future:
    return _Settled(error=error)


def _each(answer: Mapping[str, Any], make: Callable[[str, Any], Any]) -> dict[str, Future]:
    """Futures from a bridge's per-item answer (``{"ok": ...}`` or ``{"error": [code, retriable, text]}``);
    ``make(key, ok)`` makes a result."""
    out: dict[str, Future] = {}
    for key, row in answer.items():
        if "error" in row:
            code, retriable, text = row["error"]
            out[key] = _failed(_error(code, text, retriable))
        else:
            out[key] = _done(make(key, row["ok"]))
    return out


def _ms(timeout: float | None, default: float = 30.0) -> int:
    return int(1000 * (default if timeout is None or timeout < 0 else timeout))


def _config_source(java_name: str) -> ConfigSource:
    """A config's source by librdkafka's name: Kafka's Java client says DYNAMIC_GROUP_CONFIG where
    librdkafka says GROUP_CONFIG (a group's own setting)."""
    name = _CONFIG_SOURCES.get(java_name, java_name)
    return ConfigSource[name] if name in ConfigSource.__members__ else ConfigSource.UNKNOWN_CONFIG


def _state(java_name: str) -> str:
    return _GROUP_STATES.get(java_name, java_name)


def _node(row: list | None) -> Any:  # a Node, or None where Kafka has none (no leader)
    return None if row is None else Node(int(row[0]), str(row[1]), int(row[2]), row[3])


class JavaAdminClient(_JavaClient):
    """confluent-kafka's ``AdminClient`` calls the control plane makes, answered by Kafka's Admin client."""

    _what = "an admin client"

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self._props, classpath = _split(conf, {})
        # Kafka's Admin client is thread-safe and py4j gives each Python thread a connection of its own:
        # flows steered in threads of their own ask side by side, as they do through librdkafka.
        super().__init__(classpath)

    def _make(self, jvm: Any) -> Any:
        return jvm.io.mirrorspark.control.AdminBridge(self._props)

    def _ask(self, what: str, thunk: Callable[[Any], str]) -> Any:
        return json.loads(str(_call(what, lambda: thunk(self._java))))

    def poll(self, timeout: float | None = None) -> int:
        """Nothing to serve: the Java client calls back on its own threads."""
        return 0

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        found = self._ask("reading metadata", lambda java: java.metadata(topic, _ms(timeout)))
        metadata = ClusterMetadata()
        metadata.cluster_id = found["cluster_id"]
        metadata.controller_id = found["controller_id"]
        for broker_id, host, port in found["brokers"]:
            broker = BrokerMetadata()
            broker.id, broker.host, broker.port = broker_id, host, port
            metadata.brokers[broker_id] = broker
        for name, row in found["topics"].items():
            topic_metadata = TopicMetadata()
            topic_metadata.topic = name
            if row["error"] is not None:
                topic_metadata.error = KafkaError(row["error"][0], row["error"][2])
            for partition, leader, replicas, isr in row["partitions"]:
                p = PartitionMetadata()
                p.id, p.leader, p.replicas, p.isrs = partition, leader, replicas, isr
                topic_metadata.partitions[partition] = p
            metadata.topics[name] = topic_metadata
        return metadata

    def describe_cluster(self, request_timeout: float = 30, **_: Any) -> Future:
        try:
            found = self._ask("describing the cluster", lambda java: java.describeCluster(_ms(request_timeout)))
        except KafkaException as exc:
            return _failed(exc)
        return _done(DescribeClusterResult(_node(found["controller"]), [_node(n) for n in found["nodes"]],
                                           found["cluster_id"]))

    def describe_topics(self, topics: Any, request_timeout: float = 30, **_: Any) -> dict[str, Future]:
        names = list(topics.topic_names)
        found = self._ask("describing topics",
                          lambda java: java.describeTopics(json.dumps(names), _ms(request_timeout)))
        return _each(found, lambda name, ok: TopicDescription(
            name, ok["id"], ok["internal"],
            [TopicPartitionInfo(p[0], _node(p[1]), [_node(n) for n in p[2]], [_node(n) for n in p[3]])
             for p in ok["partitions"]]))

    def partition_counts(self, timeout: float = -1) -> dict[str, int]:
        """Every topic with its partition count (``list_topics`` without the partitions' details)."""
        return {str(name): int(count) for name, count in
                self._ask("reading metadata", lambda java: java.partitionCounts(_ms(timeout))).items()}

    def topic_ids(self, topics: list[str], request_timeout: float = 30) -> dict[str, Future]:
        """Each topic's id alone (``describe_topics`` without the partitions): asked every few seconds."""
        found = self._ask("describing topics", lambda java: java.topicIds(json.dumps(list(topics)),
                                                                           _ms(request_timeout)))
        return _each(found, lambda _, topic_id: topic_id)

    def topic_leaders(self, topics: list[str], request_timeout: float = 30) -> dict[str, Future]:
        """Each topic's id and its partitions' leader ids (-1: none): ``describe_topics`` without the
        replicas' and ISRs' nodes, for the identity check of every topic refresh."""
        found = self._ask("describing topics", lambda java: java.topicLeaders(json.dumps(list(topics)),
                                                                               _ms(request_timeout)))
        return _each(found, lambda _, ok: (ok["id"], {int(p): int(leader) for p, leader in ok["leaders"]}))

    def describe_configs(self, resources: list, request_timeout: float = 30, **_: Any) -> dict[Any, Future]:
        wanted = [[r.restype.name, r.name] for r in resources]
        found = self._ask("describing configs", lambda java: java.describeConfigs(json.dumps(wanted),
                                                                                    _ms(request_timeout)))
        futures = _each(found, lambda _, rows: {
            name: ConfigEntry(name, value, source=_config_source(source), is_read_only=ro, is_default=default,
                              is_sensitive=sensitive)
            for name, value, source, ro, default, sensitive in rows})
        return {r: futures[f"{r.restype.name}:{r.name}"] for r in resources}

    def incremental_alter_configs(self, resources: list, request_timeout: float = 30, **_: Any) -> dict[Any, Future]:
        wanted = [[r.restype.name, r.name, [[e.name, e.value, e.incremental_operation.name]
                                            for e in r.incremental_configs]] for r in resources]
        found = self._ask("altering configs", lambda java: java.incrementalAlterConfigs(json.dumps(wanted),
                                                                                          _ms(request_timeout)))
        futures = _each(found, lambda *_: None)
        return {r: futures[f"{r.restype.name}:{r.name}"] for r in resources}

    def create_topics(self, topics: list, request_timeout: float = 30, **_: Any) -> dict[str, Future]:
        wanted = [[t.topic, t.num_partitions, t.replication_factor, dict(t.config or {})] for t in topics]
        found = self._ask("creating topics", lambda java: java.createTopics(json.dumps(wanted), _ms(request_timeout)))
        return _each(found, lambda *_: None)

    def create_partitions(self, partitions: list, request_timeout: float = 30, **_: Any) -> dict[str, Future]:
        wanted = [[p.topic, p.new_total_count] for p in partitions]
        return _each(self._ask("adding partitions", lambda java: java.createPartitions(json.dumps(wanted),
                                                                                       _ms(request_timeout))),
                     lambda *_: None)

    def list_offsets(self, specs: Mapping[TopicPartition, Any], isolation_level: Any = None,
                     request_timeout: float = 30, **_: Any) -> dict[TopicPartition, Future]:
        wanted = [[tp.topic, tp.partition, _OFFSET_SPECS.get(type(spec).__name__, getattr(spec, "timestamp", -1))]
                  for tp, spec in specs.items()]
        committed = isolation_level is not None and isolation_level.name == "READ_COMMITTED"
        found = _each(self._ask("listing offsets", lambda java: java.listOffsets(json.dumps(wanted), committed,
                                                                                 _ms(request_timeout))),
                      lambda _, row: ListOffsetsResultInfo(row[0], row[1], row[2]))
        return {tp: found[f"{tp.topic}:{tp.partition}"] for tp in specs}

    def describe_acls(self, acl_filter: Any, request_timeout: float = 30, **_: Any) -> Future:
        try:
            rows = self._ask("describing ACLs", lambda java: java.describeAcls(json.dumps(_binding(acl_filter)),
                                                                                 _ms(request_timeout)))
        except KafkaException as exc:
            return _failed(exc)
        return _done([AclBinding(*row) for row in rows])

    def create_acls(self, bindings: list, request_timeout: float = 30, **_: Any) -> dict[Any, Future]:
        found = _each(self._ask("creating ACLs", lambda java: java.createAcls(
            json.dumps([_binding(b) for b in bindings]), _ms(request_timeout))), lambda *_: None)
        return {b: found[str(i)] for i, b in enumerate(bindings)}

    def delete_acls(self, filters: list, request_timeout: float = 30, **_: Any) -> dict[Any, Future]:
        found = _each(self._ask("deleting ACLs", lambda java: java.deleteAcls(
            json.dumps([_binding(f) for f in filters]), _ms(request_timeout))),
            lambda _, rows: [AclBinding(*row) for row in rows])
        return {f: found[str(i)] for i, f in enumerate(filters)}

    def list_consumer_groups(self, request_timeout: float = 30, **_: Any) -> Future:
        try:
            rows = self._ask("listing consumer groups", lambda java: java.listGroups(_ms(request_timeout)))
        except KafkaException as exc:
            return _failed(exc)
        return _done(ListConsumerGroupsResult(valid=[ConsumerGroupListing(g, simple, _state(state))
                                                     for g, simple, state in rows]))

    def describe_consumer_groups(self, groups: list[str], request_timeout: float = 30, **_: Any
                                 ) -> dict[str, Future]:
        answer = self._ask("describing groups", lambda java: java.describeGroups(json.dumps(list(groups)),
                                                                                 _ms(request_timeout)))
        for group, row in answer.items():  # Kafka's client says "not found" where librdkafka says DEAD
            if "error" in row and row["error"][0] == KafkaError.GROUP_ID_NOT_FOUND:
                answer[group] = {"ok": {"simple": False, "members": [], "assignor": "", "state": "DEAD",
                                        "coordinator": None}}
        return _each(answer, lambda group, ok: ConsumerGroupDescription(
            group, ok["simple"], [MemberDescription(m[0], m[1], m[2], MemberAssignment(
                [TopicPartition(t, p) for t, p in m[4]]), m[3]) for m in ok["members"]],
            ok["assignor"], _state(ok["state"]), _node(ok["coordinator"])))

    def list_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions], request_timeout: float = 30,
                                    **_: Any) -> dict[str, Future]:
        out: dict[str, Future] = {}
        for request in requests:
            group = request.group_id
            try:
                rows = self._group_offsets(group, _ms(request_timeout))
            except KafkaException as exc:
                out[group] = _failed(exc)
                continue
            partitions = [TopicPartition(t, p, o, metadata=m) for t, p, o, m in rows]
            if request.topic_partitions:
                asked = {(tp.topic, tp.partition) for tp in request.topic_partitions}
                partitions = [tp for tp in partitions if (tp.topic, tp.partition) in asked]
            out[group] = _done(ConsumerGroupTopicPartitions(group, partitions))
        return out

    def alter_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions], request_timeout: float = 30,
                                     **_: Any) -> dict[str, Future]:
        out: dict[str, Future] = {}
        for request in requests:
            group = request.group_id
            rows = [[tp.topic, tp.partition, tp.offset, tp.metadata or ""] for tp in request.topic_partitions or []]
            try:
                self._commit(group, json.dumps(rows), _ms(request_timeout))
            except KafkaException as exc:
                out[group] = _failed(exc)
                continue
            out[group] = _done(ConsumerGroupTopicPartitions(group, list(request.topic_partitions or [])))
        return out

    def delete_consumer_groups(self, groups: list[str], request_timeout: float = 30, **_: Any) -> dict[str, Future]:
        answer = self._ask("deleting groups", lambda java: java.deleteGroups(json.dumps(list(groups)),
                                                                           _ms(request_timeout)))
        return _each(answer, lambda group, ok: None)

    def ask_share_groups(self, what: str, thunk: Callable[[Any], str]) -> Any:
        """``thunk`` of the share groups' admin over this client (``io.mirrorspark.control.ShareGroupAdmin``,
        Kafka's Admin API only: librdkafka has none), its JSON answer parsed."""
        return self._ask(what, lambda java: thunk(self._home.gateway.jvm.io.mirrorspark.control.ShareGroupAdmin(java)))

    def _group_offsets(self, group: str, timeout_ms: int) -> list:
        return self._ask(f"reading the offsets of group {group}", lambda java: java.listGroupOffsets(group, timeout_ms))

    def _commit(self, group: str, rows: str, timeout_ms: int) -> None:
        _call(f"committing offsets of group {group}", lambda: self._java.alterGroupOffsets(group, rows, timeout_ms))

    def close(self) -> None:
        self._closed = True
        _call("closing an admin client", lambda: self._bridge.close())

    def __del__(self) -> None:  # the client's threads are the JVM's: close them with the Python object
        _close_quietly(self)


def _close_quietly(client: Any) -> None:
    """Close the Java client of a Python one being collected, as librdkafka's is freed with it."""
    java = getattr(client, "_bridge", None)
    if java is not None:
        with contextlib.suppress(Exception):  # the JVM may be gone at exit
            java.close()


def _binding(b: Any) -> list:
    return [b.restype.name, b.name, b.resource_pattern_type.name, b.principal, b.host, b.operation.name,
            b.permission_type.name]


def decode_records(data: bytes) -> list[Message]:
    """Messages from a batch in ``RecordCodec``'s form (big-endian, -1 lengths for null); a partition
    read to its end comes last, as librdkafka's ``_PARTITION_EOF`` event."""
    view = memoryview(data)
    (count,), at = struct.unpack_from(">i", view, 0), 4
    out: list[Message] = []

    def blob() -> bytes | None:
        nonlocal at
        (length,) = struct.unpack_from(">i", view, at)
        at += 4
        if length < 0:
            return None
        value = bytes(view[at:at + length])
        at += length
        return value

    for _ in range(count):
        topic = (blob() or b"").decode()
        partition, offset, ts_type, timestamp = struct.unpack_from(">iqbq", view, at)
        at += 21
        key, value = blob(), blob()
        (headers_count,) = struct.unpack_from(">i", view, at)
        at += 4
        headers = [((blob() or b"").decode(), blob()) for _ in range(headers_count)]
        out.append(Message(topic=topic, partition=partition, offset=offset, key=key, value=value,
                           headers=cast(Any, headers or None), timestamp=(_TIMESTAMP_TYPES.get(ts_type, 0), timestamp)))
    (ends,) = struct.unpack_from(">i", view, at)
    at += 4
    for _ in range(ends):
        topic = (blob() or b"").decode()
        partition, offset = struct.unpack_from(">iq", view, at)
        at += 12
        eof = KafkaError(KafkaError._PARTITION_EOF, f"{topic} [{partition}] reached end at {offset}")
        out.append(Message(topic=topic, partition=partition, offset=offset, error=eof))
    return out


def encode_send(ident: int, topic: str, partition: int, key: bytes | None, value: bytes | None,
                headers: bytes | None, timestamp: int) -> bytes:
    """One send packed as ``RecordCodec.sends`` reads it."""
    def blob(raw: bytes | None) -> bytes:
        return struct.pack(">i", -1) if raw is None else struct.pack(">i", len(raw)) + raw

    return (struct.pack(">q", ident) + blob(topic.encode()) + struct.pack(">i", partition) + blob(key) + blob(value)
            + blob(headers) + struct.pack(">q", timestamp))


def encode_headers(headers: Iterable[tuple[str, bytes | str | None]] | Mapping[str, Any] | None) -> bytes:
    """Headers packed as ``RecordCodec.headers`` reads them."""
    items = list(headers.items()) if isinstance(headers, Mapping) else list(headers or [])
    parts = [struct.pack(">i", len(items))]
    for key, value in items:
        raw_key = key.encode()
        parts.append(struct.pack(">i", len(raw_key)) + raw_key)
        if value is None:
            parts.append(struct.pack(">i", -1))
        else:
            raw = value.encode() if isinstance(value, str) else bytes(value)
            parts.append(struct.pack(">i", len(raw)) + raw)
    return b"".join(parts)


class JavaConsumer(_JavaClient):
    """confluent-kafka's ``Consumer`` calls the control plane makes, answered by Kafka's consumer: an
    assigned reader (with ``enable.partition.eof``'s events), or a group member (the lease) whose
    rebalance callbacks run in ``poll`` on the caller's thread, as librdkafka runs them. A failed poll
    comes back as a message carrying the error, as librdkafka's does. One thread uses one consumer."""

    _what = "a consumer"

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self._props, classpath = _split(conf, _CONSUMER_KEYS)
        self._ends = str(conf.get("enable.partition.eof", "false")).lower() == "true"
        self._closed = False
        self._callbacks: dict[str, Callable | None] = {}
        self._topics: list[str] | None = None  # subscribed to, or None
        self._next: dict[tuple[str, int], int] = {}  # assigned partitions and where reading goes on
        self._owned: set[tuple[str, int]] = set()  # a member's partitions (from the rebalance callbacks)
        super().__init__(classpath)

    def _make(self, jvm: Any) -> Any:
        return jvm.io.mirrorspark.control.ConsumerBridge(self._props, self._ends)

    def _made_again(self) -> None:
        """An assigned reader goes on from the record after the last it returned; a member has lost its
        partitions (as after a session timeout: its callback says so) and joins again."""
        if self._next:
            rows = [[t, p, o] for (t, p), o in self._next.items()]
            _call("assigning partitions again", lambda: self._bridge.assign(json.dumps(rows)))
        if self._topics is not None:
            lost, self._owned = self._owned, set()
            callback = self._callbacks.get("lost")
            if lost and callback is not None:
                callback(self, [TopicPartition(t, p) for t, p in sorted(lost)])
            topics = self._topics
            _call("subscribing again", lambda: self._bridge.subscribe(json.dumps(topics)))

    def assign(self, partitions: list[TopicPartition]) -> None:
        rows = [[tp.topic, tp.partition, tp.offset] for tp in partitions]
        _call("assigning partitions", lambda: self._java.assign(json.dumps(rows)))
        self._next = {(tp.topic, tp.partition): tp.offset for tp in partitions}

    def unassign(self) -> None:
        _call("unassigning partitions", lambda: self._java.unassign())
        self._next = {}

    def pause(self, partitions: list[TopicPartition]) -> None:
        rows = [[tp.topic, tp.partition] for tp in partitions]
        _call("pausing partitions", lambda: self._java.pause(json.dumps(rows)))

    def subscribe(self, topics: list[str], on_assign: Callable | None = None, on_revoke: Callable | None = None,
                  on_lost: Callable | None = None) -> None:
        self._callbacks = {"assigned": on_assign, "revoked": on_revoke, "lost": on_lost or on_revoke}
        _call("subscribing", lambda: self._java.subscribe(json.dumps(list(topics))))
        self._topics = list(topics)

    def memberid(self) -> str | None:
        return str(_call("reading the member id", lambda: self._java.memberId())) or None

    def assignment(self) -> list[TopicPartition]:
        rows = json.loads(str(_call("reading the assignment", lambda: self._java.assignment())))
        return [TopicPartition(t, p) for t, p in rows]

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        try:
            found = decode_records(bytes(_call("polling", lambda: self._java.poll(int(num_messages),
                                                                                  _ms(timeout, 3600)))))
        except KafkaException as exc:
            found = [Message(error=exc.args[0])]
        for message in found:
            key, offset = (message.topic(), message.partition()), message.offset()
            if message.error() is None and key in self._next and offset is not None:
                self._next[key] = offset + 1
        self._rebalanced()
        return found

    def poll(self, timeout: float = -1) -> Message | None:
        found = self.consume(1, timeout)
        return found[0] if found else None

    def _rebalanced(self) -> None:
        if not self._callbacks:
            return
        for kind, rows in json.loads(str(_call("reading rebalances", lambda: self._java.rebalances()))):
            moved = {(t, p) for t, p in rows}
            self._owned = self._owned | moved if kind == "assigned" else self._owned - moved
            callback = self._callbacks.get(kind)
            if callback is not None:
                callback(self, [TopicPartition(t, p) for t, p in rows])

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int]:
        low, high = _call("reading watermarks", lambda: self._java.watermarks(partition.topic, partition.partition,
                                                                               _ms(timeout)))
        return int(low), int(high)

    def offsets_for_times(self, partitions: list[TopicPartition], timeout: float = -1) -> list[TopicPartition]:
        rows = [[tp.topic, tp.partition, tp.offset] for tp in partitions]
        found = json.loads(str(_call("looking up offsets by time",
                                     lambda: self._java.offsetsForTimes(json.dumps(rows), _ms(timeout)))))
        return [TopicPartition(t, p, o) for t, p, o in found]

    def committed(self, partitions: list[TopicPartition], timeout: float = -1) -> list[TopicPartition]:
        rows = [[tp.topic, tp.partition] for tp in partitions]
        found = json.loads(str(_call("reading committed offsets",
                                     lambda: self._java.committed(json.dumps(rows), _ms(timeout)))))
        return [TopicPartition(t, p, o, metadata=m) for t, p, o, m in found]

    def commit(self, message: Message | None = None, offsets: list[TopicPartition] | None = None,
               asynchronous: bool = True) -> None:
        if message is not None:
            rows = [[message.topic(), message.partition(), (message.offset() or 0) + 1, ""]]
        else:
            rows = [[tp.topic, tp.partition, tp.offset, tp.metadata or ""] for tp in offsets or []]
        _call("committing offsets", lambda: self._java.commit(json.dumps(rows), 30_000))

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        found = json.loads(str(_call("reading metadata", lambda: self._java.partitions(topic, _ms(timeout)))))
        metadata = ClusterMetadata()
        names = [topic] if topic is not None else list(found)
        for name in names:
            topic_metadata = TopicMetadata()
            topic_metadata.topic = name
            if name not in found:
                topic_metadata.error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, f"topic {name} does not exist")
            for partition, leader, replicas, isr in found.get(name, []):
                p = PartitionMetadata()
                p.id, p.leader, p.replicas, p.isrs = partition, leader, replicas, isr
                topic_metadata.partitions[partition] = p
            metadata.topics[name] = topic_metadata
        return metadata

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            _call("closing a consumer", lambda: self._bridge.close())

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            _close_quietly(self)


class JavaProducer(_JavaClient):
    """confluent-kafka's ``Producer`` calls the control plane makes, answered by Kafka's producer;
    delivery callbacks run in ``poll`` and ``flush``, on the caller's thread, as librdkafka runs them."""

    _what = "a producer"

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self._props, classpath = _split(conf, _PRODUCER_KEYS)
        self._callbacks: dict[int, tuple[Callable | None, str, bytes | None, bytes | None]] = {}
        self._next = 0
        self._lock = threading.Lock()
        self._gone: list[int] = []  # sends whose outcome died with the JVM
        self._unsent: list[bytes] = []  # sends packed, not handed to the Java producer yet (``_ship``)
        self._failed: list[tuple[int, KafkaError]] = []  # sends the Java producer refused
        self._transactions = False
        super().__init__(classpath)

    def _make(self, jvm: Any) -> Any:
        return jvm.io.mirrorspark.control.ProducerBridge(self._props)

    def _made_again(self) -> None:
        """The sends still pending are failed as retriable (their outcome died with the JVM), as
        librdkafka fails a delivery it cannot confirm; a transactional producer is initialised again."""
        with self._lock:
            unsent = {struct.unpack_from(">q", one)[0] for one in self._unsent}
            self._gone = [ident for ident in self._callbacks if ident not in unsent]  # the unsent go to the new one
        if self._transactions:
            _call("initialising transactions again", lambda: self._bridge.initTransactions())

    def produce(self, topic: str, value: bytes | str | None = None, key: bytes | str | None = None,
                partition: int = -1, on_delivery: Callable | None = None, timestamp: int = 0,
                headers: Any = None, callback: Callable | None = None) -> None:
        raw_key = key.encode() if isinstance(key, str) else key
        raw_value = value.encode() if isinstance(value, str) else value
        packed = encode_headers(headers) if headers else None
        with self._lock:
            self._next += 1
            ident = self._next
            self._callbacks[ident] = (on_delivery or callback, topic, raw_key, raw_value)
            self._unsent.append(encode_send(ident, topic, int(partition), raw_key, raw_value, packed,
                                            int(timestamp) if timestamp else -1))
            full = len(self._unsent) >= _SENDS_PER_CALL
        if full:
            self._ship()

    def _ship(self) -> None:
        """Hand the sends made since the last call to the Java producer in one call: a py4j round trip
        costs more than a send (ADR 0024), and offset syncs and checkpoints come many at a time. Every
        caller polls or flushes after producing, which ships what is left."""
        with self._lock:
            unsent, self._unsent = self._unsent, []
        if not unsent:
            return
        packed = struct.pack(">i", len(unsent)) + b"".join(unsent)
        try:
            _call("sending records", lambda: self._java.sendAll(packed))
        except KafkaException as exc:  # none of them went: each delivery callback says so, as for a failed send
            with self._lock:
                self._failed += [(struct.unpack_from(">q", one)[0], exc.args[0]) for one in unsent]

    def poll(self, timeout: float | None = None) -> int:
        self._ship()
        return self._deliver(json.loads(str(_call("collecting outcomes", lambda: self._java.outcomes()))))

    def _deliver(self, rows: list) -> int:
        """Each outcome (and each send that never reached the JVM) to its delivery callback."""
        with self._lock:
            gone, self._gone = self._gone, []
            failed, self._failed = self._failed, []
        rows += [[ident, KafkaError._TRANSPORT, True, "the client JVM exited before the delivery was confirmed",
                  -1, -1] for ident in gone]
        rows += [[ident, error.code(), error.retriable(), error.str(), -1, -1] for ident, error in failed]
        for ident, code, retriable, text, partition, offset in rows:
            with self._lock:
                callback, topic, key, value = self._callbacks.pop(ident, (None, "", None, None))
            if callback is None:
                continue
            error = None if code == 0 else KafkaError(code, text, retriable=retriable)
            callback(error, Message(topic=topic, partition=partition, offset=offset if offset >= 0 else OFFSET_INVALID,
                                    key=key, value=value, error=error))
        return len(rows)

    def flush(self, timeout: float | None = None) -> int:
        """What is left unsent goes, every send is waited for, each outcome delivered: one call into the
        JVM (a heartbeat a second per cluster pair made three)."""
        with self._lock:
            unsent, self._unsent = self._unsent, []
        packed = struct.pack(">i", len(unsent)) + b"".join(unsent)
        try:
            left, rows = json.loads(str(_call("flushing", lambda: self._java.sendAndFlush(packed,
                                                                                          _ms(timeout, 3600)))))
        except KafkaException as exc:  # as a failed ship: none of them went, each callback says so
            with self._lock:
                self._failed += [(struct.unpack_from(">q", one)[0], exc.args[0]) for one in unsent]
            left = int(_call("flushing", lambda: self._java.flush(_ms(timeout, 3600))))
            self.poll(0)
            return left
        self._deliver(rows)
        return int(left)

    def __len__(self) -> int:
        with self._lock:
            return len(self._callbacks)

    def init_transactions(self, timeout: float | None = None) -> None:
        _call("initialising transactions", lambda: self._java.initTransactions())
        self._transactions = True

    def close(self) -> None:
        self._closed = True
        _call("closing a producer", lambda: self._bridge.close())

    def __del__(self) -> None:
        _close_quietly(self)
