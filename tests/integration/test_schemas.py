"""Schemas move with the data (issue 49, ADR 0028), against real brokers and two real schema registries
(Apicurio Registry 3.0.9, the Confluent-compatible API), records written and read with Confluent's own
Avro serializer and deserializer.

The target registry's id 1 is another schema before the copy starts (ids collide by accident); a new
version is registered on the source mid-stream. Every record on the target deserializes with the
target registry alone, to what was produced, and each carries a sequence number (header ``seq``)."""
from __future__ import annotations

import json
import re
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
from helpers.waiting import wait_until

from mirrorspark.local import registry
from mirrorspark.local.cluster import free_port, java_executable

pytestmark = pytest.mark.broker

V1 = '{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"long"}]}'
V2 = ('{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"long"},'
      '{"name":"note","type":"string","default":""}]}')
# A version no other test registers: ids are global in a registry, so a schema another subject already
# holds has its target id in the flow's map before this subject's version is copied.
V2_HELD = ('{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"long"},'
           '{"name":"note","type":"string","default":""},{"name":"held","type":"boolean","default":false}]}')


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


@pytest.mark.long  # in `make drills`: keeps `make test` under 30 minutes
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
            _produce(clusters["primary"], topic, AvroSerializer(source_registry, V2_HELD), 100, 100, "late")
            time.sleep(30)
            held = _count(clusters["backup"], remote)
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_for_count(clusters["backup"], remote, 200, timeout=180)
        output = mirror.output()
    assert held == 100, f"{held - 100} record(s) written while the target registry did not answer"
    read = _read_all(clusters["backup"], remote, AvroDeserializer(target_registry))
    assert sorted(read) == list(range(200))
    assert all(read[seq] == {"id": seq, "note": f"late-{seq}", "held": False} for seq in range(100, 200))
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


def test_records_whose_id_neither_registry_knows_are_copied_unchanged_and_counted(clusters, unique, tmp_path: Path,
                                                                                  registries):
    """``mirrorspark.schemas.unresolved = copy``: 30 records framed with an id the source registry never
    gave (a producer that bypassed it) among 60 ordinary ones; all 90 copied, those 30 byte for byte,
    and the log counts exactly 30 (``mirrorspark_schema_unresolved_records_total`` is fed the same figures)."""
    topic, remote = f"avro-unknown-{unique}", f"primary.avro-unknown-{unique}"
    create_topic(clusters["primary"], topic, 2)
    source_registry = SchemaRegistryClient({"url": registries["primary"]})
    _produce(clusters["primary"], topic, AvroSerializer(source_registry, V1), 0, 60, None)
    stray = b"\x00" + (987_654).to_bytes(4, "big") + b"no schema"
    producer = Producer({"bootstrap.servers": clusters["primary"], "enable.idempotence": True})
    for seq in range(60, 90):
        producer.produce(topic, value=stray, partition=seq % 2, headers=[("seq", str(seq).encode())])
    assert producer.flush(30) == 0
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          f"primary.schema.registry.url = {registries['primary']}\n"
                          f"backup.schema.registry.url = {registries['backup']}\n"
                          "mirrorspark.schemas.sync.enabled = true\nmirrorspark.schemas.unresolved = copy\n")
    said = "copied with a schema id neither registry knows"
    with running_mirrorspark(config, tmp_path / "state") as mirror:
        wait_for_count(clusters["backup"], remote, 90, timeout=180)
        # Said once the batch's bookkeeping is done, a moment after its records are on the target.
        wait_until(lambda: said in mirror.output(), timeout=60, what="the count of records with an unknown id")
    output = mirror.output()  # every batch's line, the process stopped
    counted = sum(int(m) for m in re.findall(r"(\d+) record\(s\) copied with a schema id neither registry knows",
                                              output))
    assert counted == 30, output[-3000:]
    consumer = Consumer({"bootstrap.servers": clusters["backup"], "group.id": f"raw-{time.time_ns()}"})
    try:
        consumer.assign([TopicPartition(remote, p, 0) for p in range(2)])
        values: dict[int, bytes] = {}
        deadline = time.monotonic() + 60
        while len(values) < 90 and time.monotonic() < deadline:
            for msg in consumer.consume(100, 1.0):
                if msg.error() is None:
                    values[int(dict(msg.headers())["seq"])] = msg.value()
    finally:
        consumer.close()
    assert sorted(values) == list(range(90))
    assert all(values[seq] == stray for seq in range(60, 90)), "copied unchanged"
    assert all(values[seq][1:5] != (987_654).to_bytes(4, "big") for seq in range(60))


