"""What the Spark micro-batch engine costs a Kafka->Kafka copy, and what a design without
``foreachBatch`` would gain: the evidence behind docs/adr/0003-data-plane-performance.md.

One SparkSession (``local[N]``), two real local brokers, mirrorspark's own source and sink
options for the benchmark's flow (``query_options.source_options``/``sink_options``), the same
projection as mirrorspark's pipeline (DefaultReplicationPolicy rename, private timestamp/offset headers,
the interceptor that pairs offsets and feeds FlowStats), the same producer settings as bench/mm2_vs_mirrorspark.py.
Modes, each on fresh topics and a fresh checkpoint:

- ``foreachbatch``: what mirrorspark runs today (Python called once per micro-batch, batch write);
- ``microbatch``: Spark's Kafka sink directly (``writeStream.format("kafka")``), default trigger;
- ``realtime``: the same sink with Spark's real-time trigger (long-running tasks, records
  forwarded as they arrive; needs a task slot per source partition).

Per mode: backlog copy of ``--records`` records and latency p50/p99 under ``--rate`` records/s.

    .venv/bin/python bench/trigger_modes.py [--records 300000] [--modes foreachbatch,microbatch,realtime]
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interceptor_path import bench_jar, interceptor_sink_options, target_headers
from mm2_vs_mirrorspark import (
    BROKER_JVM,
    PRODUCER,
    create,
    percentile,
    producer_perf,
    properties,
    shown,
    steady_latency,
    wait_for_copy,
)

from mirrorspark.config.loader import load_config
from mirrorspark.config.model import FlowConfig
from mirrorspark.local import ClusterSpec, LocalClusters
from mirrorspark.pipeline.query_options import sink_options, source_options
from mirrorspark.pipeline.spark_session import build_session

ROOT = Path(__file__).resolve().parents[1]


def projection(df, prefix: str):
    """mirrorspark's record projection with the rename written as an expression (no topic map)."""
    from pyspark.sql import functions as F

    return df.select(F.concat(F.lit(prefix), F.col("topic")).alias("topic"), "partition", "key", "value",
                     target_headers().alias("headers"))


def bench_flow(clusters: dict[str, str]) -> FlowConfig:
    """The flow mm2_vs_mirrorspark.py gives mirrorspark, so source/sink options come from the product."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mm2.properties"
        path.write_text(properties(clusters, "unused", 2))
        return next(f for f in load_config(path).enabled_flows if f.name == "src->dst")


def start(spark, mode: str, flow: FlowConfig, topics: list[str], checkpoint: Path):
    reader = spark.readStream.format("kafka").options(**source_options(flow, "|".join(map(re.escape, topics))))
    # The built-in Kafka sink (the only one real-time mode allows) with the interceptor reporting.
    sink = interceptor_sink_options({**sink_options(flow, report_offsets=True), "flow": f"bench-{mode}"})
    rows = projection(reader.load(), f"{flow.source.alias}.")
    jvm = spark._jvm.io.mirrorspark.kafka
    if mode == "foreachbatch":
        def write(df, _batch_id):
            df.write.format("kafka").options(**sink).save()
            jvm.OffsetRuns.drain(f"bench-{mode}")
            jvm.FlowStats.drain(f"bench-{mode}")
        writer = rows.writeStream.foreachBatch(write)
    else:
        writer = rows.writeStream.format("kafka").options(**sink)
        if mode == "realtime":
            writer = writer.outputMode("update").trigger(realTime="30 seconds")
    return writer.option("checkpointLocation", str(checkpoint)).queryName(f"bench-{mode}").start()


def batch_figures(query) -> dict:
    """Median records and Spark phase durations (ms) of the recent data batches (steady phase)."""
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0][-40:]
    if not batches:
        return {}
    figures = {"batch_records_median": percentile([p["numInputRows"] for p in batches], 0.5)}
    for phase in ("addBatch", "triggerExecution"):
        figures[f"{phase}_ms_median"] = percentile([p["durationMs"].get(phase, 0) for p in batches], 0.5)
    return figures


def run_mode(spark, mode: str, args, clusters: dict[str, str], work: Path) -> dict:
    backlog, steady = f"backlog-{mode}", f"steady-{mode}"
    for topic in (backlog, steady):
        create(clusters["src"], topic, args.partitions)
        create(clusters["dst"], f"src.{topic}", args.partitions)  # pre-created, as the control plane would
    producer_perf(clusters["src"], backlog, args.records, args.size, work / f"fill-{mode}.log")
    started = time.monotonic()
    query = start(spark, mode, bench_flow(clusters), [backlog, steady], work / f"ckpt-{mode}")
    try:
        copy = wait_for_copy(clusters["dst"], f"src.{backlog}", args.records, 600, started,
                             lambda: None if query.exception() is None else f"{mode}: {query.exception()}")
        latency = steady_latency(clusters, steady, f"src.{steady}", args.rate, args.steady_seconds, args.size,
                                 args.partitions)
        latency.update(batch_figures(query))
    finally:
        query.stop()
    seconds = max(copy.done - copy.first, 1e-3)
    return {"startup_seconds": round(copy.first - started, 2), "backlog_copy_seconds": round(seconds, 2),
            "backlog_records_per_second": round(args.records / seconds), **latency}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--steady-seconds", type=float, default=30)
    parser.add_argument("--slots", type=int, default=8,
                        help="local[N] task slots (real-time mode needs one per partition)")
    parser.add_argument("--modes", default="foreachbatch,microbatch,realtime")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "trigger_modes.json")
    args = parser.parse_args()

    work = ROOT / "state" / "bench-trigger"
    local = LocalClusters(work / "clusters", jvm_opts=BROKER_JVM)
    local.down(purge=True)
    shutil.rmtree(work, ignore_errors=True)
    clusters = {c.name: c.bootstrap for c in local.up([ClusterSpec("src"), ClusterSpec("dst")])}
    spark = build_session({"spark.master": f"local[{args.slots}]", "spark.jars": str(bench_jar())})
    result: dict = {"settings": {**vars(args), "out": shown(args.out), "producer": PRODUCER}}
    try:
        for mode in args.modes.split(","):
            try:
                result[mode] = run_mode(spark, mode, args, clusters, work)
            except Exception as exc:  # noqa: BLE001 - one mode failing must not hide the others' figures
                result[mode] = {"error": str(exc).splitlines()[0][:400]}
            print(json.dumps({mode: result[mode]}), flush=True)
    finally:
        spark.stop()
        local.down(purge=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"written to {args.out}")


if __name__ == "__main__":
    sys.exit(main())
