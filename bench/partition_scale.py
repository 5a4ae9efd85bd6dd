"""Many quiet partitions, side by side: real MirrorMaker 2 and mirrorspark on the same local brokers,
one after the other (MM2 ``tasks.max`` = Spark ``local[N]`` = N cores).

Per partition count P (topics of 10 partitions, 20 records of 100 B in each partition):
- full sync: process start -> the target holds all P x 20 records (the median of ``--sync-rounds``
  runs over fresh topics, the tools' order turning each round);
- CPU while idle: user + system seconds of the replicator's process tree over ``--idle-seconds``
  after the sync (nothing produced), from ``--settle-seconds`` after the last record landed: by then
  every tool has committed the batch that copied it (a real-time batch ends up to its length after
  its last record, and recording a batch of thousands of partitions is no idle work);
- latency of a one-record-per-second topic among the quiet ones: p50/p99 of arrival time minus the
  source timestamp, over ``--pulse-seconds``;
- peak RSS of the process tree over the whole run.

At 10,000 partitions (1,000 topics) the remote topics are created on the target before each tool
starts, for every tool alike: MM2 asks for all new remote topics in one CreateTopics request, which a
KRaft controller refuses above 10,000 metadata records ("Excessively large number of partitions per
request"), and asks again with the same request at each refresh, so it never copies a record. The
full sync there is the copy alone.

    .venv/bin/python bench/partition_scale.py [--partitions 60,600,3000,10000] [--only mm2|mirrorspark|microbatch]

``mirrorspark`` is the default mode (``mirrorspark.trigger = auto``: real-time mode on ``local[N]``, N
long-running tasks as MM2's N tasks); ``microbatch`` is mirrorspark with ``mirrorspark.trigger = microbatch``.
Results written before real-time mode was the default have a ``realtime`` tool instead (the default was
micro-batches); the table names whichever the file holds.

Prints a table and writes bench/results/partition_scale.json (with the commit and the machine).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic, OffsetSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mm2_vs_mirrorspark import BROKER_JVM, RssSampler, launch, machine, percentile, shown, stop

from mirrorspark.config.keys import BY_NAME
from mirrorspark.control.admin import admin_client
from mirrorspark.local import ClusterSpec, LocalClusters

ROOT = Path(__file__).resolve().parents[1]
PER_TOPIC = 10
RECORDS_PER_PARTITION = 20
SIZE = 100
MICROBATCH = "microbatch"  # mirrorspark with mirrorspark.trigger = microbatch
TOOLS = ("mm2", "mirrorspark", MICROBATCH)
# The third tool of a results file and its name in the table (older files: real-time mode beside a
# micro-batch default).
THIRD = {MICROBATCH: "micro-batches", "realtime": "real-time"}
# The metadata records a KRaft controller takes in one request (a topic record and one per partition
# for a topic created): above it, the remote topics are created before each run (module doc).
CONTROLLER_RECORDS = 10_000


def _tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (from the parent ids in /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _cpu(stat: Path) -> float:
    """User + system CPU seconds in one /proc stat file (0 if it is gone)."""
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live descendants."""
    return sum(_cpu(Path(f"/proc/{p}/stat")) for p in _tree(pid))


def realtime_batch_seconds(extra: list[str]) -> float:
    """The real-time batch length the run uses: an ``--extra`` line's, else mirrorspark's default."""
    key = "mirrorspark.realtime.batch.seconds"
    for line in extra:
        name, _, value = line.partition("=")
        if name.strip() == key:
            return float(value)
    return float(BY_NAME[key].default)


def tree_threads(pid: int) -> dict[str, float]:
    """CPU seconds per (process, thread name) of the tree: where idle CPU goes."""
    out: dict[str, float] = {}
    for p in _tree(pid):
        try:
            exe = Path(f"/proc/{p}/comm").read_text().strip()
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                name = Path(f"/proc/{p}/task/{t}/comm").read_text().strip()
            except OSError:
                continue
            key = f"{exe}:{p} {name}"
            out[key] = out.get(key, 0.0) + _cpu(Path(f"/proc/{p}/task/{t}/stat"))
    return out


