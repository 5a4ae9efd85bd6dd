"""Paired backlog copies on one pair of warm brokers: each mirrorspark variant, then the plain Java
replication ceiling over the same topic, in rounds with the variants' order rotating. A change to the
copy path is judged by its ratio to the ceiling measured right after it, never by an absolute rate
(the same binary has copied the 1 KiB backlog at 0.55x and 0.99x of the ceiling in two runs of
``make bench``: the brokers' JIT, page cache and neighbours move both).

    .venv/bin/python bench/backlog_pairs.py [--rounds 3] [--records 1000000] [--size 1024]
        [--variant NAME='KEY = VALUE;KEY = VALUE'] ... [--mm2]

A variant is a name and mm2.properties lines for mirrorspark only (none: the default build);
``--mm2`` adds real MM2 as one more variant. Prints each copy (with its start-up to the first
record) and the medians, and writes
bench/results/backlog_pairs.json (the commit and machine included).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mm2_vs_mirrorspark import ROOT, ceiling_copy, fresh_clusters, machine, median, run_replicator, shown, warm_brokers


def parse_variant(text: str) -> tuple[str, list[str]]:
    name, _, lines = text.partition("=")
    return name.strip(), [line.strip() for line in lines.split(";") if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--variant", action="append", default=[], metavar="NAME='KEY = VALUE;...'",
                        help="a mirrorspark variant: a name and extra mm2.properties lines ('default=' for none)")
    parser.add_argument("--mm2", action="store_true", help="real MM2 as one more variant")
    parser.add_argument("--cold", action="store_true", help="no warm-up copy before the first round")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "backlog_pairs.json")
    args = parser.parse_args()
    variants = [parse_variant(v) for v in args.variant] or [("default", [])]
    if args.mm2:
        variants.append(("mm2", []))

    work = ROOT / "state" / "bench-pairs"
    local, clusters = fresh_clusters(work)
    copies: list[dict] = []
    try:
        if not args.cold:
            print(json.dumps({"warm-up copy": round(warm_brokers(clusters, args.records, args.size, args.partitions,
                                                                 args.cores, work))}), flush=True)
        for number in range(1, args.rounds + 1):
            shift = (number - 1) % len(variants)
            for name, lines in variants[shift:] + variants[:shift]:
                tool = "mm2" if name == "mm2" else "mirrorspark"
                run = argparse.Namespace(records=args.records, size=args.size, partitions=args.partitions,
                                         cores=args.cores, timeout=args.timeout, extra=lines, steady_seconds=0,
                                         trickle_seconds=0, no_failover=True, realtime_batch_seconds=15,
                                         tag=f"-{name}-{number}")
                measured = run_replicator(tool, run, clusters, work)
                ceiling = ceiling_copy(clusters, f"backlog-{tool}{run.tag}", args.partitions, args.cores, work)
                copy = {"round": number, "variant": name, "records_per_second": measured["backlog_records_per_second"],
                        "second_half": measured["backlog_second_half_records_per_second"],
                        "peak_rss_mb": measured["peak_rss_mb"], "startup_seconds": measured["startup_seconds"],
                        "cpu_per_million": measured["backlog_cpu_seconds_per_million"],
                        "brokers_cpu_per_million": measured.get("brokers_cpu_seconds_per_million"),
                        "ceiling": round(ceiling.records_per_second),
                        "ceiling_cpu_per_million": round(ceiling.cpu_seconds * 1e6 / args.records, 2),
                        "ceiling_brokers_cpu_per_million": round(ceiling.brokers_cpu_seconds * 1e6 / args.records, 2)}
                copy["of_ceiling"] = round(copy["records_per_second"] / ceiling.records_per_second, 3)
                copies.append(copy)
                print(json.dumps(copy), flush=True)
    finally:
        local.down(purge=True)
    summary = {name: {"median_records_per_second": median([c["records_per_second"] for c in copies
                                                           if c["variant"] == name]),
                      "median_of_ceiling": median([c["of_ceiling"] for c in copies if c["variant"] == name]),
                      "median_startup_seconds": median([c["startup_seconds"] for c in copies if c["variant"] == name])}
               for name, _ in variants}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": machine(), "settings": {**vars(args), "out": shown(args.out)},
                                    "copies": copies, "medians": summary}, indent=2))
    print("| variant | median records/s | median of the ceiling | median start-up to first record, s |\n"
          "|---|---:|---:|---:|")
    for name, figures in summary.items():
        print(f"| {name} | {figures['median_records_per_second']:,.0f} | {figures['median_of_ceiling']:.2f}x | "
              f"{figures['median_startup_seconds']:.2f} |")
    print(f"written to {args.out}")


if __name__ == "__main__":
    sys.exit(main())
