"""Schemas moving with the data (issue 49, ADR 0028): what rewriting each record's schema id costs, and
whether a consumer on the target can read what was copied, against real MirrorMaker 2 in the same run.

Two local brokers and two schema registries (Apicurio Registry, one per cluster, as `mirrorspark local up
--schema-registry` starts them). The target registry already holds other schemas, so its ids and the
source's collide, as they do between two registries that grew apart. The same Avro records (Confluent's
serializer, a sequence number in each) are produced into one topic per run; each run copies its topic
from a fresh process:

- MM2 copies the bytes: ids point into the source registry;
- mirrorspark without schema sync: the same copy, the reference for the cost;
- mirrorspark with schema sync: subjects copied to the target registry, every id rewritten in the sink.

A throwaway copy warms the fresh brokers first; then MM2, then the mirrorspark runs alternating which
goes first over ``--rounds`` (the cost is the ratio of their medians). Per run: seconds from process start to
the last record on the target, records/s over the second half of the copy, CPU seconds per million records
(the replicator's process tree); then every copied record is read back with Confluent's Avro deserializer
and the target registry alone, and counted as read when it gives back what was produced.

    .venv/bin/python bench/schema_rewrite.py [--records 300000] [--body 600] [--partitions 6] [--rounds 3]

Prints a table and writes bench/results/schema_rewrite.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mm2_vs_mirrorspark import ROOT, create, end_offsets, fresh_clusters, launch, machine, stop, tree_cpu, wait_for_copy

from mirrorspark.local import registry
from mirrorspark.local.cluster import free_port, java_executable

ORDER = ('{"type":"record","name":"Order","namespace":"bench","fields":[{"name":"id","type":"long"},'
         '{"name":"body","type":"string"}]}')
RESULT = ROOT / "bench" / "results" / "schema_rewrite.json"


def fill(bootstrap: str, topics: list[str], serializer: AvroSerializer, records: int, body: str,
         partitions: int) -> None:
    """The same records into every topic: a sequence number in the key, the header and the value."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 524288,
                         "enable.idempotence": True})
    for topic in topics:
        for seq in range(records):
            value = serializer({"id": seq, "body": body}, SerializationContext(topic, MessageField.VALUE))
            while True:
                try:
                    producer.produce(topic, key=str(seq).encode(), value=value, partition=seq % partitions,
                                     headers=[("seq", str(seq).encode())])
                    break
                except BufferError:
                    producer.poll(0.1)
        assert producer.flush(120) == 0, f"records of {topic} not acknowledged"


def readable(bootstrap: str, topic: str, target_registry: SchemaRegistryClient, records: int, body: str) -> dict:
    """Every record of ``topic`` read with the target registry alone: how many give back what was produced,
    how many fail to deserialize, how many deserialize to something else."""
    deserializer = AvroDeserializer(target_registry)
    ends = end_offsets(bootstrap, topic)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-read-{time.time_ns()}",
                         "enable.auto.commit": False})
    read = failed = other = 0
    seen: set[int] = set()
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        left = sum(ends.values())
        deadline = time.monotonic() + 600
        while left > 0 and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 1.0):
                if msg.error() is not None:
                    continue
                left -= 1
                seq = int(dict(msg.headers())["seq"])
                try:
                    value = deserializer(msg.value(), SerializationContext(topic, MessageField.VALUE))
                except Exception:  # noqa: BLE001 - an id the target registry lacks, or bytes another schema cannot read
                    failed += 1
                    continue
                if value == {"id": seq, "body": body} and seq not in seen:
                    read += 1
                    seen.add(seq)
                else:
                    other += 1
    finally:
        consumer.close()
    return {"records": records, "read": read, "not_deserialized": failed, "read_as_something_else": other}


def copy(tool: str, topic: str, extra: list[str], args, clusters: dict[str, str], work: Path) -> dict:
    """One fresh process copying ``topic``; its timings and CPU."""
    started = time.monotonic()
    proc = launch(tool, work / f"{tool}-{topic}", clusters, topic, args.cores, extra=extra)
    cpu = {"seconds": 0.0}

    def failed() -> str | None:
        cpu["seconds"] = max(cpu["seconds"], tree_cpu(proc.pid))
        return None if proc.poll() is None else f"{tool} exited ({proc.returncode}); see {work}/{tool}-{topic}"
    try:
        done = wait_for_copy(clusters["dst"], f"src.{topic}", args.records, 900, started, failed,
                             cpu=lambda: tree_cpu(proc.pid))
    finally:
        stop(proc)
    return {"seconds_to_last_record": round(done.done - started, 1),
            "second_half_records_per_second": done.second_half_rate,
            "cpu_seconds_per_million": round((done.cpu_seconds or 0.0) * 1e6 / args.records, 2)}


