"""The same real faults against real MirrorMaker 2 and mirrorspark, one after the other on the same
local brokers: records lost and copied twice, counted with a sequence-number header, against what
each replicator reported (mirrorspark: its data-loss file and its "copied twice" log lines; MM2 has
no such report, so what it reports is 0).

Each tool copies its own topic (3 partitions) while a feeder writes numbered records into it:

- ``kill -9``: the replicator's whole process tree killed 20 s into a steady feed, started again 5 s
  later (both resume from what they committed);
- ``source down``: the source cluster's only broker stopped for ``--down-seconds`` while the feed
  goes on (the feeder buffers), then started again; whether the replicator outlives it;
- ``unread records deleted``: the replicator frozen (SIGSTOP), records it has not read deleted on
  one partition (``deleteRecords``, as retention would), then thawed (SIGCONT).

After each fault the feed stops and the target is read once it stops growing. ``lost`` counts
records the source acknowledged and the target lacks, ``twice`` extra copies on the target.

    .venv/bin/python bench/fault_drills.py [--rate 2000] [--down-seconds 60]

Prints a table and writes bench/results/fault_drills.json (rendered into docs/benchmarks.md by
bench/render_readme.py).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mm2_vs_mirrorspark import ROOT, create, fresh_clusters, launch, machine, stop

from mirrorspark.control.admin import admin_client
from mirrorspark.local import ClusterSpec

PARTITIONS = 3
TOOLS = ("mm2", "mirrorspark")


class Feeder(threading.Thread):
    """Numbered records (header ``seq``) at ``rate`` a second; each acknowledged one is remembered."""

    def __init__(self, bootstrap: str, topic: str, rate: int, first: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.rate, self.next = bootstrap, topic, rate, first
        self.acked: set[int] = set()
        self.halt = threading.Event()

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 10, "enable.idempotence": True,
                             "message.timeout.ms": 300_000, "queue.buffering.max.messages": 1_000_000,
                             "log_level": 2})
        per_tick = max(1, self.rate // 10)
        while not self.halt.is_set():
            began = time.monotonic()
            for _ in range(per_tick):
                seq = self.next

                def delivered(err, _msg, seq: int = seq) -> None:
                    if err is None:
                        self.acked.add(seq)
                try:
                    producer.produce(self.topic, key=str(seq).encode(), value=b"v" * 200, partition=seq % PARTITIONS,
                                     headers=[("seq", str(seq).encode())], on_delivery=delivered)
                except BufferError:
                    break
                self.next += 1
            producer.poll(0)
            self.halt.wait(max(0.0, 0.1 - (time.monotonic() - began)))
        producer.flush(300)


def seqs(bootstrap: str, topic: str) -> list[int]:
    """Every ``seq`` in ``topic`` (each partition from its start to its end now)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fault-drills-read", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    try:
        meta = consumer.list_topics(topic, timeout=30).topics.get(topic)
        if meta is None or meta.error is not None:
            return []
        parts = sorted(meta.partitions)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in parts}
        consumer.assign([TopicPartition(topic, p, -2) for p in parts])
        out: list[int] = []
        done = {p for p in parts if ends[p] == 0}
        deadline = time.monotonic() + 300
        while len(done) < len(parts) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                done |= {p for p in parts if consumer.position([TopicPartition(topic, p)])[0].offset >= ends[p]}
                continue
            if msg.error():
                continue
            out.append(int(dict(msg.headers() or ())["seq"]))
            if msg.offset() + 1 >= ends[msg.partition()]:
                done.add(msg.partition())
        return out
    finally:
        consumer.close()


def end_total(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fault-drills-ends"})
    try:
        meta = consumer.list_topics(topic, timeout=30).topics.get(topic)
        if meta is None or meta.error is not None:
            return 0
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in meta.partitions)
    finally:
        consumer.close()


def settle(bootstrap: str, topic: str, quiet: float = 20.0, limit: float = 300.0) -> None:
    """Until ``topic`` has not grown for ``quiet`` seconds (at most ``limit``)."""
    last, since, deadline = -1, time.monotonic(), time.monotonic() + limit
    while time.monotonic() < deadline and time.monotonic() - since < quiet:
        now = end_total(bootstrap, topic)
        if now != last:
            last, since = now, time.monotonic()
        time.sleep(2)


