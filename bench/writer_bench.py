"""Writer choice for Spark clusters (docs/adr/0004-cluster-writer.md): how exact (source, target)
offset pairs reach the driver, measured on the same real local brokers and records.

  today  Spark's Kafka sink + SourceTimestampInterceptor; runs drained from a JVM-static store,
         which only works when the tasks ran in the driver's JVM (local mode);
  (a)    mirrorspark's DataSource V2 sink: per-send callbacks, runs in each task's commit message;
  (b)    Spark's Kafka sink + the interceptor, each task publishing its executor's runs to an
         internal topic at completion, the driver consuming them (bench/jvm/RunsToTopic.java);

against a read-only baseline (Spark reads the same records into the noop sink). Two shapes: one
large write (throughput) and many small writes (the per-batch cost a micro-batch pays, which is
what latency sees). Every candidate must bring back runs covering every record, or the bench fails.

    .venv/bin/python bench/writer_bench.py [--records 800000] [--size 512] [--partitions 6]
        [--small-batches 30] [--small-records 1200] [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from interceptor_path import bench_jar, interceptor_rows, interceptor_sink_options

from mirrorspark.control.admin import admin_client
from mirrorspark.local import ClusterSpec, LocalClusters
from mirrorspark.pipeline.record_columns import SINK_FORMAT, remote_topics_option
from mirrorspark.pipeline.spark_session import build_session
from mirrorspark.sink_report import parse_report

ROOT = Path(__file__).resolve().parents[1]
BENCH_JVM = ["-Xms256m", "-Xmx512m", "-XX:+UseParallelGC", "-XX:-UsePerfData"]
PRODUCER = {"acks": "all", "linger.ms": "10", "batch.size": "262144", "compression.type": "none",
            "enable.idempotence": "true"}
RUNS_TOPIC = "bench-offset-runs"
CANDIDATES = ("today: Kafka sink + interceptor, in-JVM store (local mode only)",
              "(a) mirrorspark sink, runs in commit messages",
              "(b) Kafka sink + interceptor, runs via an internal topic")


def create(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import NewTopic
    admin = admin_client({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)


def count(bootstrap: str, topic: str) -> int:
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


class Writers:
    """The candidates over one SparkSession; each returns the runs' total record count."""

    def __init__(self, spark, src: str, dst: str, topic: str, partitions: int) -> None:
        self.spark, self.src, self.dst, self.topic, self.partitions = spark, src, dst, topic, partitions
        self.jvm = spark._jvm.io.mirrorspark.kafka
        self.runs = Consumer({"bootstrap.servers": dst, "group.id": "bench-runs", "enable.auto.commit": False})
        self.runs.assign([TopicPartition(RUNS_TOPIC, 0, 0)])

    def read(self, start: int | None = None, end: int | None = None):
        reader = (self.spark.read.format("kafka").option("kafka.bootstrap.servers", self.src)
                  .option("subscribe", self.topic).option("includeHeaders", "true"))
        if start is None:
            return reader.option("startingOffsets", "earliest").option("endingOffsets", "latest").load()
        def offsets(o: int) -> str:
            return json.dumps({self.topic: {str(p): o for p in range(self.partitions)}})

        return reader.option("startingOffsets", offsets(start)).option("endingOffsets", offsets(end)).load()

    def options(self, flow: str) -> dict[str, str]:
        return {"flow": flow, "kafka.bootstrap.servers": self.dst, **{f"kafka.{k}": v for k, v in PRODUCER.items()}}

    def today(self, df, remote: str) -> int:
        flow = "today"  # fixed names: Spark pools producers by settings, one per distinct flow
        interceptor_rows(df, {self.topic: remote}).write.format("kafka").options(
            **interceptor_sink_options(self.options(flow))).save()
        return runs_total(self.jvm.OffsetRuns.drain(flow))

    def sink(self, df, remote: str) -> int:
        flow = "a"
        df.write.format(SINK_FORMAT).mode("append").options(
            **self.options(flow), remoteTopics=remote_topics_option({self.topic: remote})).save()
        return runs_total(self.jvm.OffsetRuns.drain(flow))

    def topic_runs(self, df, remote: str) -> int:
        options = interceptor_sink_options(self.options("b"))
        options["kafka.interceptor.classes"] += ",io.mirrorspark.bench.RunsToTopic"
        options.update({"kafka.mirrorspark.bench.runs.bootstrap": self.dst,
                        "kafka.mirrorspark.bench.runs.topic": RUNS_TOPIC})
        interceptor_rows(df, {self.topic: remote}).write.format("kafka").options(**options).save()
        tasks = df.rdd.getNumPartitions()
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while len(seen) < tasks and time.monotonic() < deadline:  # the driver waits for every task's runs
            msg = self.runs.poll(0.2)  # writes are sequential: what follows the last write is this one's
            if msg is not None and not msg.error():
                seen.append(msg.value().decode())
        assert len(seen) == tasks, f"(b): runs of {tasks - len(seen)} task(s) never arrived"
        return sum(runs_total(text) for text in seen)