def _protobuf_order(unique: str):
    """A Protobuf file of two messages built at run time; Order is the second, so each record carries the
    message index [1] after its schema id, which the copy must keep."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name=f"order_{unique}.proto", package=f"acme{unique}", syntax="proto3")
    proto.message_type.add(name="Note").field.add(name="text", number=1, type=field.TYPE_STRING,
                                                  label=field.LABEL_OPTIONAL)
    order = proto.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=field.TYPE_INT64, label=field.LABEL_OPTIONAL)
    order.field.add(name="note", number=2, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"acme{unique}.Order"))


@pytest.mark.parametrize("kind", ["protobuf", "json"])
def test_protobuf_and_json_schema_records_keep_everything_but_the_id(clusters, unique, tmp_path: Path, registries,
                                                                    kind: str):
    """Records written with Confluent's Protobuf and JSON Schema serializers: on the target each record's
    id names, in the target registry, the schema its source id names in the source registry; every byte
    after the id is the source's (Protobuf's message indexes included); the target's deserializer reads
    them with the target registry."""
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

    topic, remote = f"{kind}-{unique}", f"primary.{kind}-{unique}"
    create_topic(clusters["primary"], topic, 2)
    source_registry = SchemaRegistryClient({"url": registries["primary"]})
    target_registry = SchemaRegistryClient({"url": registries["backup"]})
    target_registry.register_schema(f"taken-{kind}-{unique}-value", Schema('"string"', "AVRO"))  # ids collide
    if kind == "protobuf":
        order = _protobuf_order(unique)
        serialize = ProtobufSerializer(order, source_registry, {"use.deprecated.format": False})
        make = lambda seq: order(id=seq, note=f"n{seq}")  # noqa: E731
        deserializer = ProtobufDeserializer(order, {"use.deprecated.format": False}, target_registry)
        plain = lambda msg: {"id": msg.id, "note": msg.note}  # noqa: E731
    else:
        json_schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": f"Order{unique}",
                                  "type": "object", "properties": {"id": {"type": "integer"},
                                                                   "note": {"type": "string"}}})
        serialize = JSONSerializer(json_schema, source_registry)
        make = lambda seq: {"id": seq, "note": f"n{seq}"}  # noqa: E731
        deserializer = JSONDeserializer(None, schema_registry_client=target_registry)
        plain = lambda value: value  # noqa: E731
    producer = Producer({"bootstrap.servers": clusters["primary"], "enable.idempotence": True})
    sent: dict[int, bytes] = {}
    for seq in range(50):
        sent[seq] = serialize(make(seq), SerializationContext(topic, MessageField.VALUE))
        producer.produce(topic, value=sent[seq], partition=seq % 2, headers=[("seq", str(seq).encode())])
    assert producer.flush(30) == 0
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          f"primary.schema.registry.url = {registries['primary']}\n"
                          f"backup.schema.registry.url = {registries['backup']}\n"
                          "mirrorspark.schemas.sync.enabled = true\n")
    with running_mirrorspark(config, tmp_path / "state"):
        wait_for_count(clusters["backup"], remote, 50, timeout=180)
    consumer = Consumer({"bootstrap.servers": clusters["backup"], "group.id": f"raw-{time.time_ns()}"})
    copied: dict[int, bytes] = {}
    try:
        consumer.assign([TopicPartition(remote, p, 0) for p in range(2)])
        deadline = time.monotonic() + 60
        while len(copied) < 50 and time.monotonic() < deadline:
            for msg in consumer.consume(100, 1.0):
                if msg.error() is None:
                    copied[int(dict(msg.headers())["seq"])] = msg.value()
    finally:
        consumer.close()
    assert sorted(copied) == list(range(50))
    source_id = int.from_bytes(sent[0][1:5], "big")
    target_id = int.from_bytes(copied[0][1:5], "big")
    assert target_id != source_id, "the target registry gave the schema another id"
    assert all(copied[seq][:1] == b"\x00" and copied[seq][5:] == sent[seq][5:] for seq in range(50)), \
        "every byte after the id is the source's"
    assert {int.from_bytes(copied[seq][1:5], "big") for seq in range(50)} == {target_id}
    source_schema, target_schema = source_registry.get_schema(source_id), target_registry.get_schema(target_id)
    assert (target_schema.schema_type, target_schema.schema_str) == \
        (source_schema.schema_type, source_schema.schema_str)
    context = SerializationContext(remote, MessageField.VALUE)
    read = {seq: plain(deserializer(copied[seq], context)) for seq in range(50)}
    assert read == {seq: {"id": seq, "note": f"n{seq}"} for seq in range(50)}


def test_ids_kept_into_an_empty_registry_and_a_schema_the_target_numbers_otherwise_fails_the_flow(
        clusters, unique, tmp_path: Path):
    """``mirrorspark.schemas.ids = keep`` between two fresh registries: the target takes each schema under
    its source id (Apicurio numbers as it goes, the sync registers in the source's id order), records
    keep their ids and read with the target registry. Then a schema registered on the target behind the
    flow's back takes the next id there: the next source version cannot keep its id, and the flow fails
    naming the key before any record with that id is written."""
    folders = {name: tmp_path / f"registry-{name}" for name in ("source", "target")}
    try:
        urls = {name: registry.url(registry.ensure(folder, java=java_executable(), port=free_port()))
                for name, folder in folders.items()}
        topic, remote = f"kept-{unique}", f"primary.kept-{unique}"
        create_topic(clusters["primary"], topic, 2)
        source_registry = SchemaRegistryClient({"url": urls["source"]})
        target_registry = SchemaRegistryClient({"url": urls["target"]})
        source_registry.register_schema(f"other-{unique}-value", Schema('"string"', "AVRO"))  # id 1
        _produce(clusters["primary"], topic, AvroSerializer(source_registry, V1), 0, 100, None)  # id 2
        config = write_config(tmp_path / "mm2.properties", clusters,
                              f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                              f"primary.schema.registry.url = {urls['source']}\n"
                              f"backup.schema.registry.url = {urls['target']}\n"
                              "mirrorspark.schemas.sync.enabled = true\nmirrorspark.schemas.ids = keep\n"
                              "mirrorspark.schemas.sync.interval.seconds = 3600\n")
        with running_mirrorspark(config, tmp_path / "state", exit_code=1) as mirror:
            wait_for_count(clusters["backup"], remote, 100)
            read = _read_all(clusters["backup"], remote, AvroDeserializer(target_registry))
            assert read == {seq: {"id": seq} for seq in range(100)}
            assert target_registry.get_latest_version(f"{remote}-value").schema_id == 2, "the source's id"
            target_registry.register_schema(f"behind-{unique}-value", Schema('"bytes"', "AVRO"))  # the target's 3
            _produce(clusters["primary"], topic, AvroSerializer(source_registry, V2), 100, 50, "new")  # source's 3
            deadline = time.monotonic() + 180
            while "mirrorspark.schemas.ids = keep, but" not in mirror.output() and time.monotonic() < deadline:
                time.sleep(1)
            mirror.proc.wait(120)  # its only flow failed: the process stops by itself, exit 1
            output = mirror.output()
        assert "mirrorspark.schemas.ids = keep, but the schema registry of backup gave" in output, output[-3000:]
        assert _count(clusters["backup"], remote) == 100, "no record written with an id the target gave another schema"
    finally:
        for folder in folders.values():
            registry.stop(folder)


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own CA) and its key, PEM."""
    import subprocess

    cert, key = folder / "registry.pem", folder / "registry-key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


@pytest.mark.long  # minutes of one worker: in `make drills`, keeping `make test` under 30 minutes
def test_a_target_registry_behind_tls_with_a_private_ca(clusters, unique, tmp_path: Path, registries):
    """The target registry answers HTTPS only, with a certificate no system CA signed: trusted through
    ``schema.registry.ssl.ca.location``, records copied and read with it; without that key the flow waits,
    ``degraded``, naming the registry, and copies nothing with an id the target lacks."""
    cert, key = _certificate(tmp_path)
    folder = tmp_path / "registry-tls"
    try:
        port = registry.ensure(folder, java=java_executable(), port=free_port(), tls=(cert, key))
        secure = registry.url(port, tls=True)
        topic, remote = f"tls-{unique}", f"primary.tls-{unique}"
        create_topic(clusters["primary"], topic, 2)
        source_registry = SchemaRegistryClient({"url": registries["primary"]})
        _produce(clusters["primary"], topic, AvroSerializer(source_registry, V1), 0, 60, None)
        lines = (f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                 f"primary.schema.registry.url = {registries['primary']}\nbackup.schema.registry.url = {secure}\n"
                 "mirrorspark.schemas.sync.enabled = true\n")
        untrusted = write_config(tmp_path / "untrusted.properties", clusters, lines)
        with running_mirrorspark(untrusted, tmp_path / "state-untrusted") as mirror:
            deadline = time.monotonic() + 120
            while "CERTIFICATE_VERIFY_FAILED" not in mirror.output() and time.monotonic() < deadline:
                time.sleep(1)
            output = mirror.output()
        assert "CERTIFICATE_VERIFY_FAILED" in output and "schema registry of backup" in output, output[-3000:]
        if _exists(clusters["backup"], remote):
            assert _count(clusters["backup"], remote) == 0, "records written with ids the target may not hold"
        trusted = write_config(tmp_path / "mm2.properties", clusters,
                               lines + f"backup.schema.registry.ssl.ca.location = {cert}\n")
        with running_mirrorspark(trusted, tmp_path / "state"):
            wait_for_count(clusters["backup"], remote, 60, timeout=180)
        target_registry = SchemaRegistryClient({"url": secure, "ssl.ca.location": str(cert)})
        assert _read_all(clusters["backup"], remote, AvroDeserializer(target_registry)) == \
            {seq: {"id": seq} for seq in range(60)}
    finally:
        registry.stop(folder)


def _exists(bootstrap: str, topic: str) -> bool:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"exists-{time.time_ns()}"})
    try:
        return topic in consumer.list_topics(timeout=10).topics
    finally:
        consumer.close()