def table(result: dict) -> list[str]:
    """The runs side by side: the copy's cost and what the target's consumer reads."""
    rows = ["| run | seconds to the last record | records/s (second half) | CPU s per million records | "
            "read with the target's registry |", "|---|---:|---:|---:|---:|"]
    for run in result["runs"]:
        r = run["readable"]
        rows.append(f"| {run['name']} | {run['seconds_to_last_record']:.1f} | "
                    f"{run['second_half_records_per_second']:,} | {run['cpu_seconds_per_million']:.2f} | "
                    f"{r['read']:,} of {r['records']:,} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--body", type=int, default=600, help="characters of each record's string field")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "bench-schemas")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    local, clusters = fresh_clusters(args.work)
    folders = {name: args.work / f"registry-{name}" for name in ("src", "dst")}
    try:
        urls = {name: registry.url(registry.ensure(folder, java=java_executable(), port=free_port()))
                for name, folder in folders.items()}
        source_registry = SchemaRegistryClient({"url": urls["src"]})
        target_registry = SchemaRegistryClient({"url": urls["dst"]})
        for n, other in enumerate(('"string"', '"long"', '"bytes"')):  # the target's ids 1-3 are other schemas
            target_registry.register_schema(f"unrelated-{n}-value", Schema(other, "AVRO"))
        body = "x" * args.body
        # A throwaway copy first: fresh brokers run their produce and fetch paths in the interpreter until
        # the JIT compiled them, and the first replicator measured would pay for it (ADR 0018).
        runs = [("warm-up (not measured)", "mirrorspark", "avro-warmup", []),
                ("MM2 (bytes copied)", "mm2", "avro-mm2", [])]
        schema_lines = [f"src.schema.registry.url = {urls['src']}", f"dst.schema.registry.url = {urls['dst']}",
                        "mirrorspark.schemas.sync.enabled = true"]
        for n in range(args.rounds):
            pair = [("mirrorspark without schema sync", "mirrorspark", f"avro-plain-{n}", []),
                    ("mirrorspark, schemas synced and ids rewritten", "mirrorspark", f"avro-ids-{n}", schema_lines)]
            runs += pair if n % 2 == 0 else pair[::-1]
        for _, _, topic, _ in runs:
            create(clusters["src"], topic, args.partitions)
        print(f"filling {len(runs)} topics with {args.records:,} Avro records each", flush=True)
        fill(clusters["src"], [topic for _, _, topic, _ in runs],
             AvroSerializer(source_registry, ORDER, conf={"auto.register.schemas": True}), args.records, body,
             args.partitions)
        measured = []
        for name, tool, topic, extra in runs:
            print(f"{name}: copying {topic}", flush=True)
            figures = copy(tool, topic, extra, args, clusters, args.work)
            if name.startswith("warm-up"):
                continue
            figures["readable"] = readable(clusters["dst"], f"src.{topic}", target_registry, args.records, body)
            measured.append({"name": name, "topic": topic, **figures})
            print(f"  {figures}", flush=True)
    finally:
        for folder in folders.values():
            registry.stop(folder)
        local.down(purge=True)
    plain = [r for r in measured if r["name"].endswith("without schema sync")]
    rewritten = [r for r in measured if r["name"].endswith("rewritten")]

    def middle(rows: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in rows)
    result = {"machine": machine(),
              "settings": {"records": args.records, "body": args.body, "partitions": args.partitions,
                           "rounds": args.rounds, "cores": args.cores},
              "runs": measured,
              "rewrite_over_plain": {  # medians over the rounds
                  "records_per_second": round(middle(rewritten, "second_half_records_per_second")
                                              / middle(plain, "second_half_records_per_second"), 3),
                  "cpu_seconds_per_million": round(middle(rewritten, "cpu_seconds_per_million")
                                                   / middle(plain, "cpu_seconds_per_million"), 3)}}
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(table(result)))
    print(f"rewrite / plain: {result['rewrite_over_plain']}")


if __name__ == "__main__":
    main()
