"""p50/p99 latency of mirrorspark's real-time mode per real-time batch duration: the evidence for the
default of ``mirrorspark.realtime.batch.seconds``.

Records pause briefly at each real-time batch boundary (Spark records the batch's progress, mirrorspark
its offset pairs), so a shorter batch pauses more often and a longer one replays more after a crash.
Per duration, on the same local brokers: a fresh topic, a fresh mirrorspark process in real-time mode
(``local[cores]``: as many long-running tasks, each reading a group of the partitions), one warm-up
record copied, then latency p50/p99/p99.9/max under ``--rate`` records/s for ``--seconds`` (the
default covers at least two boundaries of a 60 s batch).

    .venv/bin/python bench/realtime_batches.py [--durations 5,15,30,60]

Prints a table and writes bench/results/realtime_batches.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from confluent_kafka import Producer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mm2_vs_mirrorspark import (
    PRODUCER,
    create,
    fresh_clusters,
    launch,
    machine,
    realtime_lines,
    shown,
    steady_latency,
    stop,
    wait_for_copy,
)

ROOT = Path(__file__).resolve().parents[1]


def run_duration(seconds: float, args, clusters: dict[str, str], work: Path) -> dict:
    """mirrorspark in real-time mode with batches of ``seconds`` over a fresh topic: its steady latency."""
    topic = f"steady-rt-{seconds:g}"
    create(clusters["src"], topic, args.partitions)
    # One record waiting on the source: once it is on the target, the flow runs and its remote topic exists.
    producer = Producer({"bootstrap.servers": clusters["src"]})
    producer.produce(topic, b"warm-up", partition=0)
    producer.flush(30)
    started = time.monotonic()
    proc = launch("mirrorspark", work / f"rt-{seconds:g}", clusters, topic, args.cores, realtime_lines(seconds),
                  master=f"local[{args.cores}]")
    try:
        copy = wait_for_copy(clusters["dst"], f"src.{topic}", 1, 180, started,
                             lambda: None if proc.poll() is None else
                             f"mirrorspark exited with {proc.returncode}; see the log in {work / f'rt-{seconds:g}'}")
        latency = steady_latency(clusters, topic, f"src.{topic}", args.rate, args.seconds, args.size,
                                 args.partitions, tail=True)
    finally:
        stop(proc)
    return {"startup_seconds": round(copy.first - started, 2), **latency}


def table(result: dict) -> list[str]:
    """One row per real-time batch duration, a failed one with its error."""
    lines = ["| real-time batch, s | p50, ms | p99, ms | p99.9, ms | max, ms | records seen / sent |",
             "|---:|---:|---:|---:|---:|---:|"]
    for duration, m in result["durations"].items():
        if "error" in m:
            lines.append(f"| {duration} | failed: {m['error']} | | | | |")
        else:
            lines.append(f"| {duration} | {m['p50_ms']:,} | {m['p99_ms']:,} | {m['p99_9_ms']:,} | {m['max_ms']:,} | "
                         f"{m['records_seen']:,} / {m['records_sent']:,} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--durations", default="5,15,30,60",
                        help="mirrorspark.realtime.batch.seconds values (comma-separated, at least 5)")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=150, help="steady produce time per duration")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "realtime_batches.json")
    args = parser.parse_args()

    work = ROOT / "state" / "bench-realtime"
    local, clusters = fresh_clusters(work)
    result: dict = {"machine": machine(),
                    "settings": {**vars(args), "out": shown(args.out), "producer": PRODUCER}, "durations": {}}
    try:
        for seconds in [float(x) for x in args.durations.split(",") if x.strip()]:
            try:
                measured = run_duration(seconds, args, clusters, work)
            except Exception as exc:  # noqa: BLE001 - one duration failing must not hide the others' figures
                measured = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:400]}
            result["durations"][f"{seconds:g}"] = measured
            print(json.dumps({f"{seconds:g} s": measured}), flush=True)
    finally:
        local.down(purge=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print("\n".join(table(result)))
    print(f"written to {args.out}")


if __name__ == "__main__":
    sys.exit(main())
