"""Writer choice for the data plane (docs/adr/0001-writer.md): throughput of

  (a) Spark's Kafka sink + the SourceTimestampInterceptor (records stay on the JVM), and
  (b) mapInArrow with one confluent-kafka producer per task (per-record Python, exact offsets),

against a read-only baseline (Spark reads the same records into a noop sink), on the same real
local brokers, the same records and the same producer settings. Prints a table and writes JSON.

    .venv/bin/python bench/writer_bench.py [--records 200000] [--size 512] [--partitions 6]
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from confluent_kafka import Producer

from mirrorspark.control.admin import admin_client
from mirrorspark.local import ClusterSpec, LocalClusters
from mirrorspark.pipeline.record_columns import INTERCEPTOR_CLASS, to_target_rows
from mirrorspark.pipeline.spark_session import build_session

ROOT = Path(__file__).resolve().parents[1]
BENCH_JVM = ["-Xms256m", "-Xmx512m", "-XX:+UseParallelGC", "-XX:-UsePerfData"]
PRODUCER = {"acks": "all", "linger.ms": "10", "batch.size": "262144", "compression.type": "none"}


def create(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import NewTopic
    admin = admin_client({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)


def count(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench"})
    md = c.list_topics(topic, timeout=10).topics[topic]
    n = sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in md.partitions)
    c.close()
    return n


def fill(bootstrap: str, topic: str, records: int, size: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "queue.buffering.max.messages": 1_000_000})
    payload = b"x" * size
    now = int(time.time() * 1000)
    for i in range(records):
        while True:
            try:
                p.produce(topic, key=str(i).encode(), value=payload, partition=i % partitions,
                          timestamp=now - records + i, headers=[("h", b"v")])
                break
            except BufferError:
                p.poll(0.05)
    p.flush(120)


def read(spark, bootstrap: str, topic: str):
    return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
            .option("startingOffsets", "earliest").option("endingOffsets", "latest")
            .option("includeHeaders", "true").load())


def writer_a(spark, src: str, dst: str, topic: str, remote: str) -> None:
    writer = to_target_rows(read(spark, src, topic), {topic: remote}).write.format("kafka")
    options = {"kafka.bootstrap.servers": dst, "kafka.interceptor.classes": INTERCEPTOR_CLASS,
               **{f"kafka.{k}": v for k, v in PRODUCER.items()}}
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save()


def writer_b(spark, src: str, dst: str, topic: str, remote: str) -> list:
    """Per-record Python produce with delivery callbacks; returns per-partition offset ranges."""

    def produce_partition(batches):
        import pyarrow as pa
        from confluent_kafka import Producer as P
        producer = P({"bootstrap.servers": dst, "enable.idempotence": True,
                      **{k: v for k, v in PRODUCER.items()}})
        ranges: dict[tuple[int, int], list[int]] = {}

        def delivered(err, msg):
            if err is not None:
                raise RuntimeError(str(err))
            r = ranges.setdefault((msg.partition(), 0), [msg.offset(), msg.offset(), 0])
            r[0] = min(r[0], msg.offset())
            r[1] = max(r[1], msg.offset())
            r[2] += 1

        for batch in batches:
            cols = batch.to_pydict()
            for key, value, part, ts, headers in zip(cols["key"], cols["value"], cols["partition"],
                                                     cols["timestamp"], cols["headers"]):
                hdrs = [(h["key"], h["value"]) for h in headers] if headers else None
                while True:
                    try:
                        producer.produce(remote, value=value, key=key, partition=part,
                                         timestamp=int(ts.timestamp() * 1000), headers=hdrs,
                                         on_delivery=delivered)
                        break
                    except BufferError:
                        producer.poll(0.01)
                producer.poll(0)
        producer.flush()
        rows = [(p, lo, hi, n) for (p, _), (lo, hi, n) in ranges.items()]
        yield pa.RecordBatch.from_pylist(
            [{"partition": p, "first": lo, "last": hi, "count": n} for p, lo, hi, n in rows],
            schema=pa.schema([("partition", pa.int32()), ("first", pa.int64()), ("last", pa.int64()),
                              ("count", pa.int64())]))

    df = read(spark, src, topic).select("key", "value", "partition", "timestamp", "headers")
    return df.mapInArrow(produce_partition, "partition int, first long, last long, count long").collect()


def baseline(spark, src: str, topic: str) -> None:
    read(spark, src, topic).write.format("noop").mode("overwrite").save()


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    local = LocalClusters(ROOT / "state" / "bench", jvm_opts=BENCH_JVM)
    started = {c.name: c.bootstrap for c in local.up([ClusterSpec("bsrc"), ClusterSpec("bdst")])}
    src, dst = started["bsrc"], started["bdst"]
    topic = f"bench-{int(time.time())}"
    try:
        create(src, topic, args.partitions)
        fill(src, topic, args.records, args.size, args.partitions)
        spark = build_session({"spark.master": "local[2]"})
        results: dict[str, list[float]] = {"read-only baseline": [], "(a) Kafka sink + interceptor": [],
                                           "(b) mapInArrow + confluent-kafka": []}
        baseline(spark, src, topic)  # warm-up: JIT, consumer cache, metadata
        for rnd in range(args.rounds):
            results["read-only baseline"].append(timed(lambda: baseline(spark, src, topic)))
            for label, fn in (("(a) Kafka sink + interceptor", writer_a), ("(b) mapInArrow + confluent-kafka", writer_b)):
                remote = f"{topic}.{label[1]}.{rnd}"
                create(dst, remote, args.partitions)
                results[label].append(timed(lambda: fn(spark, src, dst, topic, remote)))
                assert count(dst, remote) == args.records, f"{label}: wrong count on {remote}"
        spark.stop()
    finally:
        local.down(purge=True)

    mb = args.records * args.size / 1e6
    table = []
    for label, secs in results.items():
        best = min(secs)
        table.append({"writer": label, "seconds": [round(s, 2) for s in secs],
                      "records_per_s": round(args.records / best), "mb_per_s": round(mb / best, 1)})
    print(f"\n{args.records} records x {args.size} B in {args.partitions} partitions, best of {args.rounds}, "
          f"local[2], {platform.node()} ({platform.machine()}, 2 cores)")
    print(f"{'writer':36} {'records/s':>10} {'MB/s':>7}  runs (s)")
    for row in table:
        print(f"{row['writer']:36} {row['records_per_s']:>10} {row['mb_per_s']:>7}  {row['seconds']}")
    out = ROOT / "bench" / "results" / "writer_bench.json"
    out.write_text(json.dumps({"args": vars(args), "producer": PRODUCER, "results": table}, indent=2))
    print(f"written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
