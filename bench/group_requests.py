"""What a consumer-group request costs through each client the control plane has: Kafka's Java Admin
client in the driver JVM over py4j (what the running process uses, ADR 0024) against librdkafka
(what the short commands use), on the same local broker.

Groups with committed offsets on a topic of ``--partitions`` partitions are read ``--rounds`` times
each way (a checkpoint round reads each group once); listing and describing too, one group a request
and every group in one request (a group offset sync round). Both clients are
warm (one request each before timing). The figures are the median and 95th percentile per request,
in milliseconds.

    .venv/bin/python bench/group_requests.py [--groups 20] [--partitions 200] [--rounds 10]

Writes bench/results/group_requests.json.
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

from mirrorspark.control.admin import admin_client
from mirrorspark.control.groups import JavaGroups, RdkafkaGroups
from mirrorspark.jvm_bridge import SparkJvm
from mirrorspark.local import ClusterSpec, LocalClusters
from mirrorspark.pipeline.spark_session import build_session


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="group-requests-"))
    local = LocalClusters(work / "clusters")
    try:
        bootstrap = local.up([ClusterSpec("src")])[0].bootstrap
        create(bootstrap, "measured", args.partitions)
        rdkafka = RdkafkaGroups(admin=admin_client({"bootstrap.servers": bootstrap}), cluster="src")
        groups = [f"group-{i}" for i in range(args.groups)]
        for group in groups:
            rdkafka.commit(group, {("measured", p): (p + 1, "") for p in range(args.partitions)})
        session = build_session({"spark.master": "local[1]"})
        jvm = SparkJvm(session=session)
        java = JavaGroups(admin=lambda: jvm.group_admin({"bootstrap.servers": bootstrap}), cluster="src")
        results: dict[str, dict] = {}
        for name, client in (("java_admin_over_py4j", java), ("librdkafka", rdkafka)):
            assert sorted(client.ids()) == groups, name  # warm, and the same answer
            assert client.committed(groups[0]) == rdkafka.committed(groups[0]), name
            results[name] = {
                "committed": summary([t for _ in range(args.rounds) for group in groups
                                      for t in timed(lambda g=group, c=client: c.committed(g), 1)]),
                "describe": summary([t for _ in range(args.rounds) for group in groups
                                     for t in timed(lambda g=group, c=client: c.describe(g), 1)]),
                # A group offset sync round: every group in one request (``describe_all``), per round.
                "describe_all_groups": summary(timed(lambda c=client: c.describe_all(groups), args.rounds)),
                "ids": summary(timed(client.ids, args.rounds)),
            }
        java.close()
        session.stop()
        report = {"machine": machine(), "groups": args.groups, "partitions": args.partitions, "rounds": args.rounds,
                  "results": results}
        out = ROOT / "bench" / "results" / "group_requests.json"
        out.write_text(json.dumps(report, indent=2) + "\n")
        for name, figures in results.items():
            print(name, {k: (v["median_ms"], v["p95_ms"]) for k, v in figures.items()})
        print(f"written {out.relative_to(ROOT)}")
    finally:
        local.down(purge=True)


if __name__ == "__main__":
    main()
