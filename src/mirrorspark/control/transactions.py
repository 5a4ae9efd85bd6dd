"""Exactly-once asked for: the target must take transactions before any data moves.

The sink's transactional producers would otherwise fail (or hang) in every task with a Kafka error
that names no key. Checked once per flow at start: the transaction log can exist on the target's
brokers, and a producer with the flow's ``transactional.id`` prefix can start (the ACLs allow it).
"""
from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource

from mirrorspark.config.model import FlowConfig
from mirrorspark.control.admin import producer as make_producer
from mirrorspark.control.groups import JavaGroups
from mirrorspark.errors import ConfigError, OperationalError
from mirrorspark.partition import Partition

log = logging.getLogger(__name__)

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
    producer = make_producer({**target_conf, "transactional.id": f"{flow.transactional_id_prefix}check",
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


def committed_progress(groups: JavaGroups, flow: FlowConfig, partitions: list[Partition],
                       ids: Mapping[str, tuple[str, str]] | None = None, fence: bool = True) -> dict[Partition, int]:
    """The flow's committed progress (next source offset) per remote partition that has one: what a
    read_committed consumer of the target holds of the flow, whatever was left open or aborted.
    With ``ids`` (remote topic -> the source and remote topic ids now), progress the sink committed
    for other ids (a topic deleted and re-created since: its offsets are another topic's) is left out.

    A partition whose progress sits in a transaction still open (the previous writer stopped mid-batch)
    has none to read yet: with ``fence`` the flow's open transactions are fenced first, as the sink's
    driver fences them at each start (its tasks' ids, whatever layout the previous writer had, and the
    id of each such partition in the earlier layout of one producer per partition), which aborts them;
    still open after that is an OperationalError (retried), never taken for "no progress". Through
    Kafka's Java clients (``groups``): librdkafka's answer to this request once hung for minutes after
    the target's outage, then aborted the process (ADR 0024)."""
    fenced: set[Partition] = set()
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        found, open_ = groups.committed_stable(flow.progress_group, partitions)
        if not open_:
            break
        if fence and set(open_) - fenced:
            fresh = [key for key in open_ if key not in fenced]
            tasks = groups.fence_open(flow.task_transactional_id_prefix)
            groups.fence([f"{flow.transactional_id_prefix}{topic}-{partition}" for topic, partition in fresh])
            log.info("flow %s: %d partition(s) had a transaction of the previous writer open on the target; its %d "
                     "task transaction(s) and those partitions' ids are fenced (the broker aborted those transactions)",
                     flow.name, len(fresh), len(tasks))
            fenced.update(fresh)
            continue
        if time.monotonic() >= deadline:
            shown = ", ".join(f"{t}[{p}]" for t, p in open_[:5])
            raise OperationalError(f"flow {flow.name}: a transaction of the flow is still open on the target for "
                                   f"{shown} (the previous writer's): its progress is read once it ends")
        time.sleep(1.0)
    return {key: offset for key, (offset, metadata) in found.items()
            if offset >= 0 and (ids is None or progress_holds(metadata, ids.get(key[0])))}


_TOPIC_ID = re.compile(r"[A-Za-z0-9_-]{22}|")


def progress_holds(metadata: str | None, now: tuple[str, str] | None) -> bool:
    """The progress metadata (``ms2[p];<source id>|<remote id>;...``, the sink's ``Progress``) was
    committed for the topics that exist now; older formats, unknown ids and ids not closed by ';'
    (damaged) say nothing against it."""
    if not metadata or not metadata.startswith("ms2") or now is None:
        return True
    parts = metadata.split(";", 2)
    if len(parts) < 3 or "|" not in parts[1]:
        return True
    source_id, remote_id = parts[1].split("|", 1)
    if not _TOPIC_ID.fullmatch(source_id) or not _TOPIC_ID.fullmatch(remote_id):
        return True
    return (not source_id or not now[0] or source_id == now[0]) and (not remote_id or not now[1] or remote_id == now[1])
