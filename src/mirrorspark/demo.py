"""``mirrorspark demo``: the README's first command, end to end on two real local clusters."""
from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic

from mirrorspark.config import load_config
from mirrorspark.control.admin import admin_client, end_offsets, producer
from mirrorspark.local import ClusterSpec, LocalClusters
from mirrorspark.pipeline.runner import Replicator

TOPIC = "orders"
PARTITIONS = 3
RECORDS = 3000


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


def _first_records(bootstrap: str, topic: str, partition: int, n: int) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mirrorspark-demo",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        lines: list[str] = []
        while len(lines) < n:
            msg = consumer.poll(5)
            if msg is None:
                break
            if msg.error():
                continue
            lines.append(f"    offset {msg.offset()}: key={msg.key()!r} value={msg.value()!r} "
                         f"timestamp={msg.timestamp()[1]} headers={msg.headers()}")
        return lines
    finally:
        consumer.close()


def run_demo(state_dir: Path, echo: Callable[[str], None]) -> None:
    shutil.rmtree(state_dir, ignore_errors=True)
    local = LocalClusters(state_dir)
    echo("== starting two local Kafka clusters (real Apache Kafka, KRaft mode)")
    try:
        started = {c.name: c.bootstrap for c in local.up([ClusterSpec("primary"), ClusterSpec("backup")])}
        for name, bootstrap in started.items():
            echo(f"{name}={bootstrap}")
        echo(f"== producing {RECORDS} records into '{TOPIC}' ({PARTITIONS} partitions) on primary")
        _produce_sample(started["primary"])
        config_file = state_dir / "mm2.properties"
        config_file.write_text(
            "clusters = primary, backup\n"
            f"primary.bootstrap.servers = {started['primary']}\n"
            f"backup.bootstrap.servers = {started['backup']}\n"
            "primary->backup.enabled = true\n"
            f"primary->backup.topics = {TOPIC}\n"
            "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
            "offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n"
        )
        echo(f"== replicating primary->backup with {config_file}")
        replicator = Replicator(load_config(config_file), state_dir)
        replicator.launch()
        remote = f"primary.{TOPIC}"
        source_ends = end_offsets(started["primary"], TOPIC)
        replicator.run(progress=echo, progress_interval=2.0,
                       until=lambda: end_offsets(started["backup"], remote) == source_ends)
        echo(f"== what arrived on backup in '{remote}'")
        target_ends = end_offsets(started["backup"], remote)
        for partition, end in source_ends.items():
            echo(f"  partition {partition}: primary {end} records, backup {target_ends.get(partition, 0)} records")
        echo("  first records of partition 0 on backup (same key, value, timestamp and headers as on primary):")
        for line in _first_records(started["backup"], remote, 0, 3):
            echo(line)
        echo("== all replicated" if target_ends == source_ends else "== MISMATCH between primary and backup")
    finally:
        echo("== stopping the clusters")
        for line in local.down(purge=True):
            echo(f"  {line}")