def reported(tool: str, work: Path, logs: list[Path]) -> tuple[int, int]:
    """(records reported lost, records reported copied twice); MM2 reports neither."""
    if tool == "mm2":
        return 0, 0
    lost = 0
    for path in (work / "state").rglob("data-loss.json"):
        lost += sum(r.get("records", 0) for r in json.loads(path.read_text() or "[]"))
    twice = 0
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            if m := re.search(r"batch \d+: (\d+) record\(s\) copied twice", line):
                twice += int(m.group(1))
    return lost, twice


def process_group_jvms(pid: int) -> list[int]:
    """The Java processes of a replicator's process group (SIGSTOP must reach the one that copies)."""
    out = subprocess.run(["pgrep", "-g", str(os.getpgid(pid)), "-x", "java"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def drill(tool: str, fault: str, clusters: dict[str, str], local, work: Path, args, first: int) -> dict:
    topic = f"{fault.replace(' ', '-')}-{tool}"
    create(clusters["src"], topic, PARTITIONS)
    run = work / f"{tool}-{topic}"
    proc = launch(tool, run, clusters, topic, 2)
    logs: list[Path] = []
    feeder = Feeder(clusters["src"], topic, args.rate, first)
    alive = True
    try:
        time.sleep(15)  # started and copying
        feeder.start()
        time.sleep(20)
        if fault == "kill -9":
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
            kept = run / f"{tool}.before-kill.log"
            (run / f"{tool}.log").rename(kept)
            logs.append(kept)
            time.sleep(5)
            proc = launch(tool, run, clusters, topic, 2)
            time.sleep(30)
        elif fault == "source down":
            local.down(["src"])
            time.sleep(args.down_seconds)
            local.up([ClusterSpec("src")])
            time.sleep(30)
        else:  # unread records deleted
            jvms = process_group_jvms(proc.pid)
            for jvm in jvms:
                os.kill(jvm, signal.SIGSTOP)
            time.sleep(15)
            consumer = Consumer({"bootstrap.servers": clusters["src"], "group.id": "fault-drills-ends"})
            end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1]
            consumer.close()
            admin = admin_client({"bootstrap.servers": clusters["src"]})
            for future in admin.delete_records([TopicPartition(topic, 0, end)], request_timeout=30).values():
                future.result(30)
            for jvm in jvms:
                os.kill(jvm, signal.SIGCONT)
            time.sleep(20)
        feeder.halt.set()
        feeder.join(300)
        settle(clusters["dst"], f"src.{topic}")
        alive = proc.poll() is None
    finally:
        feeder.halt.set()
        stop(proc)
    logs.append(run / f"{tool}.log")
    landed = Counter(seqs(clusters["dst"], f"src.{topic}"))
    on_source = set(seqs(clusters["src"], topic))
    lost = feeder.acked - set(landed)
    said_lost, said_twice = reported(tool, run, logs)
    row = {"acknowledged": len(feeder.acked), "on_target": sum(landed.values()), "lost": len(lost),
           "lost_still_on_source": len(lost & on_source), "twice": sum(n - 1 for n in landed.values() if n > 1),
           "reported_lost": said_lost, "reported_twice": said_twice, "still_running": alive}
    print(f"{fault:24} {tool:12} " + ", ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    return row


def table(result: dict) -> list[str]:
    lines = ["| fault | replicator | acknowledged | lost (still on source) | reported lost | copied twice | "
             "reported twice | running after |", "|---|---|---|---|---|---|---|---|"]
    for fault, tools in result["drills"].items():
        for tool, r in tools.items():
            lines.append(f"| {fault} | {'MM2' if tool == 'mm2' else tool} | {r['acknowledged']:,} | {r['lost']:,} "
                         f"({r['lost_still_on_source']:,}) | {r['reported_lost']:,} | {r['twice']:,} | "
                         f"{r['reported_twice']:,} | {'yes' if r['still_running'] else 'no'} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--down-seconds", type=float, default=60.0)
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "fault-drills")
    args = parser.parse_args()
    local, clusters = fresh_clusters(args.work)
    result: dict = {"machine": machine(), "rate": args.rate, "down_seconds": args.down_seconds, "drills": {}}
    try:
        first = 0
        for fault in ("kill -9", "source down", "unread records deleted"):
            for tool in TOOLS:
                result["drills"].setdefault(fault, {})[tool] = drill(tool, fault, clusters, local, args.work, args,
                                                                     first)
                first += 100_000_000
    finally:
        local.down(purge=True)
    out = ROOT / "bench" / "results" / "fault_drills.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(table(result)))
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
