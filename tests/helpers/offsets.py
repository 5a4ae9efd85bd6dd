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


def share_consume(bootstrap: str, group: str, topic: str, *, at_least: int, limit: int | None = None,
                  quiet: float = 5.0, timeout: float = 90.0) -> list[tuple[int, int, int]]:
    """Read ``topic`` as the share group ``group`` (KIP-932; started at the earliest record), each record
    acknowledged as delivered, until ``at_least`` records came and nothing more for ``quiet`` seconds,
    or ``limit`` came (the records delivered after it are released, to be delivered again); returns
    ``(partition, offset, seq)`` of each record acknowledged."""
    from confluent_kafka import AcknowledgeType, ShareConsumer
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    earliest = ConfigResource("GROUP", group, incremental_configs=[ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin = admin_client({"bootstrap.servers": bootstrap})  # kept until its answers came
    for future in admin.incremental_alter_configs([earliest]).values():
        future.result()
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    got: list[tuple[int, int, int]] = []
    deadline, last = time.monotonic() + timeout, time.monotonic()
    try:
        while time.monotonic() < deadline and (len(got) < at_least or time.monotonic() - last < quiet) \
                and (limit is None or len(got) < limit):
            for msg in consumer.poll(1.0) or []:
                if msg.error() is None and limit is not None and len(got) >= limit:
                    consumer.acknowledge(msg, AcknowledgeType.RELEASE)
                elif msg.error() is None:
                    got.append((msg.partition(), msg.offset(), int(dict(msg.headers() or ())["seq"])))
                    consumer.acknowledge(msg)
                    last = time.monotonic()
        consumer.commit_sync()
    finally:
        consumer.close()
    assert len(got) >= at_least, f"share group {group} read {len(got)} records of {topic}, expected {at_least}"
    return got
