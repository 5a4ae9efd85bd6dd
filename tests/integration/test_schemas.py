"""Schemas move with the data (issue 49, ADR 0028), against real brokers and two real schema registries
(Apicurio Registry 3.0.9, the Confluent-compatible API), records written and read with Confluent's own
Avro serializer and deserializer.

The target registry's id 1 is another schema before the copy starts (ids collide by accident); a new
version is registered on the source mid-stream. Every record on the target deserializes with the
target registry alone, to what was produced, and each carries a sequence number (header ``seq``)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from helpers.config import write_config
from helpers.kafka import create_topic, wait_for_count
from helpers.processes import run_cli, running_mirrorspark

from mirrorspark.local import registry
from mirrorspark.local.cluster import free_port, java_executable

pytestmark = pytest.mark.broker

V1 = '{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"long"}]}'
V2 = ('{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"long"},'
      '{"name":"note","type":"string","default":""}]}')


@pytest.fixture(scope="module")
def registries(tmp_path_factory):
    """Two local registries, one per cluster; stopped at the end."""
    folders = {name: tmp_path_factory.mktemp(f"registry-{name}") for name in ("primary", "backup")}
    try:
        yield {name: registry.url(registry.ensure(folder, java=java_executable(), port=free_port()))
               for name, folder in folders.items()}
    finally:
        for folder in folders.values():
            registry.stop(folder)


def _produce(bootstrap: str, topic: str, serializer: AvroSerializer, first: int, count: int, note: str | None) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for seq in range(first, first + count):
        value = {"id": seq} if note is None else {"id": seq, "note": f"{note}-{seq}"}
        producer.produce(topic, key=str(seq).encode(), partition=seq % 2, headers=[("seq", str(seq).encode())],
                         value=serializer(value, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(60) == 0


def _read_all(bootstrap: str, topic: str, deserializer: AvroDeserializer) -> dict[int, dict]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{time.time_ns()}",
                         "enable.auto.commit": False})
    found: dict[int, dict] = {}
    try:
        parts = [TopicPartition(topic, p, 0) for p in range(2)]
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(2)}
        consumer.assign(parts)
        left = sum(ends.values())
        deadline = time.monotonic() + 60
        while left > 0 and time.monotonic() < deadline:
            for msg in consumer.consume(500, 1.0):
                assert msg.error() is None, msg.error()
                left -= 1
                seq = int(dict(msg.headers())["seq"])
                found[seq] = deserializer(msg.value(), SerializationContext(topic, MessageField.VALUE))
    finally:
        consumer.close()
    return found


def test_avro_records_read_on_the_target_with_the_target_registry_alone(clusters, unique, tmp_path: Path, registries):
    topic, remote = f"avro-{unique}", f"primary.avro-{unique}"
    create_topic(clusters["primary"], topic, 2)
    source_registry = SchemaRegistryClient({"url": registries["primary"]})
    target_registry = SchemaRegistryClient({"url": registries["backup"]})
    # The target registry's first ids are other schemas: a copied record keeping id 1 would read as them.
    target_registry.register_schema(f"unrelated-{unique}-value", Schema('"string"', "AVRO"))
    target_registry.register_schema(f"unrelated-{unique}-value", Schema('"long"', "AVRO"))
    v1 = AvroSerializer(source_registry, V1, conf={"auto.register.schemas": True})
    _produce(clusters["primary"], topic, v1, 0, 200, None)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          f"primary.schema.registry.url = {registries['primary']}\n"
                          f"backup.schema.registry.url = {registries['backup']}\n"
                          "mirrorspark.schemas.sync.enabled = true\n"
                          "mirrorspark.schemas.sync.interval.seconds = 3600\n")  # the new version: met in a record
    with running_mirrorspark(config, tmp_path / "state") as mirror:
        wait_for_count(clusters["backup"], remote, 200)
        v2 = AvroSerializer(source_registry, V2, conf={"auto.register.schemas": True})
        _produce(clusters["primary"], topic, v2, 200, 200, "two")  # a version the target's registry has not seen
        wait_for_count(clusters["backup"], remote, 400, timeout=180)
        output = mirror.output()
    read = _read_all(clusters["backup"], remote, AvroDeserializer(target_registry))
    assert sorted(read) == list(range(400))
    assert all(read[seq] == {"id": seq} for seq in range(200)), "the first version's records"
    assert all(read[seq] == {"id": seq, "note": f"two-{seq}"} for seq in range(200, 400))
    subject = f"{remote}-value"
    assert target_registry.get_versions(subject) == [1, 2]
    assert source_registry.get_latest_version(f"{topic}-value").schema_id != \
        target_registry.get_latest_version(subject).schema_id, "ids differ between the registries: rewritten"
    assert "the batch runs again" in output, output[-3000:]
    done = run_cli("audit", str(config), "--flow", "primary->backup", "--state-dir", str(tmp_path / "state"),
                   "--json", "--topics", topic, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["totals"]["matched"] == 400 and report["totals"]["differing"] == 0, report["totals"]


def test_a_target_registry_that_does_not_answer_holds_the_records_that_need_it(clusters, unique, tmp_path: Path,
                                                                               registries):
    """The target registry stopped (SIGSTOP, so it keeps its schemas) for 30 s while records of a version it
    does not hold yet arrive: the flow waits, writes none of them with an id the target lacks, and copies
    them once the registry answers; every record reads with the target registry."""
    import os
    import signal

    topic, remote = f"avro-down-{unique}", f"primary.avro-down-{unique}"
    create_topic(clusters["primary"], topic, 2)
    source_registry = SchemaRegistryClient({"url": registries["primary"]})
    target_registry = SchemaRegistryClient({"url": registries["backup"]})
    _produce(clusters["primary"], topic, AvroSerializer(source_registry, V1), 0, 100, None)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          f"primary.schema.registry.url = {registries['primary']}\n"
                          f"backup.schema.registry.url = {registries['backup']}\n"
                          "mirrorspark.schemas.sync.enabled = true\n")
    port = int(registries["backup"].split(":")[2].split("/")[0])
    pid = int(next(p for p in Path("/proc").iterdir() if p.name.isdigit() and _serves(p, port)).name)
    with running_mirrorspark(config, tmp_path / "state") as mirror:
        wait_for_count(clusters["backup"], remote, 100)
        os.kill(pid, signal.SIGSTOP)
        try:
            _produce(clusters["primary"], topic, AvroSerializer(source_registry, V2), 100, 100, "late")
            time.sleep(30)
            held = _count(clusters["backup"], remote)
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_for_count(clusters["backup"], remote, 200, timeout=180)
        output = mirror.output()
    assert held == 100, f"{held - 100} record(s) written while the target registry did not answer"
    read = _read_all(clusters["backup"], remote, AvroDeserializer(target_registry))
    assert sorted(read) == list(range(200))
    assert all(read[seq] == {"id": seq, "note": f"late-{seq}"} for seq in range(100, 200))
    assert "degraded" in output and "schema registry of backup" in output, output[-3000:]


def _serves(proc: Path, port: int) -> bool:
    try:
        return f"-Dquarkus.http.port={port}" in (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def _count(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"count-{time.time_ns()}"})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(2))
    finally:
        consumer.close()
