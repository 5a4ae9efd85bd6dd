"""Side by side on the same local brokers: real MirrorMaker 2 (connect-mirror from Maven Central,
``org.apache.kafka.connect.mirror.MirrorMaker``, its own JVM) and mirrorspark, one after the
other, same data, same producer settings, same cores (MM2 ``tasks.max`` = Spark ``local[N]`` = N).

Per replicator: start-up (process start -> first record on the target), backlog copy (records
already on the source, time until the target's end offsets hold them all), peak RSS of the
process tree, replication latency p50/p99 under a steady produce rate (a consumer on the target
against the source timestamp, which both keep) and at one record a second, and failover re-delivery
(a group committed in the middle of each partition, translated from the replicator's checkpoints).
``mirrorspark`` is the default (``mirrorspark.trigger = auto``: real-time mode on ``local[N]``);
mirrorspark runs a second time with micro-batches, measured the same way. Then the physical
limit: ``ProducerPerformance`` into the target with the same producer settings.

    .venv/bin/python bench/mm2_vs_mirrorspark.py [--records 1000000] [--size 1024] [--partitions 6]
        [--rate 5000] [--steady-seconds 60] [--trickle-seconds 30]

Prints a table and writes bench/results/mm2_vs_mirrorspark.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from mirrorspark import paths
from mirrorspark.client import MirrorClient
from mirrorspark.control.admin import admin_client
from mirrorspark.control.groups import RdkafkaGroups
from mirrorspark.local import ClusterSpec, LocalClusters
from mirrorspark.local.cluster import java_executable
from mirrorspark.local.spark_cluster import LocalSpark

ROOT = Path(__file__).resolve().parents[1]
BROKER_JVM = ["-Xms256m", "-Xmx768m", "-XX:+UseParallelGC", "-XX:-UsePerfData"]
# One set of producer settings for both replicators' writes into the target and for the limit.
PRODUCER = {"acks": "all", "linger.ms": "20", "batch.size": "524288", "compression.type": "none"}
QUIET_LOG4J = ("status = error\nrootLogger.level = WARN\nrootLogger.appenderRef.out.ref = OUT\n"
               "appender.out.type = Console\nappender.out.name = OUT\nappender.out.layout.type = PatternLayout\n"
               "appender.out.layout.pattern = %d %p %c: %m%n\n")


# -- small helpers -------------------------------------------------------------------------------
def shown(path: Path) -> str:
    """A path as a results file keeps it: relative to the checkout, never this machine's own path."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return path.name


def machine() -> dict:
    """The commit measured and the machine it ran on, kept in every result file."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown")
    kafka = sorted(p.name for p in paths.kafka_libs().glob("kafka-clients-*.jar"))
    import pyspark
    return {"commit": git("rev-parse", "--short", "HEAD") + ("+dirty" if git("status", "--porcelain",
                                                                              "--untracked-files=no") else ""),
            "cpus": os.cpu_count(), "cpu": model, "platform": platform.platform(),
            "python": platform.python_version(), "pyspark": pyspark.__version__,
            "kafka_clients": kafka[0].removeprefix("kafka-clients-").removesuffix(".jar") if kafka else "unknown"}


def create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = admin_client({"bootstrap.servers": bootstrap})  # kept alive until the futures resolve
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)


def drop_copies(clusters: dict[str, str], names: set[str], work: Path) -> None:
    """Deletes the source topics ``names`` and what was copied of them on the target (remote and
    plain-loop topics), and waits until the brokers have removed their files. Every 1 KiB copy leaves
    about 2 GB on the brokers' disks; kept to the end, the runs with the exactly-once rounds filled
    this machine's disk and a broker stopped. The brokers remove a deleted topic's files a minute
    later: copies measured meanwhile were slowed by up to half, so nothing is measured until then."""
    copies = names | {f"src.{n}" for n in names} | {f"ceiling-{n}" for n in names}
    for bootstrap in (clusters["src"], clusters["dst"]):
        admin = admin_client({"bootstrap.servers": bootstrap})
        present = [t for t in admin.list_topics(timeout=30).topics if t in copies]
        if present:
            for future in admin.delete_topics(present, operation_timeout=60).values():
                future.result(120)
    deadline = time.monotonic() + 300
    while any((work / "clusters").rglob("*-delete")):
        if time.monotonic() > deadline:
            raise RuntimeError(f"deleted topics still on disk under {work / 'clusters'} after 300 s")
        time.sleep(2)


def end_offsets(bootstrap: str, topic: str, committed: bool = True) -> dict[int, int]:
    """Each partition's end as a read_committed consumer sees it (``committed``: the last stable offset),
    or the log end (records of open transactions included)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-probe",
                  "isolation.level": "read_committed" if committed else "read_uncommitted"})
    try:
        md = c.list_topics(topic, timeout=10).topics.get(topic)
        if md is None or md.error is not None:
            return {}
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in md.partitions}
    except KafkaException:  # a remote topic just created: leaders not elected yet
        return {}
    finally:
        c.close()


def total(bootstrap: str, topic: str, committed: bool = True) -> int:
    return sum(end_offsets(bootstrap, topic, committed).values())


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants."""
    rss = 0
    for p in tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss += int(line.split()[1]) * 1024
        except OSError:
            continue
    return rss


BROKER_PIDS: list[int] = []  # the bench's two brokers, set by fresh_clusters


def brokers_cpu() -> float:
    """CPU seconds both brokers have used so far: the copy's cost on the brokers, which share the
    machine's cores with the replicator."""
    return sum(tree_cpu(pid) for pid in BROKER_PIDS)


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its living descendants: what a copy
    costs the machine, steadier than its wall-clock rate on a machine whose speed moves."""
    ticks = 0
    for p in tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, ValueError, IndexError):
            continue
    return ticks / os.sysconf("SC_CLK_TCK")


class RssSampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self._halt = pid, 0, threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.peak = max(self.peak, tree_rss(self.pid))
            self._halt.wait(0.5)

    def stop(self) -> int:
        self._halt.set()
        self.join(5)
        return self.peak


def producer_perf(bootstrap: str, topic: str, records: int, size: int, log: Path) -> float:
    """Kafka's ProducerPerformance with PRODUCER settings; returns records/s it reports."""
    props = [f"{k}={v}" for k, v in {**PRODUCER, "bootstrap.servers": bootstrap}.items()]
    (log.parent / "log4j2.properties").write_text(QUIET_LOG4J)
    log4j = f"-Dlog4j2.configurationFile={log.parent / 'log4j2.properties'}"
    out = subprocess.run([java_executable(), "-Xmx512m", log4j,
                          "-cp", f"{paths.kafka_libs()}/*", "org.apache.kafka.tools.ProducerPerformance",
                          "--topic", topic, "--num-records", str(records), "--record-size", str(size),
                          "--throughput", "-1", "--producer-props", *props],
                         capture_output=True, text=True, check=True)
    log.write_text(out.stdout + out.stderr)
    found = re.findall(r"([\d.]+) records/sec", out.stdout)
    return float(found[-1]) if found else 0.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


