"""Exactly-once asked for: the target must take transactions before any data moves.

The sink's transactional producers would otherwise fail (or hang) in every task with a Kafka error
that names no key. Checked once per flow at start: the transaction log can exist on the target's
brokers, and a producer with the flow's ``transactional.id`` prefix can start (the ACLs allow it).
"""
from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from mirrorspark.config.model import FlowConfig
from mirrorspark.errors import ConfigError

TRANSACTION_LOG = "__transaction_state"
TIMEOUT_S = 30.0


def check_transactions(flow: FlowConfig, target: AdminClient, target_conf: dict[str, str]) -> None:
    """Refuse, naming the key and the cluster, a target where the flow's transactions cannot run."""
    key, alias = flow.exactly_once_key, flow.target.alias
    metadata = target.list_topics(timeout=TIMEOUT_S)
    if TRANSACTION_LOG not in metadata.topics:
        brokers = sorted(metadata.brokers)
        found = target.describe_configs([ConfigResource("BROKER", str(brokers[0]))])
        configs = next(iter(found.values())).result(timeout=TIMEOUT_S)
        factor = _int(configs.get("transaction.state.log.replication.factor"))
        min_isr = _int(configs.get("transaction.state.log.min.isr"))
        problem = transaction_log_problem(len(brokers), factor, min_isr)
        if problem:
            raise ConfigError(f"{key} = enabled, but cluster {alias!r} cannot keep transactions: {problem}; lower "
                              f"them on its brokers, or add brokers, or leave {key} unset (at least once)", key)
    producer = Producer({**target_conf, "transactional.id": f"{flow.transactional_id_prefix}check",
                         "transaction.timeout.ms": "60000"})
    try:
        producer.init_transactions(TIMEOUT_S)
    except KafkaException as exc:
        error = exc.args[0]
        raise ConfigError(f"{key} = enabled, but cluster {alias!r} refused a transactional producer with id "
                          f"{flow.transactional_id_prefix}check ({error.name()}: {error.str()}): the flow's principal "
                          f"needs Write and Describe on TransactionalId prefix {flow.transactional_id_prefix!r} and "
                          f"Read on group {flow.progress_group!r}, and the brokers must support transactions", key) \
            from None
    finally:
        producer.flush(0)


def transaction_log_problem(brokers: int, factor: int | None, min_isr: int | None) -> str:
    """Why ``brokers`` brokers cannot create the transaction log with these settings ('' when they can)."""
    if factor is not None and factor > brokers:
        return (f"transaction.state.log.replication.factor is {factor} and it has {brokers} broker(s), so "
                f"{TRANSACTION_LOG} cannot be created")
    if min_isr is not None and factor is not None and min_isr > factor:
        return (f"transaction.state.log.min.isr ({min_isr}) is above transaction.state.log.replication.factor "
                f"({factor}), so no transaction can commit")
    return ""


def _int(entry) -> int | None:
    try:
        return int(entry.value) if entry is not None and entry.value is not None else None
    except ValueError:
        return None


def committed_progress(target: AdminClient, flow: FlowConfig, partitions: list[tuple[str, int]],
                       ids: Mapping[str, tuple[str, str]] | None = None) -> dict[tuple[str, int], int]:
    """The flow's committed progress (next source offset) per remote partition that has one: what a
    read_committed consumer of the target holds of the flow, whatever was left open or aborted.
    With ``ids`` (remote topic -> the source and remote topic ids now), progress the sink committed
    for other ids (a topic deleted and re-created since: its offsets are another topic's) is left out."""
    request = ConsumerGroupTopicPartitions(flow.progress_group, [TopicPartition(t, p) for t, p in partitions])
    found = next(iter(target.list_consumer_group_offsets([request], require_stable=True).values()))
    result = found.result(TIMEOUT_S)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions or ()
            if tp.offset >= 0 and (ids is None or progress_holds(tp.metadata, ids.get(tp.topic)))}


def progress_holds(metadata: str | None, now: tuple[str, str] | None) -> bool:
    """The progress metadata (``ms2[p];<source id>|<remote id>;...``, the sink's ``Progress``) was
    committed for the topics that exist now; older formats and unknown ids say nothing against it."""
    if not metadata or not metadata.startswith("ms2") or now is None:
        return True
    parts = metadata.split(";", 2)
    if len(parts) < 2 or "|" not in parts[1]:
        return True
    source_id, remote_id = parts[1].split("|", 1)
    return (not source_id or not now[0] or source_id == now[0]) and (not remote_id or not now[1] or remote_id == now[1])
