"""Small real-broker helpers for tests: create (and re-create) topics, produce, read everything back, count
what landed by sequence number."""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from mirrorspark.control.admin import admin_client, client_conf, end_offsets
from mirrorspark.control.admin import consumer as make_consumer
from mirrorspark.control.admin import producer as make_producer


@dataclass(frozen=True)
class Rec:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...]

    def content(self) -> tuple:
        """Everything replication must keep (offsets may differ)."""
        return (self.partition, self.key, self.value, self.timestamp, self.headers)


def create_topic(bootstrap: str | dict, name: str, partitions: int) -> None:
    admin = admin_client(client_conf(bootstrap))
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(timeout=30)


def produce(bootstrap: str | dict, topic: str, records: list[dict]) -> None:
    # idempotent: a retried request (a re-created topic's leader not yet known) must not put later records
    # ahead of it, the drills compare the target's order with the sequence numbers; Kafka's Java one for Kerberos
    producer = make_producer({**client_conf(bootstrap), "linger.ms": 5, "enable.idempotence": True})
    for rec in records:
        producer.produce(topic, **rec)
    assert producer.flush(30) == 0


def count(bootstrap: str | dict, topic: str) -> int:
    return sum(end_offsets(bootstrap, topic).values())


def wait_for_count(bootstrap: str | dict, topic: str, expected: int, timeout: float = 120.0) -> int:
    """Wait until ``topic`` holds at least ``expected`` records; return the count seen."""
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        try:
            seen = count(bootstrap, topic)
        except KafkaException:  # e.g. a leader not yet elected for a re-created topic
            time.sleep(0.5)
            continue
        if seen >= expected:
            return seen
        time.sleep(0.5)
    raise AssertionError(f"{topic} on {client_conf(bootstrap)['bootstrap.servers']} holds {seen} records, "
                         f"expected {expected} within {timeout} s")


def read_all(bootstrap: str | dict, topic: str) -> list[Rec]:
    """Every record of every partition, in offset order per partition."""
    ends = end_offsets(bootstrap, topic)
    consumer = make_consumer({**client_conf(bootstrap), "group.id": "mirrorspark-tests-read",
                              "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        out: list[Rec] = []
        remaining = sum(ends.values())
        deadline = time.monotonic() + 60
        while remaining > 0 and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            out.append(Rec(msg.partition(), msg.offset(), msg.key(), msg.value(), msg.timestamp()[1],
                           tuple(msg.headers() or ())))
            remaining -= 1
        assert remaining == 0, f"could not read all of {topic}: {remaining} missing"
        return sorted(out, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


def seqs(bootstrap: str | dict, topic: str) -> list[int]:
    """The ``seq`` header of every record of ``topic``, as drills stamp them."""
    return [int(dict(r.headers)["seq"]) for r in read_all(bootstrap, topic)]


def wait_for_every_seq(bootstrap: str | dict, topic: str, total: int, timeout: float = 180.0) -> list[int]:
    """Wait until every sequence number below ``total`` is on ``topic``; return what landed.

    A record count alone is not enough after a fault: copies made twice make up the count while the
    last records are still on their way, and they would then read as lost."""
    deadline = time.monotonic() + timeout
    wait_for_count(bootstrap, topic, total, timeout)
    while True:
        landed = seqs(bootstrap, topic)
        missing = set(range(total)) - set(landed)
        if not missing or time.monotonic() >= deadline:
            return landed
        time.sleep(2)


def lost_and_duplicated(expected, landed: list[int]) -> tuple[set[int], int]:
    """Sequence numbers expected but absent, and how many landed more than once."""
    return set(expected) - set(landed), len(landed) - len(set(landed))


def produce_backlog(bootstrap: str, topic: str, total: int, partitions: int) -> None:
    """``total`` numbered records (header ``seq``) as fast as the source takes them, round robin over partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "enable.idempotence": True})
    for seq in range(total):
        while True:
            try:
                producer.produce(topic, key=str(seq).encode(), value=b"v" * 100, partition=seq % partitions,
                                 headers=[("seq", str(seq).encode())])
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def delete_and_recreate(admin, topic: str, partitions: int, gone_for: float = 0.0) -> None:
    """Delete ``topic``, wait until the source no longer lists it (then ``gone_for`` seconds more), and
    make it again (a new topic id)."""
    from helpers.waiting import wait_until
    from mirrorspark.control.admin import topic_partitions

    admin.delete_topics([topic])[topic].result(30)
    wait_until(lambda: topic not in topic_partitions(admin), "source topic deletion", 30)
    time.sleep(gone_for)
    wait_until(lambda: recreate(admin, topic, partitions), "source topic re-creation", 60)


def recreate(admin, topic: str, partitions: int) -> bool:
    """Create ``topic`` again; False while the broker still finishes deleting the old one."""
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
        return True
    except KafkaException:
        return False


def limit_client(bootstrap: str, client_id: str, bytes_per_second: int) -> None:
    """A produce quota on ``client_id`` (Kafka's own ConfigCommand), as a slow or metered WAN link would be."""
    from mirrorspark import paths
    from mirrorspark.local.cluster import java_executable

    done = subprocess.run([java_executable(), "-Xmx128m", "-cp", f"{paths.kafka_libs()}/*", "kafka.admin.ConfigCommand",
                           "--bootstrap-server", bootstrap, "--alter", "--add-config",
                           f"producer_byte_rate={bytes_per_second}", "--entity-type", "clients", "--entity-name",
                           client_id], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