class BacklogCopy(NamedTuple):
    """Monotonic times at which the target held its first record, half the backlog and all of it."""
    first: float
    half: tuple[float, int]  # (time, records then)
    done: float
    records: int
    cpu_seconds: float | None = None  # the copier's CPU from the first record to the last, when asked
    brokers_cpu_seconds: float | None = None  # both brokers' CPU over the same span

    @property
    def second_half_rate(self) -> int:
        """Records/s over the second half alone: the JIT has warmed up, as in a long-running replicator."""
        return round((self.records - self.half[1]) / max(self.done - self.half[0], 1e-3))


def wait_for_copy(target: str, remote: str, records: int, timeout: float, started: float,
                  failed: Callable[[], str | None], cpu: Callable[[], float] | None = None) -> BacklogCopy:
    """Poll the remote topic's end offsets until it holds ``records``; ``failed()`` names a dead copier,
    ``cpu()`` reads its CPU seconds. The first record and the half are seen in the log (an exactly-once
    copy commits a whole batch at once), the end when a read_committed consumer sees every record."""
    first = half = None
    cpu_first = brokers_first = 0.0
    while True:
        problem = failed()
        if problem:
            raise RuntimeError(problem)
        written = total(target, remote, committed=False)
        n = total(target, remote) if written >= records else 0
        now = time.monotonic()
        if first is None and written > 0:
            first, cpu_first, brokers_first = now, cpu() if cpu else 0.0, brokers_cpu()
        half = half if half is not None or written < records // 2 else (now, written)
        if n >= records:
            return BacklogCopy(first, half, now, records, cpu() - cpu_first if cpu else None,
                               brokers_cpu() - brokers_first)
        if now - started > timeout:
            raise RuntimeError(f"backlog not copied to {remote} within {timeout} s ({n:,} records)")
        time.sleep(0.2)


# -- one replicator ------------------------------------------------------------------------------
def properties(clusters: dict[str, str], topics: str, cores: int, extra: str = "") -> str:
    return (
        "clusters = src, dst\n"
        f"src.bootstrap.servers = {clusters['src']}\ndst.bootstrap.servers = {clusters['dst']}\n"
        f"src->dst.enabled = true\ndst->src.enabled = false\nsrc->dst.topics = {topics}\n"
        + "".join(f"dst.producer.{k} = {v}\n" for k, v in PRODUCER.items())
        + "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
        "heartbeats.topic.replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n"
        "emit.checkpoints.interval.seconds = 5\nrefresh.groups.interval.seconds = 5\n"
        "refresh.topics.interval.seconds = 30\nsync.topic.acls.enabled = false\n"
        f"tasks.max = {cores}\n" + extra
    )


MM2_EXTRA = ("offset.storage.replication.factor = 1\nconfig.storage.replication.factor = 1\n"
             "status.storage.replication.factor = 1\noffset.flush.interval.ms = 1000\n")


