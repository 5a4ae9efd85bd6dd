"""What the control plane's requests cost through each client it can use: Kafka's Java clients in the
client JVM over py4j (the default, ADR 0024) against librdkafka (``mirrorspark.control.clients =
librdkafka``), on the same local broker.

Measured per client: the first answer of a new process (the client JVM's start included), a topic's
metadata, the end offsets of every partition of a topic, and sends the way offset syncs and
checkpoints go (small records with a delivery callback, then a flush); the client JVM's resident
memory at the end. Both clients are warm for the per-request figures (one request each first).

    .venv/bin/python bench/control_clients.py [--partitions 200] [--rounds 200] [--records 20000]

Writes bench/results/control_clients.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mm2_vs_mirrorspark import ROOT, create, machine

from mirrorspark.control.admin import admin_client, partition_offsets, producer
from mirrorspark.control.client_settings import java_conf
from mirrorspark.local import ClusterSpec, LocalClusters


def timed(call: Callable[[], object], times: int) -> list[float]:
    out = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    return out


def summary(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"median_ms": round(statistics.median(ordered), 2),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2), "requests": len(ordered)}


def sends(conf: dict, topic: str, records: int) -> dict:
    """``records`` offset-sync-sized records sent with a delivery callback each, then flushed."""
    sender = producer({**conf, "acks": "all", "linger.ms": 5})
    delivered = []
    sender.produce(topic, b"warm", b"warm", partition=0, on_delivery=lambda e, m: delivered.append(e))
    sender.flush(30)
    delivered.clear()
    value = bytes(40)
    started = time.perf_counter()
    for i in range(records):
        sender.produce(topic, value, b"key-%d" % (i % 500), partition=0,
                       on_delivery=lambda e, m: delivered.append(e))
        if i % 1000 == 999:
            sender.poll(0)
    left = sender.flush(60)
    seconds = time.perf_counter() - started
    assert left == 0 and len(delivered) == records and not any(delivered), "not every send was acknowledged"
    if hasattr(sender, "close"):
        sender.close()
    return {"records": records, "seconds": round(seconds, 3), "records_per_s": round(records / seconds)}


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--records", type=int, default=20000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="control-clients-"))
    local = LocalClusters(work / "clusters")
    try:
        bootstrap = local.up([ClusterSpec("src")])[0].bootstrap
        create(bootstrap, "measured", args.partitions)
        create(bootstrap, "syncs", 1)
        confs = {"java_over_py4j": java_conf({"bootstrap.servers": bootstrap}, []),
                 "librdkafka": {"bootstrap.servers": bootstrap}}
        results: dict[str, dict] = {}
        jvm_pid = None
        for name, conf in confs.items():  # Java first: its first answer includes the client JVM's start
            started = time.perf_counter()
            admin = admin_client(conf)
            admin.list_topics("measured", timeout=30)
            first = (time.perf_counter() - started) * 1000
            parts = [("measured", p) for p in range(args.partitions)]
            assert len(partition_offsets(admin, parts)) == args.partitions
            results[name] = {
                "first_answer_ms": round(first, 1),
                "metadata_one_topic": summary(timed(lambda a=admin: a.list_topics("measured", timeout=30),
                                                    args.rounds)),
                "end_offsets_all_partitions": summary(timed(lambda a=admin, ps=parts: partition_offsets(a, ps),
                                                            max(10, args.rounds // 10))),
                "sends": sends(conf, "syncs", args.records),
            }
            if name == "java_over_py4j":
                jvm_pid = admin._home.proc.pid
                results[name]["client_jvm_rss_mib"] = rss_mib(jvm_pid)
            if hasattr(admin, "close"):
                admin.close()
        report = {"machine": machine(), "partitions": args.partitions, "rounds": args.rounds, "results": results}
        out = ROOT / "bench" / "results" / "control_clients.json"
        out.write_text(json.dumps(report, indent=2) + "\n")
        for name, figures in results.items():
            print(name, json.dumps(figures))
        print(f"written {out.relative_to(ROOT)}")
    finally:
        local.down(purge=True)


if __name__ == "__main__":
    main()
