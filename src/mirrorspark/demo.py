"""``mirrorspark demo``: the README's first command, end to end on two real local clusters."""
from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic

from mirrorspark.client.failover import FailoverPlan, execute_failover, plan_failover
from mirrorspark.config import load_config
from mirrorspark.control.admin import admin_client, end_offsets, producer
from mirrorspark.errors import OperationalError
from mirrorspark.local import ClusterSpec, LocalClusters
from mirrorspark.pipeline.runner import Replicator

TOPIC = "orders"
PARTITIONS = 3
RECORDS = 3000
GROUP = "billing"
READ_FIRST = 400  # per partition


def _produce_sample(bootstrap: str) -> None:
    admin = admin_client({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        with contextlib.suppress(KafkaException):  # already there from an earlier demo
            future.result(timeout=30)
    sample = producer({"bootstrap.servers": bootstrap, "linger.ms": 10})
    now = int(time.time() * 1000)
    for i in range(RECORDS):
        sample.produce(TOPIC, key=f"customer-{i % 97}".encode(), value=f'{{"order": {i}}}'.encode(),
                         partition=i % PARTITIONS, timestamp=now - (RECORDS - i),
                         headers=[("source", b"demo"), ("seq", str(i).encode())])
    sample.flush(30)


def _records(bootstrap: str, topic: str) -> dict[int, list[tuple]]:
    """Every record of ``topic`` per partition, as (key, value, timestamp, headers), in offset order."""
    ends = end_offsets(bootstrap, topic)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mirrorspark-demo-reader",
                         "enable.auto.commit": False})
    out: dict[int, list[tuple]] = {p: [] for p in ends}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p, end in ends.items() if end > 0])
        deadline = time.monotonic() + 60
        while sum(map(len, out.values())) < sum(ends.values()) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and not msg.error():
                out[msg.partition() or 0].append((msg.key(), msg.value(), msg.timestamp()[1], msg.headers()))
        return out
    finally:
        consumer.close()


def _consume(bootstrap: str, topic: str, group: str, limit: int) -> list[int]:
    """Read up to ``limit`` records of ``topic`` as ``group`` from its committed positions, committing
    as it goes (an application's consumer); returns the records' sequence numbers."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    seqs: list[int] = []
    try:
        consumer.subscribe([topic])
        idle = time.monotonic()
        while len(seqs) < limit and time.monotonic() - idle < 10:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            idle = time.monotonic()
            seqs.append(_seq(msg))
            consumer.commit(message=msg, asynchronous=False)
        return seqs
    finally:
        consumer.close()


def _seq(msg) -> int:
    """The sequence number the sample records carry in their ``seq`` header."""
    value = dict(msg.headers() or []).get("seq")
    return int(value.decode() if isinstance(value, bytes) else str(value))


def _read_first(bootstrap: str, group: str, per_partition: int) -> list[int]:
    """The application's consumer before the failover: the first ``per_partition`` records of each
    partition, read and committed as ``group``; returns their sequence numbers."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    seqs: list[int] = []
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 60
        while len(seqs) < per_partition * PARTITIONS and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error() or (msg.offset() or 0) >= per_partition:
                continue
            seqs.append(_seq(msg))
        consumer.commit(offsets=[TopicPartition(TOPIC, p, per_partition) for p in range(PARTITIONS)],
                        asynchronous=False)
        return seqs
    finally:
        consumer.close()


def run_demo(state_dir: Path, echo: Callable[[str], None]) -> None:
    """Replicate, compare every record, then fail a consumer group over and count what it reads."""
    shutil.rmtree(state_dir, ignore_errors=True)
    local = LocalClusters(state_dir)
    echo("== starting two local Kafka clusters (real Apache Kafka, KRaft mode)")
    try:
        started = {c.name: c.bootstrap for c in local.up([ClusterSpec("primary"), ClusterSpec("backup")])}
        for name, bootstrap in started.items():
            echo(f"{name}={bootstrap}")
        echo(f"== producing {RECORDS} records into '{TOPIC}' ({PARTITIONS} partitions) on primary")
        _produce_sample(started["primary"])
        first = _read_first(started["primary"], GROUP, READ_FIRST)
        echo(f"== consumer group '{GROUP}' reads the first {READ_FIRST} records of each partition on primary "
             "and commits")
        config_file = state_dir / "mm2.properties"
        config_file.write_text(
            "clusters = primary, backup\n"
            f"primary.bootstrap.servers = {started['primary']}\n"
            f"backup.bootstrap.servers = {started['backup']}\n"
            "primary->backup.enabled = true\n"
            f"primary->backup.topics = {TOPIC}\n"
            "emit.checkpoints.interval.seconds = 1\n"
            "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
            "offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n"
        )
        echo(f"== replicating primary->backup with {config_file}")
        config = load_config(config_file)
        replicator = Replicator(config, state_dir)
        replicator.launch()
        remote = f"primary.{TOPIC}"
        source_ends = end_offsets(started["primary"], TOPIC)
        plans: list[FailoverPlan] = []

        def done() -> bool:  # everything copied, and checkpoints for every commit of the group
            if end_offsets(started["backup"], remote) != source_ends:
                return False
            plan = plan_failover(config, GROUP, "primary", "backup")
            plans[:] = [plan]
            return sum(row.checkpoint_upstream or 0 for row in plan.partitions) == len(first)

        replicator.run(progress=echo, progress_interval=2.0, until=done)
        _compare(started, remote, echo)
        _fail_over(config, plans[0], started["backup"], remote, first, echo)
    finally:
        echo("== stopping the clusters")
        for line in local.down(purge=True):
            echo(f"  {line}")


def _compare(started: dict[str, str], remote: str, echo: Callable[[str], None]) -> None:
    echo(f"== comparing every record of '{TOPIC}' on primary with '{remote}' on backup")
    source, target = _records(started["primary"], TOPIC), _records(started["backup"], remote)
    same = 0
    for partition, records in sorted(source.items()):
        copied = target.get(partition, [])
        equal = sum(1 for a, b in zip(records, copied, strict=False) if a == b)
        same += equal if len(copied) == len(records) else 0
        echo(f"  partition {partition}: primary {len(records)} records, backup {len(copied)}, identical "
             f"(key, value, timestamp, headers, offset order) {equal}")
    total = sum(map(len, source.values()))
    if same != total:
        raise OperationalError(f"demo: {total - same} of {total} records differ between primary and backup")
    echo(f"  all {total} records identical on backup")


def _fail_over(config, plan: FailoverPlan, backup: str, remote: str, first: list[int],
               echo: Callable[[str], None]) -> None:
    echo(f"== failing group '{GROUP}' over to backup (as `mirrorspark failover ... --execute` does)")
    committed = execute_failover(config, plan)
    for (topic, partition), offset in sorted(committed.items()):
        echo(f"  {topic} partition {partition}: committed {offset} on backup")
    rest = _consume(backup, remote, GROUP, RECORDS)
    twice, missed = len(set(first) & set(rest)), RECORDS - len(set(first) | set(rest))
    echo(f"  '{GROUP}' resumed on backup: read {len(rest)} more records, {twice} read twice, {missed} missed")
    if twice or missed:
        raise OperationalError(f"demo: after failover {twice} record(s) were read twice and {missed} missed")
    echo("== all replicated, and the failover read each record exactly once")