def launch(tool: str, work: Path, clusters: dict[str, str], topics: str, cores: int,
           extra: list[str] = (), master: str | None = None) -> subprocess.Popen:
    work.mkdir(parents=True, exist_ok=True)
    log = (work / f"{tool}.log").open("wb")
    if tool == "mm2":
        (work / "mm2.properties").write_text(properties(
            clusters, topics, cores, MM2_EXTRA + "".join(f"{line}\n" for line in extra)))
        (work / "log4j2.properties").write_text(QUIET_LOG4J)
        cmd = [java_executable(), "-Xms256m", "-Xmx1g", f"-Dlog4j2.configurationFile={work / 'log4j2.properties'}",
               "-cp", f"{paths.kafka_libs()}/*", "org.apache.kafka.connect.mirror.MirrorMaker",
               str(work / "mm2.properties")]
    else:
        (work / "mm2.properties").write_text(properties(
            clusters, topics, cores, f"spark.master = {master or f'local[{cores}]'}\nmirrorspark.rest.enabled = false\n"
            + "".join(f"{line}\n" for line in extra)))
        cmd = [str(ROOT / ".venv" / "bin" / "mirrorspark"), "run", str(work / "mm2.properties"),
               "--state-dir", str(work / "state"), "--progress-interval", "30"]
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(90)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def steady_latency(clusters: dict[str, str], topic: str, remote: str, rate: int, seconds: float,
                   size: int, partitions: int, tail: bool = False) -> dict[str, float]:
    """Produce ``rate`` records/s for ``seconds`` on the source; a target consumer measures
    arrival time minus the source timestamp of every record. It starts at the remote topic's
    current end, so records of an earlier measurement of the same topic are not counted.
    ``tail``: p99.9 and the maximum too (where pauses at batch boundaries show)."""
    latencies: list[float] = []
    expected = int(rate * seconds)
    starts = end_offsets(clusters["dst"], remote, committed=False)  # {} while the remote topic does not exist
    consumer = Consumer({"bootstrap.servers": clusters["dst"], "group.id": f"bench-lat-{time.time_ns()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "topic.metadata.refresh.interval.ms": 1000, "fetch.wait.max.ms": 10})

    def start_at_end(c: Consumer, assigned: list[TopicPartition]) -> None:
        for tp in assigned:
            tp.offset = starts.get(tp.partition, tp.offset)
        c.assign(assigned)

    consumer.subscribe([remote], on_assign=start_at_end)
    done = threading.Event()

    def consume() -> None:
        deadline = None
        while len(latencies) < expected:
            # poll(), not consume(n, timeout): librdkafka's batch call returns only when n records or the
            # whole timeout have passed, which put ~500 ms into every one-record-per-second row (all tools)
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                latencies.append(time.time() * 1000 - m.timestamp()[1])
            if done.is_set():
                deadline = deadline or time.monotonic() + 60
                if time.monotonic() > deadline:
                    break

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    time.sleep(2)  # let the consumer join before the first record
    producer = Producer({"bootstrap.servers": clusters["src"], "linger.ms": 5, "acks": "all"})
    payload = b"s" * size
    start = time.monotonic()
    for i in range(expected):
        due = start + i / rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        producer.produce(topic, payload, partition=i % partitions, timestamp=int(time.time() * 1000))
        producer.poll(0)
    producer.flush(30)
    done.set()
    reader.join(90)
    consumer.close()
    measured = {"records_sent": expected, "records_seen": len(latencies),
                "p50_ms": round(percentile(latencies, 0.50), 1), "p99_ms": round(percentile(latencies, 0.99), 1)}
    if tail:
        measured.update({"p99_9_ms": round(percentile(latencies, 0.999), 1),
                         "max_ms": round(max(latencies, default=float("nan")), 1)})
    return measured


def records_below(bootstrap: str, topic: str, partition: int, offset: int) -> int:
    """The records a read_committed consumer reads below ``offset`` of one partition: in a topic written
    with transactions, each commit marker takes an offset of its own, so an offset is not a count."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-count-{time.time_ns()}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760})
    consumer.assign([TopicPartition(topic, partition, 0)])
    count, last, idle = 0, -1, time.monotonic()
    try:
        while last < offset - 1 and time.monotonic() - idle < 30:
            for m in consumer.consume(10_000, 1.0):
                if m.error() is None:
                    idle = time.monotonic()
                    if m.offset() < offset:
                        count += 1
                    last = max(last, m.offset())
    finally:
        consumer.close()
    return count


def failover_redelivery(clusters: dict[str, str], topic: str, remote: str, group: str,
                        transactional: bool = False) -> dict:
    """Commit ``group`` in the middle of every partition, wait for the replicator's checkpoints,
    and count the records a consumer failing over with them would read again (``transactional``: the
    remote topic holds commit markers, so its records below each translated offset are counted)."""
    ends = end_offsets(clusters["src"], topic)
    committed = {(topic, p): max(1, end // 2 - 7) for p, end in ends.items()}
    admin = admin_client({"bootstrap.servers": clusters["src"]})
    RdkafkaGroups(admin=admin, cluster="src").commit(group, {k: (v, "") for k, v in committed.items()})
    client = MirrorClient({"bootstrap.servers": clusters["dst"]})
    deadline, translated = time.monotonic() + 120, {}
    while time.monotonic() < deadline:
        translated = client.remote_consumer_offsets(group, "src")
        if len(translated) == len(committed):
            break
        time.sleep(1)
    time.sleep(12)  # two more checkpoint rounds: take the replicator's best answer
    translated = client.remote_consumer_offsets(group, "src")
    # Without markers the remote partition's offsets are the source's (fresh topics, nothing filtered).
    before = {p: records_below(clusters["dst"], remote, p, translated.get((remote, p), 0)) if transactional
              else translated.get((remote, p), 0) for (_, p) in committed}
    redelivered = sum(max(0, off - before[p]) for (_, p), off in committed.items())
    skipped = sum(max(0, before[p] - off) for (_, p), off in committed.items())
    return {"partitions_translated": len(translated), "redelivered_records": redelivered, "skipped_records": skipped}


def run_replicator(tool: str, args, clusters: dict[str, str], work: Path, master: str | None = None) -> dict:
    """One replicator over fresh topics; ``master``: mirrorspark's spark.master instead of local[cores]
    (on a Spark cluster, RSS is the driver's alone: executors are children of the Spark workers)."""
    tag = getattr(args, "tag", "")  # the extra record sizes copy topics of their own
    backlog, steady = f"backlog-{tool}{tag}", f"steady-{tool}{tag}"
    create(clusters["src"], backlog, args.partitions)
    create(clusters["src"], steady, args.partitions)
    print(f"[{tool}] filling {args.records:,} x {args.size} B into {backlog} ...", flush=True)
    producer_perf(clusters["src"], backlog, args.records, args.size, work / f"fill-{tool}.log")
    remote = f"src.{backlog}"
    started = time.monotonic()
    is_mm2 = tool in ("mm2", MM2_EXACTLY_ONCE)
    extra = (mm2_exactly_once_lines() if tool == MM2_EXACTLY_ONCE else []) if is_mm2 else \
        args.extra + VARIANTS.get(tool, []) + (MICROBATCH_LINES if tool in (MICROBATCH, MICROBATCH_EXACTLY_ONCE)
                                               else [])
    proc = launch("mm2" if is_mm2 else "mirrorspark", work / f"{tool}{tag}", clusters, f"{backlog}, {steady}",
                  args.cores, extra, master)
    sampler = RssSampler(proc.pid)
    sampler.start()
    try:
        copy = wait_for_copy(clusters["dst"], remote, args.records, args.timeout, started,
                             lambda: None if proc.poll() is None else
                             f"{tool} exited with {proc.returncode}; see the log in {work / (tool + tag)}",
                             lambda: tree_cpu(proc.pid))
        first, done = copy.first, copy.done
        print(f"[{tool}] backlog copied in {done - started:.1f} s", flush=True)
        latency = trickle = failover = None  # a skipped step is absent from the result, never a placeholder
        if args.steady_seconds > 0:
            latency = steady_latency(clusters, steady, f"src.{steady}", args.rate, args.steady_seconds, args.size,
                                     args.partitions)
            if args.trickle_seconds > 0:  # a quiet flow: each record alone, no batch filling up around it
                trickle = steady_latency(clusters, steady, f"src.{steady}", 1, args.trickle_seconds, args.size,
                                         args.partitions)
        if tool == MM2_EXACTLY_ONCE:  # MM2 says nothing of it at WARN: the target's transactions show it
            ids = transactional_ids(clusters["dst"], "MirrorSourceConnector")
            if not ids:
                raise RuntimeError(f"{tool} wrote without transactions: no MirrorSourceConnector transactional id")
        if not args.no_failover:
            failover = failover_redelivery(clusters, backlog, remote, f"bench-group-{tool}",
                                           transactional=tool in TRANSACTIONAL or tool == MM2_EXACTLY_ONCE)
    finally:
        peak = sampler.stop()
        stop(proc)
    copy_seconds = done - first
    mb = args.records * args.size / 1e6
    measured = {
        "startup_seconds": round(first - started, 2),
        "backlog_seconds_from_start": round(done - started, 2),
        "backlog_copy_seconds": round(copy_seconds, 2),
        "backlog_records_per_second": round(args.records / max(copy_seconds, 1e-3)),
        "backlog_mb_per_second": round(mb / max(copy_seconds, 1e-3), 1),
        # The second half alone: the JVM's JIT has warmed up, as it has in a replicator running for days.
        "backlog_second_half_records_per_second": copy.second_half_rate,
        "peak_rss_mb": round(peak / 2**20),
    }
    if master is None or master.startswith("local"):
        # The process tree's CPU over the same span, per million records: the cost of a record. Not on
        # a Spark cluster: its executors are the workers' children, not the driver's.
        measured["backlog_cpu_seconds_per_million"] = round(copy.cpu_seconds * 1e6 / args.records, 2)
    if copy.brokers_cpu_seconds is not None and BROKER_PIDS:
        measured["brokers_cpu_seconds_per_million"] = round(copy.brokers_cpu_seconds * 1e6 / args.records, 2)
    if tool == MM2_EXACTLY_ONCE:
        measured["transactional_ids"] = ids
    if latency is not None:
        measured["steady"] = latency
    if trickle is not None:
        measured["trickle"] = trickle
    if failover is not None:
        measured["failover"] = failover
    return measured


CLUSTER = "mirrorspark-cluster"
# The same mirrorspark with a batch bound (a cap on what a crash can make it copy again, off by
# default): its cost is the ratio of the two backlog rates, measured in the same run.
BOUNDED = "mirrorspark-bounded"
BOUND = 250_000
BOUNDED_EXTRA = [f"mirrorspark.batch.max.records = {BOUND}"]
# The same mirrorspark with the target producer's idempotence off, as some MM2 files have it (older
# brokers, no IdempotentWrite ACL): one request in flight per connection keeps partition order.
NON_IDEMPOTENT = "mirrorspark-no-idempotence"
# The same mirrorspark with exactly-once into the target (transactions): throughput and latency, in the
# default mode (real-time: each task commits every mirrorspark.realtime.transaction.ms) and with micro-batches.
EXACTLY_ONCE = "mirrorspark-exactly-once"
MICROBATCH_EXACTLY_ONCE = "mirrorspark-microbatch-exactly-once"
VARIANTS = {BOUNDED: BOUNDED_EXTRA, NON_IDEMPOTENT: ["dst.producer.enable.idempotence = false"],
            EXACTLY_ONCE: ["dst.exactly.once.source.support = enabled"],
            MICROBATCH_EXACTLY_ONCE: ["dst.exactly.once.source.support = enabled"]}
VARIANT_ROWS = ((BOUNDED, f"batch bound cost (a bound keeps micro-batches): local[N] with "
                           f"mirrorspark.batch.max.records = {BOUND:,}"),
                (NON_IDEMPOTENT, "idempotence off cost: local[N] with dst.producer.enable.idempotence = false"),
                (EXACTLY_ONCE, "exactly-once cost: local[N] with dst.exactly.once.source.support = enabled"),
                (MICROBATCH_EXACTLY_ONCE, "exactly-once with micro-batches: local[N]"))
WITH_LATENCY = {EXACTLY_ONCE, MICROBATCH_EXACTLY_ONCE}  # variants whose latency is measured too (read_committed)
TRANSACTIONAL = {EXACTLY_ONCE, MICROBATCH_EXACTLY_ONCE}
# MM2 with exactly-once (Connect's exactly-once source support, MM2 3.5+): the peer of the exactly-once
# row, set up as Kafka's documentation says for dedicated mode (the internal REST server fences zombie
# tasks; the source read read_committed, or MM2 reports exactly-once unsupported).
MM2_EXACTLY_ONCE = "mm2-exactly-once"


def transactional_ids(bootstrap: str, containing: str) -> int:
    """How many transactional ids naming ``containing`` the cluster knows (Kafka's own
    kafka-transactions tool): the proof that a run wrote in transactions."""
    out = subprocess.run([java_executable(), "-cp", f"{paths.kafka_libs()}/*",
                          "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", bootstrap, "list"],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"kafka-transactions list failed: {out.stderr[-500:]}")
    return sum(containing in line.split()[0] for line in out.stdout.splitlines()[1:] if line.strip())


def mm2_exactly_once_lines() -> list[str]:
    """The mm2.properties lines of MM2's exactly-once mode, its internal REST server on a free port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return ["dst.exactly.once.source.support = enabled", "src.consumer.isolation.level = read_committed",
            "dedicated.mode.enable.internal.rest = true", f"listeners = http://127.0.0.1:{port}"]


# The same mirrorspark with micro-batches (the default before real-time mode was): not a cost row but a
# column of the main table, measured as fully as the default.
MICROBATCH = "mirrorspark-microbatch"
MICROBATCH_LINES = ["mirrorspark.trigger = microbatch"]


def realtime_lines(batch_seconds: float) -> list[str]:
    """The mm2.properties lines of real-time mode with real-time batches of ``batch_seconds``."""
    return ["mirrorspark.trigger = realtime", f"mirrorspark.realtime.batch.seconds = {batch_seconds:g}"]


ROWS = (
    ("backlog copy, records/s", lambda r: r["backlog_records_per_second"]),
    ("backlog copy, MB/s", lambda r: r["backlog_mb_per_second"]),
    ("backlog second half (JIT warm), records/s", lambda r: r["backlog_second_half_records_per_second"]),
    ("backlog copy, CPU s of the process tree per million records", lambda r: r.get("backlog_cpu_seconds_per_million")),
    ("backlog, s from process start", lambda r: r["backlog_seconds_from_start"]),
    ("start-up to first record, s", lambda r: r["startup_seconds"]),
    ("steady latency p50, ms", lambda r: r.get("steady", {}).get("p50_ms")),
    ("steady latency p99, ms", lambda r: r.get("steady", {}).get("p99_ms")),
    ("one record per second: latency p50, ms", lambda r: r.get("trickle", {}).get("p50_ms")),
    ("one record per second: latency p99, ms", lambda r: r.get("trickle", {}).get("p99_ms")),
    ("peak RSS of process tree, MB", lambda r: r["peak_rss_mb"]),
    ("failover re-delivered records", lambda r: r.get("failover", {}).get("redelivered_records")),
)


def table(result: dict) -> list[str]:
    """MM2, mirrorspark local[N] (its default) and, when measured, mirrorspark with micro-batches and on the
    2-worker cluster, with ratios."""
    mm2, ms = result["mm2"], result["mirrorspark"]
    runs = [("mirrorspark", ms)] + [(name, result[key]) for key, name in (
        (MICROBATCH, "mirrorspark, micro-batches"), (CLUSTER, "mirrorspark, 2-worker standalone (1 core each)"))
        if key in result]

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.2f}x" if b else "-"

    head = "| measure | real MM2 | " + " | ".join(name for name, _ in runs) + " | " + \
        " | ".join(f"{name} / MM2" for name, _ in runs) + " |"
    lines = [head, "|---|" + "---:|" * (1 + 2 * len(runs))]
    for name, value in ROWS:
        base = value(mm2)
        figures = [value(run) for _, run in runs]
        if base is None or all(f is None for f in figures):
            continue  # a step not measured in this run is not shown; a run without it has an empty cell
        lines.append(f"| {name} | {base:,} | " + " | ".join("" if f is None else f"{f:,}" for f in figures) + " | "
                     + " | ".join("" if f is None else ratio(f, base) for f in figures) + " |")
    for key, name in (("ceiling_records_per_second", "plain loop (a reference, not a ceiling): a Java "
                       "consume-and-produce loop, "
                       "records/s"), ("limit_records_per_second", "limit: ProducerPerformance into the target, "
                                      "records/s")):
        if key in result:
            bound = result[key]
            lines.append(f"| {name} | {bound:,.0f} | "
                         + " | ".join(f"{run['backlog_records_per_second'] / bound:.2f}x of it" for _, run in runs)
                         + f" | MM2 at {mm2['backlog_records_per_second'] / bound:.2f}x |" + " |" * (len(runs) - 1))
    for variant, label in VARIANT_ROWS:
        if variant in result:
            changed, free = result[variant]["backlog_records_per_second"], ms["backlog_records_per_second"]
            lines.append(f"| {label} ({changed:,} records/s) vs the default | | {changed / free:.3f}x |"
                         + " |" * (2 * len(runs) - 1))
            steady, default = result[variant].get("steady"), ms.get("steady")
            if steady and default:
                lines.append(f"| {label}: latency p50 / p99 ({steady['p50_ms']:,} / {steady['p99_ms']:,} ms) vs the "
                             f"default | | {steady['p50_ms'] / default['p50_ms']:.2f}x / "
                             f"{steady['p99_ms'] / default['p99_ms']:.2f}x |" + " |" * (2 * len(runs) - 1))
    for key, mode in ((EXACTLY_ONCE, "mirrorspark"), (MICROBATCH_EXACTLY_ONCE, "mirrorspark micro-batches")):
        if key not in result or MM2_EXACTLY_ONCE not in result:
            continue
        ours, theirs = result[key], result[MM2_EXACTLY_ONCE]
        rate, peer_rate = ours["backlog_records_per_second"], theirs["backlog_records_per_second"]
        lines.append(f"| exactly-once, both: {mode} ({rate:,} records/s) vs MM2 with "
                     f"dst.exactly.once.source.support = enabled ({peer_rate:,}) | | {rate / peer_rate:.2f}x |"
                     + " |" * (2 * len(runs) - 1))
        steady, peer = ours.get("steady"), theirs.get("steady")
        if steady and peer:
            lines.append(f"| exactly-once, both: latency p50 / p99, {mode} ({steady['p50_ms']:,} / "
                         f"{steady['p99_ms']:,} ms) vs MM2 ({peer['p50_ms']:,} / {peer['p99_ms']:,} ms) | | "
                         f"{steady['p50_ms'] / peer['p50_ms']:.2f}x / {steady['p99_ms'] / peer['p99_ms']:.2f}x |"
                         + " |" * (2 * len(runs) - 1))
    return lines


def size_table(result: dict) -> list[str]:
    """Backlog copy at other record sizes: MM2, mirrorspark and the ceiling, records/s."""
    lines = ["| record size | records | real MM2, records/s | mirrorspark, records/s | mirrorspark / MM2 | "
             "plain loop, records/s | mirrorspark / plain loop |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for size, runs in sorted(result.get("sizes", {}).items(), key=lambda kv: int(kv[0])):
        mm2, ms = runs["mm2"]["backlog_records_per_second"], runs["mirrorspark"]["backlog_records_per_second"]
        ceiling = runs.get("ceiling_records_per_second")
        tail = f"{ceiling:,.0f} | {ms / ceiling:.2f}x |" if ceiling else " | |"
        lines.append(f"| {int(size):,} B | {runs['records']:,} | {mm2:,} | {ms:,} | {ms / mm2:.2f}x | {tail}")
    return lines


class CeilingCopy(NamedTuple):
    """What bench/jvm/ReplicationCeiling.java reached over a topic and the CPU its JVM used copying."""
    records_per_second: float
    cpu_seconds: float
    brokers_cpu_seconds: float  # from the ceiling's start to its exit, its JVM's start-up included


def replication_ceiling(clusters: dict[str, str], topic: str, partitions: int, cores: int, work: Path) -> float:
    """bench/jvm/ReplicationCeiling.java over ``topic``: what a replicator without a framework reaches."""
    return ceiling_copy(clusters, topic, partitions, cores, work).records_per_second


def ceiling_copy(clusters: dict[str, str], topic: str, partitions: int, cores: int, work: Path) -> CeilingCopy:
    """The ceiling's rate and CPU over ``topic`` (copied to a fresh topic on the target)."""
    remote = f"ceiling-{topic}"
    create(clusters["dst"], remote, partitions)
    (work / "log4j2.properties").write_text(QUIET_LOG4J)
    brokers_before = brokers_cpu()
    out = subprocess.run([java_executable(), "-Xmx1g", f"-Dlog4j2.configurationFile={work / 'log4j2.properties'}",
                          "-cp", f"{paths.kafka_libs()}/*", str(ROOT / "bench" / "jvm" / "ReplicationCeiling.java"),
                          clusters["src"], topic, clusters["dst"], remote, str(cores),
                          *(f"{k}={v}" for k, v in PRODUCER.items())], capture_output=True, text=True, check=True)
    found = re.findall(r"([\d.]+) records/s, cpu ([\d.]+) s", out.stdout)
    if not found:
        raise RuntimeError(f"ReplicationCeiling printed no rate: {out.stdout}{out.stderr}")
    return CeilingCopy(float(found[-1][0]), float(found[-1][1]), brokers_cpu() - brokers_before)


def backlog_rounds(args, clusters: dict[str, str], work: Path) -> list[dict]:
    """The 1 KiB backlog copy in ``args.backlog_rounds`` rounds over fresh topics, the order of the two
    replicators alternating, each copy followed at once by the ceiling over the same topic. The
    ceiling itself moves by a third within one run (the brokers' state, the neighbours), so a copy is
    read against the ceiling measured right after it: the median of the rounds is the figure
    (docs/adr/0020-paired-backlog-rounds.md)."""
    rounds = []
    backlog_only = {**vars(args), "steady_seconds": 0, "no_failover": True}
    for number in range(1, args.backlog_rounds + 1):
        tag = f"-round{number}"
        order = ("mm2", "mirrorspark") if number % 2 else ("mirrorspark", "mm2")
        measured: dict = {"first": order[0]}
        for tool in order:
            copy = run_replicator(tool, argparse.Namespace(**backlog_only, tag=tag), clusters, work)
            ceiling = ceiling_copy(clusters, f"backlog-{tool}{tag}", args.partitions, args.cores, work)
            measured[tool] = copy["backlog_records_per_second"]
            measured[f"{tool}_cpu_per_million"] = copy["backlog_cpu_seconds_per_million"]
            measured[f"{tool}_ceiling"] = round(ceiling.records_per_second)
            measured[f"{tool}_ceiling_cpu_per_million"] = round(ceiling.cpu_seconds * 1e6 / args.records, 2)
            measured[f"{tool}_brokers_cpu_per_million"] = copy.get("brokers_cpu_seconds_per_million")
            measured[f"{tool}_ceiling_brokers_cpu_per_million"] = round(
                ceiling.brokers_cpu_seconds * 1e6 / args.records, 2)
        rounds.append(measured)
        print(json.dumps({f"backlog round {number}": measured}), flush=True)
    return rounds


EXACTLY_ONCE_TOOLS = ("mirrorspark", EXACTLY_ONCE, MM2_EXACTLY_ONCE)


def exactly_once_rounds(args, clusters: dict[str, str], work: Path) -> list[dict]:
    """The 1 KiB backlog copied with and without exactly-once in ``args.exactly_once_rounds`` rounds over
    fresh topics: mirrorspark at least once, mirrorspark exactly-once and MM2 exactly-once, the order
    turning each round. Single runs of the variants, one after the other in a long run, moved from
    0.50x to 0.93x of at-least-once on the same code (the brokers' state by then, not the mode): the
    exactly-once cost is read from the same round, and its median (docs/benchmarks.md)."""
    rounds = []
    backlog_only = {**vars(args), "steady_seconds": 0, "no_failover": True}
    for number in range(1, args.exactly_once_rounds + 1):
        turn = (number - 1) % len(EXACTLY_ONCE_TOOLS)
        order = EXACTLY_ONCE_TOOLS[turn:] + EXACTLY_ONCE_TOOLS[:turn]
        measured: dict = {"order": list(order)}
        for tool in order:
            copy = run_replicator(tool, argparse.Namespace(**backlog_only, tag=f"-eos{number}"), clusters, work)
            measured[tool] = copy["backlog_records_per_second"]
            measured[f"{tool}_cpu_per_million"] = copy["backlog_cpu_seconds_per_million"]
            measured[f"{tool}_brokers_cpu_per_million"] = copy.get("brokers_cpu_seconds_per_million")
        rounds.append(measured)
        print(json.dumps({f"exactly-once round {number}": measured}), flush=True)
    return rounds


def exactly_once_table(result: dict) -> list[str]:
    """Each exactly-once round and the medians: exactly-once against at-least-once, and against MM2's."""
    rounds = result.get("exactly_once_rounds") or []
    if not rounds:
        return []
    lines = ["| round | order | mirrorspark at least once, records/s | mirrorspark exactly-once | MM2 exactly-once | "
             "**exactly-once / at least once** | **mirrorspark / MM2, both exactly-once** | "
             "brokers' CPU s per million records: at least once / exactly-once / MM2 exactly-once |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]

    def brokers(r: dict) -> str:
        figures = [r.get(f"{tool}_brokers_cpu_per_million") for tool in EXACTLY_ONCE_TOOLS]
        return " / ".join("-" if f is None else f"{f:.1f}" for f in figures)
    for number, r in enumerate(rounds, 1):
        lines.append(f"| {number} | {', '.join(r['order'])} | {r['mirrorspark']:,} | {r[EXACTLY_ONCE]:,} | "
                     f"{r[MM2_EXACTLY_ONCE]:,} | **{r[EXACTLY_ONCE] / r['mirrorspark']:.2f}x** | "
                     f"**{r[EXACTLY_ONCE] / r[MM2_EXACTLY_ONCE]:.2f}x** | {brokers(r)} |")
    cost = median([r[EXACTLY_ONCE] / r["mirrorspark"] for r in rounds])
    peer = median([r[EXACTLY_ONCE] / r[MM2_EXACTLY_ONCE] for r in rounds])
    lines.append(f"| median | | {median([r['mirrorspark'] for r in rounds]):,.0f} | "
                 f"{median([r[EXACTLY_ONCE] for r in rounds]):,.0f} | "
                 f"{median([r[MM2_EXACTLY_ONCE] for r in rounds]):,.0f} | "
                 f"**{cost:.2f}x** | **{peer:.2f}x** | |")
    return lines


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def round_ratios(r: dict) -> dict[str, float]:
    """One round's ratios: each replicator against MM2 and against the ceiling measured right after it."""
    ms, mm2 = r["mirrorspark"] / r["mirrorspark_ceiling"], r["mm2"] / r["mm2_ceiling"]
    return {"raw": r["mirrorspark"] / r["mm2"], "ms": ms, "mm2": mm2, "paired": ms / mm2,
            "cpu": r["mirrorspark_cpu_per_million"] / r["mm2_cpu_per_million"]}


def rounds_table(result: dict) -> list[str]:
    """Each backlog round's figures and their medians: the ratios the throughput goals are read from."""
    rounds = [r for r in result.get("backlog_rounds", []) if "mirrorspark_ceiling" in r]
    if not rounds:
        return []
    brokers = all(r.get("mm2_brokers_cpu_per_million") is not None
                  and r.get("mirrorspark_brokers_cpu_per_million") is not None for r in rounds)

    def brokers_cells(r: dict) -> str:
        ceiling = (r["mm2_ceiling_brokers_cpu_per_million"] + r["mirrorspark_ceiling_brokers_cpu_per_million"]) / 2
        return (f" {r['mm2_brokers_cpu_per_million']:.1f} / {r['mirrorspark_brokers_cpu_per_million']:.1f} / "
                f"{ceiling:.1f} |")
    lines = ["| round | first | real MM2, records/s (its plain loop) | mirrorspark, records/s (its plain loop) | "
             "mirrorspark / MM2 | MM2 / its plain loop | mirrorspark / its plain loop | "
             "**mirrorspark / MM2, each against its plain loop** | "
             "CPU s per million records: MM2 / mirrorspark / plain loop | mirrorspark / MM2, CPU |"
             + (" brokers' CPU s per million records, during MM2 / mirrorspark / plain loop |" if brokers else ""),
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if brokers else "")]
    for number, r in enumerate(rounds, 1):
        x = round_ratios(r)
        ceiling_cpu = (r["mm2_ceiling_cpu_per_million"] + r["mirrorspark_ceiling_cpu_per_million"]) / 2
        lines.append(f"| {number} | {r['first']} | {r['mm2']:,} ({r['mm2_ceiling']:,}) | "
                     f"{r['mirrorspark']:,} ({r['mirrorspark_ceiling']:,}) | {x['raw']:.2f}x | {x['mm2']:.2f}x | "
                     f"{x['ms']:.2f}x | **{x['paired']:.2f}x** | {r['mm2_cpu_per_million']:.1f} / "
                     f"{r['mirrorspark_cpu_per_million']:.1f} / {ceiling_cpu:.1f} | {x['cpu']:.2f}x |"
                     + (brokers_cells(r) if brokers else ""))
    ratios = [round_ratios(r) for r in rounds]

    def mid(key: str) -> float:
        return median([x[key] for x in ratios])

    def mid_of(key: str) -> float:
        return median([r[key] for r in rounds])

    ceiling_cpu = median([(r["mm2_ceiling_cpu_per_million"] + r["mirrorspark_ceiling_cpu_per_million"]) / 2
                          for r in rounds])
    lines.append(f"| median | | {mid_of('mm2'):,.0f} ({mid_of('mm2_ceiling'):,.0f}) | "
                 f"{mid_of('mirrorspark'):,.0f} ({mid_of('mirrorspark_ceiling'):,.0f}) | {mid('raw'):.2f}x | "
                 f"{mid('mm2'):.2f}x | {mid('ms'):.2f}x | **{mid('paired'):.2f}x** | "
                 f"{mid_of('mm2_cpu_per_million'):.1f} / {mid_of('mirrorspark_cpu_per_million'):.1f} / "
                 f"{ceiling_cpu:.1f} | {mid('cpu'):.2f}x |" + (brokers_cells({
                     key: median([r[key] for r in rounds]) for key in (
                         "mm2_brokers_cpu_per_million", "mirrorspark_brokers_cpu_per_million",
                         "mm2_ceiling_brokers_cpu_per_million", "mirrorspark_ceiling_brokers_cpu_per_million")})
                     if brokers else ""))
    return lines


def warm_brokers(clusters: dict[str, str], records: int, size: int, partitions: int, cores: int,
                 work: Path) -> float:
    """One throwaway copy before anything is measured: fill a topic and run the ceiling over it.
    Fresh brokers run their produce and fetch paths in the interpreter until the JIT has compiled
    them; without this the first replicator measured pays for that and the ceiling, measured last,
    does not (in four paired rounds the first copy on fresh brokers reached 0.75x of the ceiling and
    the later ones 0.86-0.98x; docs/adr/0018-bench-ceiling.md). Returns the throwaway rate."""
    create(clusters["src"], "warmup", partitions)
    producer_perf(clusters["src"], "warmup", records, size, work / "fill-warmup.log")
    return replication_ceiling(clusters, "warmup", partitions, cores, work)


def fresh_clusters(work: Path) -> tuple[LocalClusters, dict[str, str]]:
    """Brokers ``src`` and ``dst`` started anew under ``work``; fresh clusters need fresh replicator
    state, so every other folder there (each run's, the record-size runs' too) is removed."""
    local = LocalClusters(work / "clusters", jvm_opts=BROKER_JVM)
    local.down(purge=True)
    for leftover in work.iterdir() if work.exists() else []:
        if leftover.is_dir() and leftover.name != "clusters":
            shutil.rmtree(leftover, ignore_errors=True)
    running = local.up([ClusterSpec("src"), ClusterSpec("dst")])
    BROKER_PIDS[:] = [c.pid for c in running if c.pid is not None]
    return local, {c.name: c.bootstrap for c in running}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--steady-seconds", type=float, default=60)
    parser.add_argument("--trickle-seconds", type=float, default=30,
                        help="latency at one record a second after the steady rate; 0 to skip")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--only", choices=("mm2", "mirrorspark", BOUNDED, NON_IDEMPOTENT, EXACTLY_ONCE,
                                           MICROBATCH_EXACTLY_ONCE, MM2_EXACTLY_ONCE, MICROBATCH, CLUSTER),
                        help="run one replicator (no ratios)")
    parser.add_argument("--no-cluster", action="store_true",
                        help="skip mirrorspark on a local 2-worker Spark standalone cluster")
    parser.add_argument("--extra", action="append", default=[], metavar="'KEY = VALUE'",
                        help="an extra mm2.properties line for mirrorspark only (experiments, profiling)")
    parser.add_argument("--no-failover", action="store_true", help="skip the failover scenario")
    parser.add_argument("--no-limit", action="store_true", help="skip the ProducerPerformance limit and the ceiling")
    parser.add_argument("--cold", action="store_true",
                        help="no warm-up copy: the first replicator meets brokers whose JIT has not run")
    parser.add_argument("--backlog-rounds", type=int, default=5,
                        help="rounds of the 1 KiB backlog copy (MM2 and mirrorspark, each followed by the ceiling); "
                             "the medians are reported")
    parser.add_argument("--exactly-once-rounds", type=int, default=3,
                        help="rounds of the 1 KiB backlog copy by mirrorspark at least once, mirrorspark exactly-once "
                             "and MM2 exactly-once (the order turning); the medians are reported")
    parser.add_argument("--sizes", default="100,10240",
                        help="other record sizes (comma-separated, bytes): backlog copy only, MM2 vs mirrorspark "
                             "vs the ceiling, about 100 MB each; '' for none")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "mm2_vs_mirrorspark.json")
    args = parser.parse_args()

    work = ROOT / "state" / "bench-mm2"
    local, clusters = fresh_clusters(work)
    result: dict = {"machine": machine(),
                    "settings": {**vars(args), "out": shown(args.out), "producer": PRODUCER}}
    try:
        if not args.cold:
            result["warmup_records_per_second"] = round(warm_brokers(clusters, args.records, args.size,
                                                                     args.partitions, args.cores, work))
            print(json.dumps({"warm-up copy": result["warmup_records_per_second"]}), flush=True)
        for tool in ("mm2", "mirrorspark", *VARIANTS, MM2_EXACTLY_ONCE, MICROBATCH):
            if args.only in (None, tool):
                # A variant measures the backlog only (a cost on throughput); exactly-once its latency too.
                run_args = argparse.Namespace(**{**vars(args), "steady_seconds": 0, "no_failover": True}) \
                    if tool in VARIANTS and tool not in WITH_LATENCY else \
                    argparse.Namespace(**{**vars(args), "no_failover": True}) if tool == MM2_EXACTLY_ONCE else args
                result[tool] = run_replicator(tool, run_args, clusters, work, None)
                print(json.dumps({tool: result[tool]}), flush=True)
        if args.only is None:  # the single runs' copies (all but MM2's: the plain loop reads it below)
            drop_copies(clusters, {f"{kind}-{tool}" for kind in ("backlog", "steady")
                                   for tool in ("mirrorspark", *VARIANTS, MM2_EXACTLY_ONCE, MICROBATCH)}, work)
        if args.only in (None, CLUSTER) and not args.no_cluster:
            spark = LocalSpark(work / "spark")
            master = spark.up(workers=2, cores=1, memory="1g")
            try:
                result[CLUSTER] = run_replicator(CLUSTER, args, clusters, work, master)
                print(json.dumps({CLUSTER: result[CLUSTER]}), flush=True)
            finally:
                spark.down(purge=True)
        if not args.no_limit and "mm2" in result:
            result["ceiling_records_per_second"] = replication_ceiling(clusters, "backlog-mm2", args.partitions,
                                                                      args.cores, work)
        if args.only is None and not args.no_limit and args.backlog_rounds > 0:
            result["backlog_rounds"] = backlog_rounds(args, clusters, work)
        if args.only is None and args.exactly_once_rounds > 0:
            result["exactly_once_rounds"] = exactly_once_rounds(args, clusters, work)
        for size in [int(x) for x in args.sizes.split(",") if x.strip()] if args.only is None else []:
            records = max(100_000, min(2_000_000, 100_000_000 // size))
            sized = argparse.Namespace(**{**vars(args), "size": size, "records": records, "steady_seconds": 0,
                                          "no_failover": True, "tag": f"-{size}b"})
            runs: dict = {"records": records}
            for tool in ("mm2", "mirrorspark"):
                runs[tool] = run_replicator(tool, sized, clusters, work)
            if not args.no_limit:
                runs["ceiling_records_per_second"] = replication_ceiling(clusters, f"backlog-mm2-{size}b",
                                                                         args.partitions, args.cores, work)
            result.setdefault("sizes", {})[str(size)] = runs
            print(json.dumps({f"size {size}": runs}), flush=True)
        if not args.no_limit:
            create(clusters["dst"], "limit", args.partitions)
            result["limit_records_per_second"] = producer_perf(clusters["dst"], "limit", args.records, args.size,
                                                               work / "limit.log")
    finally:
        local.down(purge=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    if "mm2" in result and "mirrorspark" in result:
        print("\n".join(table(result)))
    if result.get("backlog_rounds"):
        print("\n".join(rounds_table(result)))
    if result.get("exactly_once_rounds"):
        print("\n".join(exactly_once_table(result)))
    if result.get("sizes"):
        print("\n".join(size_table(result)))
    print(f"written to {args.out}")


if __name__ == "__main__":
    sys.exit(main())
