"""Consumer groups on real brokers: consume and commit, read from given offsets, commit offsets directly,
and the checkpoints a flow emitted for a group."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition

from mirrorspark.control.admin import admin_client
from mirrorspark.offsets.checkpoint_store import CheckpointStore


def consume(bootstrap: str, group: str, topic: str, n: int) -> list[bytes]:
    """Read ``n`` records of ``topic`` as ``group`` and commit each; return their keys."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    keys: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(keys) < n and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and not msg.error():
            keys.append(msg.key())
            consumer.commit(msg, asynchronous=False)
    consumer.close()
    assert len(keys) == n
    return keys


def checkpoints(bootstrap: str, source: str, group: str) -> dict[tuple[str, int], int]:
    store = CheckpointStore()
    store.load({"bootstrap.servers": bootstrap}, f"{source}.checkpoints.internal")
    return {(c.topic, c.partition): c.downstream for c in store.for_group(group)}


def read_from(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> list[bytes]:
    """Everything from the given offsets to the end, as a consumer that failed over would."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(t, p, o) for (t, p), o in offsets.items()])
    keys, eof = [], set()
    deadline = time.monotonic() + 60
    while len(eof) < len(offsets) and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            eof.add((msg.topic(), msg.partition()))
            continue
        keys.append(msg.key())
    consumer.close()
    return keys


def commit_on(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    from mirrorspark.control.groups import RdkafkaGroups
    RdkafkaGroups(admin=admin_client({"bootstrap.servers": bootstrap}), cluster=bootstrap).commit(
        group, {k: (v, "") for k, v in offsets.items()})