def target_total(admin, topics: list[str]) -> int:
    """Sum of the end offsets of ``topics`` on the target (missing topics count 0)."""
    listed = admin.list_topics(timeout=10).topics
    wanted = {TopicPartition(t, p): OffsetSpec.latest() for t in topics if t in listed
              for p in listed[t].partitions}
    if not wanted:
        return 0
    total = 0
    for future in admin.list_offsets(wanted, request_timeout=20).values():
        with contextlib.suppress(Exception):  # a partition just created: no leader yet, counted next round
            total += future.result().offset
    return total


def create(bootstrap: str, topics: list[str], pulse: str) -> None:
    """``topics`` of ``PER_TOPIC`` partitions and the one-partition ``pulse``, 100 topics a request."""
    admin = admin_client({"bootstrap.servers": bootstrap})
    wanted = [NewTopic(t, PER_TOPIC, 1) for t in topics] + [NewTopic(pulse, 1, 1)]
    for at in range(0, len(wanted), 100):  # a KRaft controller takes at most 10,000 records a request
        for f in admin.create_topics(wanted[at:at + 100], operation_timeout=60).values():
            f.result(120)


def fill(bootstrap: str, prefix: str, partitions: int) -> list[str]:
    topics = [f"{prefix}-{i:04d}" for i in range(partitions // PER_TOPIC)]
    create(bootstrap, topics, f"{prefix}-pulse")
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    payload = b"q" * SIZE
    for t in topics:
        for p in range(PER_TOPIC):
            for _ in range(RECORDS_PER_PARTITION):
                while True:
                    try:
                        producer.produce(t, payload, partition=p)
                        break
                    except BufferError:  # 10,000 partitions fill the client's queue: let it drain
                        producer.poll(0.5)
            producer.poll(0)
    producer.flush(120)
    return topics


def pulse_latency(clusters: dict[str, str], topic: str, remote: str, seconds: int) -> dict:
    """One record per second on ``topic``; a target consumer measures arrival - source timestamp."""
    latencies: list[float] = []
    consumer = Consumer({"bootstrap.servers": clusters["dst"], "group.id": f"pulse-{time.time_ns()}",
                         "auto.offset.reset": "latest", "enable.auto.commit": False, "fetch.wait.max.ms": 10})
    consumer.subscribe([remote])
    done = threading.Event()

    def consume() -> None:
        while not done.is_set():
            m = consumer.poll(0.1)  # not consume(n, timeout), which waits the whole timeout unless n arrive
            if m is not None and m.error() is None:
                latencies.append(time.time() * 1000 - m.timestamp()[1])

    deadline = time.monotonic() + 30
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    producer = Producer({"bootstrap.servers": clusters["src"], "linger.ms": 0, "acks": "all"})
    for _ in range(seconds):
        producer.produce(topic, b"p" * SIZE, timestamp=int(time.time() * 1000))
        producer.flush(10)
        time.sleep(1)
    time.sleep(15)  # the last records arrive
    done.set()
    reader.join(10)
    consumer.close()
    return {"sent": seconds, "seen": len(latencies), "p50_ms": round(percentile(latencies, 0.5), 1),
            "p99_ms": round(percentile(latencies, 0.99), 1)}


def drop(bootstrap: str, prefix: str, data: Path | None = None) -> None:
    """Deletes the topics named ``prefix``... and waits until they are gone: a broker that kept every
    tool's partitions of every size would hold 60,000 logs at 10,000 partitions, past its file limit.
    With ``data`` (the broker's log folder), also until their logs are removed from it: a deleted log
    stays open for the broker's ``file.delete.delay.ms`` (a minute), and the next tool's 10,000
    partitions beside the last one's took the broker past its 20,000 open files (the new partitions
    failed to open and never had a leader)."""
    drop_topics(bootstrap, prefix)
    deadline = time.monotonic() + 300
    while data is not None and any(entry.name.startswith(prefix) for entry in os.scandir(data)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"logs of {prefix}* still in {data} 300 s after their deletion")
        time.sleep(2)


def drop_topics(bootstrap: str, prefix: str) -> None:
    admin = admin_client({"bootstrap.servers": bootstrap})
    names = [t for t in admin.list_topics(timeout=30).topics if t.startswith(prefix)]
    if not names:
        return
    for future in admin.delete_topics(names, operation_timeout=120).values():
        with contextlib.suppress(Exception):  # already gone
            future.result(180)
    deadline = time.monotonic() + 180
    while any(t.startswith(prefix) for t in admin.list_topics(timeout=30).topics):
        if time.monotonic() > deadline:
            raise RuntimeError(f"topics {prefix}* still listed on {bootstrap} 180 s after their deletion")
        time.sleep(1)


def one_run(tool: str, partitions: int, clusters: dict[str, str], work: Path, args, sync_only: bool = False,
            number: int = 1, idle_only: bool = False) -> dict:
    """One replicator over fresh topics: the full sync, then (unless ``sync_only``) idle CPU, the
    one-per-second latency and peak RSS (``idle_only``: the full sync and idle CPU alone). Run ``number`` > 1
    has topics and a state folder of its own:
    MM2 would resume re-created topics of the same names from its stored offsets, mirrorspark from its state."""
    prefix = f"q{partitions}{tool[:2]}" + (f"r{number}" if number > 1 else "")
    home = work / (f"{tool}-{partitions}" + (f"-r{number}" if number > 1 else ""))
    topics = fill(clusters["src"], prefix, partitions)
    remote = [f"src.{t}" for t in topics]
    if partitions + len(remote) + 1 > CONTROLLER_RECORDS:
        # MM2 asks for every new remote topic in one request, which the controller refuses; it asks
        # again at each refresh and never copies. Made here for every tool alike (module doc).
        create(clusters["dst"], remote, f"src.{prefix}-pulse")
    expected = partitions * RECORDS_PER_PARTITION
    target = admin_client({"bootstrap.servers": clusters["dst"]})
    started = time.monotonic()
    extra = [*args.extra, *(["mirrorspark.trigger = microbatch"] if tool == MICROBATCH else [])]
    proc = launch("mm2" if tool == "mm2" else "mirrorspark", home, clusters, f"{prefix}-.*", args.cores, extra)
    sampler = RssSampler(proc.pid)
    sampler.start()
    shown_at = started
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{tool} exited with {proc.returncode}; see {home}")
            landed = target_total(target, remote)
            if landed >= expected:
                break
            if args.progress and time.monotonic() - shown_at >= 2:
                shown_at = time.monotonic()
                print(f"[{tool} {partitions}] {shown_at - started:5.1f} s: {landed:,} of {expected:,} on the target",
                      flush=True)
            if time.monotonic() - started > args.timeout:
                raise RuntimeError(f"{tool}: {partitions} partitions not synced within {args.timeout} s")
            time.sleep(0.5)
        sync = time.monotonic() - started
        print(f"[{tool} {partitions}] full sync in {sync:.1f} s", flush=True)
        if sync_only and not idle_only:
            return {"full_sync_seconds": round(sync, 1)}
        time.sleep(args.settle_seconds)  # the last batch commits, checkpoints are written once
        cpu0 = tree_cpu_seconds(proc.pid)
        threads0 = tree_threads(proc.pid) if args.threads else {}
        time.sleep(args.idle_seconds)
        idle = (tree_cpu_seconds(proc.pid) - cpu0) * 60 / args.idle_seconds
        print(f"[{tool} {partitions}] idle CPU {idle:.1f} s per 60 s", flush=True)
        if args.threads:
            spent = {k: v - threads0.get(k, 0.0) for k, v in tree_threads(proc.pid).items()}
            for name, cpu in sorted(spent.items(), key=lambda kv: -kv[1])[: args.threads]:
                print(f"[{tool} {partitions}]   {cpu:6.2f} s  {name}", flush=True)
        if idle_only:
            return {"full_sync_seconds": round(sync, 1), "idle_cpu_seconds_per_60s": round(idle, 2)}
        pulse = pulse_latency(clusters, f"{prefix}-pulse", f"src.{prefix}-pulse", args.pulse_seconds)
        print(f"[{tool} {partitions}] pulse {pulse}", flush=True)
    finally:
        peak = sampler.stop()
        stop(proc)
        # The logs' removal is waited for where two tools' partitions would not fit the broker's files.
        wait = partitions > CONTROLLER_RECORDS // 4
        drop(clusters["src"], f"{prefix}-", work / "clusters" / "local" / "src" / "data" if wait else None)
        drop(clusters["dst"], f"src.{prefix}-", work / "clusters" / "local" / "dst" / "data" if wait else None)
    return {"full_sync_seconds": round(sync, 1), "idle_cpu_seconds_per_60s": round(idle, 2),
            "pulse": pulse, "peak_rss_mb": round(peak / 2**20)}


def median(values: list[float], places: int = 1) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else round((ordered[middle - 1] + ordered[middle]) / 2, places)


def table(result: dict) -> list[str]:
    """MM2 / mirrorspark's default mode / its other mode (when the run has it), ratios against MM2."""
    rounds = int(result.get("settings", {}).get("sync_rounds", 1))
    sync = f"full sync, s (median of {rounds} runs)" if rounds > 1 else "full sync, s"
    third = next((tool for tool in THIRD if any(tool in runs for runs in result["runs"].values())), MICROBATCH)
    default = "mirrorspark" if third == MICROBATCH else "micro-batches (then the default)"
    lines = [f"| partitions | {sync}: MM2 / {default} / {THIRD[third]} | CPU while idle, s per 60 s | "
             "p50 of the one-per-second records, ms | p99, ms | peak RSS, MB |", "|---|---|---|---|---|---|"]
    spread: list[str] = []
    idle_spread: list[str] = []
    for count, runs in sorted(result["runs"].items(), key=lambda kv: int(kv[0])):
        if "mm2" not in runs or "mirrorspark" not in runs:
            continue
        ours = [runs[tool] for tool in ("mirrorspark", third) if tool in runs]
        m = runs["mm2"]

        def cell(get, m: dict = m, ours: list = ours) -> str:
            base = get(m)
            return " / ".join([f"{base:,}", *(f"{get(x):,}" + (f" ({get(x) / base:.2f}x)" if base else "")
                                               for x in ours)])
        lines.append(f"| {int(count):,} | {cell(lambda r: r['full_sync_seconds'])} | "
                     f"{cell(lambda r: r['idle_cpu_seconds_per_60s'])} | {cell(lambda r: r['pulse']['p50_ms'])} | "
                     f"{cell(lambda r: r['pulse']['p99_ms'])} | {cell(lambda r: r['peak_rss_mb'])} |")
        if rounds > 1:
            spread.append(f"{int(count):,} partitions: " + "; ".join(
                f"{name} {', '.join(str(x) for x in runs[tool].get('full_sync_rounds', []))}"
                for tool, name in (("mm2", "MM2"), ("mirrorspark", "default"), (third, THIRD[third]))
                if tool in runs))
            if any("idle_cpu_rounds" in runs[tool] for tool in runs):
                idle_spread.append(f"{int(count):,} partitions: " + "; ".join(
                    f"{name} {', '.join(str(x) for x in runs[tool].get('idle_cpu_rounds', []))}"
                    for tool, name in (("mm2", "MM2"), ("mirrorspark", "default"), (third, THIRD[third]))
                    if tool in runs))
    if spread:
        lines += ["", "Each full sync, s, in run order: " + ". ".join(spread) + "."]
    if idle_spread:
        lines += ["", "Each idle minute's CPU, s, in run order: " + ". ".join(idle_spread) + "."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", default="60,600,3000,10000",
                        help="comma-separated partition counts (10,000: see docs/benchmarks.md)")
    parser.add_argument("--only", choices=TOOLS)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--threads", type=int, default=0, metavar="N",
                        help="also print the N threads that used the most CPU while idle")
    parser.add_argument("--sync-rounds", type=int, default=3,
                        help="full syncs per tool and count, the order turning each round (the first with the "
                             "other figures); the median is reported: a single sync moves by half with the "
                             "brokers' state")
    parser.add_argument("--idle-rounds", action="store_true",
                        help="measure idle CPU in every round too (its median reported): one minute of it "
                             "moves by a tenth with the brokers' state")
    parser.add_argument("--progress", action="store_true",
                        help="print the records on the target every 2 s of each full sync (where its time goes)")
    parser.add_argument("--idle-seconds", type=int, default=60)
    parser.add_argument("--settle-seconds", type=float, default=None,
                        help="wait after the full sync before idle CPU is measured, every tool alike (default: "
                             "the real-time batch length plus 10 s)")
    parser.add_argument("--pulse-seconds", type=int, default=30)
    parser.add_argument("--timeout", type=float, default=1200)
    parser.add_argument("--extra", action="append", default=[], metavar="'KEY = VALUE'",
                        help="an extra mm2.properties line for mirrorspark only")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "partition_scale.json")
    args = parser.parse_args()
    if args.settle_seconds is None:
        args.settle_seconds = realtime_batch_seconds(args.extra) + 10

    work = ROOT / "state" / "bench-partitions"
    shutil.rmtree(work, ignore_errors=True)
    local = LocalClusters(work / "clusters", jvm_opts=BROKER_JVM)
    local.down(purge=True)
    clusters = {c.name: c.bootstrap for c in local.up([ClusterSpec("src"), ClusterSpec("dst")])}
    result: dict = {"machine": machine(), "settings": {**vars(args), "out": shown(args.out)}, "runs": {}}
    try:
        for count in (int(c) for c in args.partitions.split(",")):
            for tool in TOOLS:
                if args.only in (None, tool):
                    run = one_run(tool, count, clusters, work, args)
                    run["full_sync_rounds"] = [run["full_sync_seconds"]]
                    if args.idle_rounds:
                        run["idle_cpu_rounds"] = [run["idle_cpu_seconds_per_60s"]]
                    result["runs"].setdefault(str(count), {})[tool] = run
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    args.out.write_text(json.dumps(result, indent=2))
            runs = result["runs"].get(str(count), {})
            for number in range(1, args.sync_rounds):
                for tool in TOOLS[number % len(TOOLS):] + TOOLS[:number % len(TOOLS)]:
                    if tool in runs:
                        rounds = runs[tool]["full_sync_rounds"]
                        again = one_run(tool, count, clusters, work, args, sync_only=True, number=number + 1,
                                        idle_only=args.idle_rounds)
                        rounds.append(again["full_sync_seconds"])
                        runs[tool]["full_sync_seconds"] = median(rounds)
                        if args.idle_rounds:
                            idle = runs[tool]["idle_cpu_rounds"]
                            idle.append(again["idle_cpu_seconds_per_60s"])
                            runs[tool]["idle_cpu_seconds_per_60s"] = median(idle, places=2)
                        args.out.write_text(json.dumps(result, indent=2))
    finally:
        local.down(purge=True)
    print("\n".join(table(result)))
    print(f"written to {args.out}")


if __name__ == "__main__":
    sys.exit(main())