def runs_total(drained: str) -> int:
    return sum(row.run.count for row in parse_report(runs=drained).runs)


def timed(fn) -> tuple[float, int]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=800_000)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--small-batches", type=int, default=30)
    ap.add_argument("--small-records", type=int, default=1200, help="records per small write (all partitions)")
    args = ap.parse_args()

    jar = bench_jar()
    local = LocalClusters(ROOT / "state" / "bench", jvm_opts=BENCH_JVM)
    started = {c.name: c.bootstrap for c in local.up([ClusterSpec("bsrc"), ClusterSpec("bdst")])}
    src, dst = started["bsrc"], started["bdst"]
    topic = f"bench-{int(time.time())}"
    large: dict[str, list[float]] = {"read-only baseline": [], **{c: [] for c in CANDIDATES}}
    small: dict[str, list[float]] = {c: [] for c in CANDIDATES}
    try:
        create(src, topic, args.partitions)
        create(dst, RUNS_TOPIC, 1)
        fill(src, topic, args.records, args.size, args.partitions)
        # Every batch read has a group id of its own, so the consumer cache (1024 in the product, for
        # long-running queries) would keep hundreds of idle consumers and their buffers here.
        spark = build_session({"spark.master": "local[2]", "spark.jars": str(jar),
                               "spark.kafka.consumer.cache.capacity": "16"})
        w = Writers(spark, src, dst, topic, args.partitions)
        fns = dict(zip(CANDIDATES, (w.today, w.sink, w.topic_runs), strict=True))
        w.read().write.format("noop").mode("overwrite").save()  # warm-up: JIT, consumer cache, metadata
        for rnd in range(args.rounds):
            large["read-only baseline"].append(timed(lambda: w.read().write.format("noop").mode("overwrite").save())[0])
            for index, (label, fn) in enumerate(fns.items()):
                remote = f"{topic}.{index}.{rnd}"
                create(dst, remote, args.partitions)
                print(f"round {rnd}: {label} ...", flush=True)
                seconds, paired = timed(lambda fn=fn, remote=remote: fn(w.read(), remote))
                written = count(dst, remote)
                assert paired == args.records == written, f"{label}: {paired} paired, {written} written"
                large[label].append(seconds)
        per_partition = args.small_records // args.partitions
        for index, (label, fn) in enumerate(fns.items()):
            remote = f"{topic}.small.{index}"
            create(dst, remote, args.partitions)
            print(f"small writes: {label} ...", flush=True)
            for batch in range(args.small_batches):
                df = w.read(batch * per_partition, (batch + 1) * per_partition)
                seconds, paired = timed(lambda fn=fn, df=df, remote=remote: fn(df, remote))
                assert paired == per_partition * args.partitions, f"{label}: small write paired {paired}"
                small[label].append(seconds)
        spark.stop()
    finally:
        local.down(purge=True)

    mb = args.records * args.size / 1e6
    table = []
    for label, secs in large.items():
        best = min(secs)
        row = {"writer": label, "seconds": [round(s, 2) for s in secs],
               "records_per_s": round(args.records / best), "mb_per_s": round(mb / best, 1)}
        if label in small:
            steady = small[label][3:]  # first writes pay producer creation and metadata
            row["small_write_ms_median"] = round(statistics.median(steady) * 1000, 1)
            row["small_write_ms_p90"] = round(statistics.quantiles(steady, n=10)[-1] * 1000, 1)
        table.append(row)
    print(f"\n{args.records} records x {args.size} B in {args.partitions} partitions, best of {args.rounds}; "
          f"{args.small_batches} small writes of {args.small_records} records; local[2], {platform.node()}")
    print(f"{'writer':66} {'records/s':>10} {'MB/s':>7} {'small p50 ms':>13} {'p90 ms':>8}")
    for row in table:
        print(f"{row['writer']:66} {row['records_per_s']:>10} {row['mb_per_s']:>7} "
              f"{row.get('small_write_ms_median', ''):>13} {row.get('small_write_ms_p90', ''):>8}")
    out = ROOT / "bench" / "results" / "writer_bench.json"
    out.write_text(json.dumps({"args": vars(args), "producer": PRODUCER, "results": table}, indent=2))
    print(f"written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
