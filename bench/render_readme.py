"""Renders the benchmark tables of docs/benchmarks.md and docs/sizing.md from the result files, so no
figure is typed by hand.

    .venv/bin/python bench/render_readme.py   # rewrites the parts of docs/benchmarks.md between the bench markers

Each table carries the command and the machine of the run it comes from (the commit stays in the results file).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_drills import table as faults_table
from mm2_vs_mirrorspark import (
    EXACTLY_ONCE,
    MM2_EXACTLY_ONCE,
    exactly_once_table,
    median,
    rounds_table,
    size_table,
    table,
)
from partition_scale import table as partition_table
from schema_rewrite import table as schemas_table

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def provenance(result: dict, command: str) -> str:
    m = result.get("machine", {})
    return (f"`{command}`, {m.get('cpus', '?')} cores ({m.get('cpu', '?')}), "
            f"pyspark {m.get('pyspark', '?')}, Kafka clients {m.get('kafka_clients', '?')}")


def section(name: str, body: list[str], text: str) -> str:
    start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"no {start} ... {end} markers in the page")
    return pattern.sub(lambda _: "\n".join([start, *body, end]), text)


def verdict(ratio: float, higher_is_better: bool, tolerance: float = 0.1) -> str:
    """better / same / worse for mirrorspark against MM2, within ``tolerance`` counting as the same."""
    gain = ratio if higher_is_better else 1 / ratio
    return "better" if gain > 1 + tolerance else "worse" if gain < 1 - tolerance else "same"


def measured_rows(mm2: dict, scale: dict | None) -> list[str]:
    """The README's measured comparison, one figure per measure, all from one results file each:
    `make bench` (mm2_vs_mirrorspark.json) and `make bench-partitions` (partition_scale.json)."""
    a, b = mm2["mm2"], mm2["mirrorspark"]
    rows = ["| measure | MM2 | mirrorspark | mirrorspark / MM2 |", "|---|---:|---:|---:|"]

    def row(name: str, left: str, right: str, ratio: float, higher_is_better: bool) -> None:
        rows.append(f"| **{verdict(ratio, higher_is_better)}**: {name} | {left} | {right} | {ratio:.2f}x |")

    fail_a, fail_b = a["failover"], b["failover"]
    rows.append(f"| **better**: records a failed-over group reads again | {fail_a['redelivered_records']:,} | "
                f"{fail_b['redelivered_records']:,} ({fail_b['skipped_records']:,} skipped) | - |")
    rounds = mm2.get("backlog_rounds") or []
    if rounds:
        ratio = median([r["mirrorspark"] / r["mm2"] for r in rounds])
        left, right = median([r["mm2"] for r in rounds]), median([r["mirrorspark"] for r in rounds])
        row(f"backlog copy, 1 KiB records (median of {len(rounds)} rounds)", f"{left:,.0f} records/s",
            f"{right:,.0f} records/s", ratio, True)
        cpu_a = median([r["mm2_cpu_per_million"] for r in rounds])
        cpu_b = median([r["mirrorspark_cpu_per_million"] for r in rounds])
        row("CPU per million 1 KiB records copied", f"{cpu_a:.1f} s", f"{cpu_b:.1f} s", cpu_b / cpu_a, False)
    for size, runs in sorted(mm2.get("sizes", {}).items(), key=lambda item: int(item[0])):
        x, y = runs["mm2"]["backlog_records_per_second"], runs["mirrorspark"]["backlog_records_per_second"]
        row(f"backlog copy, {int(size):,} B records", f"{x:,} records/s", f"{y:,} records/s", y / x, True)
    row("peak memory during the backlog", f"{a['peak_rss_mb']:,} MB", f"{b['peak_rss_mb']:,} MB",
        b["peak_rss_mb"] / a["peak_rss_mb"], False)
    rate = mm2["settings"]["rate"]
    for label, run in (("default mode", b), ("micro-batches", mm2.get("mirrorspark-microbatch"))):
        if run and run.get("steady"):
            row(f"latency p50 at {rate:,} records/s, {label}", f"{a['steady']['p50_ms']:.1f} ms",
                f"{run['steady']['p50_ms']:.1f} ms", run["steady"]["p50_ms"] / a["steady"]["p50_ms"], False)
            row(f"latency p99 at {rate:,} records/s, {label}", f"{a['steady']['p99_ms']:.1f} ms",
                f"{run['steady']['p99_ms']:.1f} ms", run["steady"]["p99_ms"] / a["steady"]["p99_ms"], False)
    eos, peer = mm2.get("mirrorspark-exactly-once"), mm2.get("mm2-exactly-once")
    eos_rounds = mm2.get("exactly_once_rounds") or []
    if eos_rounds:  # the same rounds' medians: single runs late in a long run moved with the brokers' state
        left, right = median([r[MM2_EXACTLY_ONCE] for r in eos_rounds]), median([r[EXACTLY_ONCE] for r in eos_rounds])
        row(f"exactly-once backlog copy, 1 KiB records, both exactly-once (median of {len(eos_rounds)} rounds)",
            f"{left:,.0f} records/s", f"{right:,.0f} records/s",
            median([r[EXACTLY_ONCE] / r[MM2_EXACTLY_ONCE] for r in eos_rounds]), True)
    if eos and peer:  # both with dst.exactly.once.source.support = enabled
        for mode, run in (("", eos), (", micro-batches", mm2.get("mirrorspark-microbatch-exactly-once"))):
            if not run:
                continue
            if not (eos_rounds and run is eos):
                row(f"exactly-once backlog copy, 1 KiB records, both exactly-once{mode}",
                    f"{peer['backlog_records_per_second']:,} records/s",
                    f"{run['backlog_records_per_second']:,} records/s",
                    run["backlog_records_per_second"] / peer["backlog_records_per_second"], True)
            if run.get("steady") and peer.get("steady"):
                for q in ("p50", "p99"):
                    ours, theirs = run["steady"][f"{q}_ms"], peer["steady"][f"{q}_ms"]
                    row(f"latency {q} at {rate:,} records/s, both exactly-once{mode}", f"{theirs:.1f} ms",
                        f"{ours:.1f} ms", ours / theirs, False)
    elif eos:
        row("exactly-once backlog copy, 1 KiB records (MM2: at least once)",
            f"{a['backlog_records_per_second']:,} records/s", f"{eos['backlog_records_per_second']:,} records/s",
            eos["backlog_records_per_second"] / a["backlog_records_per_second"], True)
    for count, run in sorted((scale or {}).get("runs", {}).items(), key=lambda item: int(item[0])):
        x, y = run["mm2"], run["mirrorspark"]
        row(f"full sync of {int(count):,} quiet partitions", f"{x['full_sync_seconds']:.1f} s",
            f"{y['full_sync_seconds']:.1f} s", y["full_sync_seconds"] / x["full_sync_seconds"], False)
        if x.get("idle_cpu_seconds_per_60s") and y.get("idle_cpu_seconds_per_60s"):
            row(f"idle CPU per minute, {int(count):,} quiet partitions", f"{x['idle_cpu_seconds_per_60s']:.1f} s",
                f"{y['idle_cpu_seconds_per_60s']:.1f} s", y["idle_cpu_seconds_per_60s"] / x["idle_cpu_seconds_per_60s"],
                False)
        if x.get("pulse") and y.get("pulse"):
            for q in ("p50", "p99"):
                row(f"latency {q} of one record a second, {int(count):,} quiet partitions",
                    f"{x['pulse'][f'{q}_ms']:.1f} ms", f"{y['pulse'][f'{q}_ms']:.1f} ms",
                    y["pulse"][f"{q}_ms"] / x["pulse"][f"{q}_ms"], False)
        if x.get("peak_rss_mb") and y.get("peak_rss_mb"):
            row(f"peak memory, {int(count):,} quiet partitions", f"{x['peak_rss_mb']:,} MB", f"{y['peak_rss_mb']:,} MB",
                y["peak_rss_mb"] / x["peak_rss_mb"], False)
    return rows


def fault_rows(faults: dict) -> list[str]:
    """The README's fault rows (`make bench-faults`): what each replicator lost or copied twice, and in
    brackets how much of it it reported. Better is fewer records lost or doubled without a report."""
    names = {"kill -9": "`kill -9` under load", "source down": f"source cluster down {faults['down_seconds']:.0f} s",
             "unread records deleted": "unread records deleted (as retention would)"}
    rows = []
    for fault, tools in faults["drills"].items():
        a, b = tools["mm2"], tools["mirrorspark"]

        def cell(r: dict) -> str:
            return (f"lost {r['lost']:,} ({r['reported_lost']:,} reported), twice {r['twice']:,} "
                    f"({r['reported_twice']:,} reported)" + ("" if r["still_running"] else ", stopped"))

        def silent(r: dict) -> int:
            return max(0, r["lost"] - r["reported_lost"]) + max(0, r["twice"] - r["reported_twice"]) + \
                (0 if r["still_running"] else 1)
        verdict_word = "better" if silent(b) < silent(a) else "worse" if silent(b) > silent(a) else "same"
        rows.append(f"| **{verdict_word}**: {names.get(fault, fault)} | {cell(a)} | {cell(b)} | - |")
    return rows


def schema_rows(schemas: dict) -> list[str]:
    """The README's schema rows (`make bench`, schema_rewrite.json): what a consumer on the target reads
    with the target's own registry, and the Avro copy's speed with every id rewritten against MM2's."""
    runs = schemas["runs"]
    mm2 = next(r for r in runs if r["name"].startswith("MM2"))
    rewritten = [r for r in runs if r["name"].endswith("rewritten")]
    best = max(rewritten, key=lambda r: r["readable"]["read"])
    rate = median([r["second_half_records_per_second"] for r in rewritten])
    read_mm2, read_ms = mm2["readable"], best["readable"]
    verdict_word = "better" if read_ms["read"] > read_mm2["read"] else "same"
    return [f"| **{verdict_word}**: Avro records a consumer on the target reads with the target's own registry | "
            f"{read_mm2['read']:,} of {read_mm2['records']:,} | {read_ms['read']:,} of {read_ms['records']:,} | - |",
            f"| **{verdict(rate / mm2['second_half_records_per_second'], True)}**: backlog copy of Avro records, "
            f"schema ids rewritten (MM2: copied as they are) | {mm2['second_half_records_per_second']:,} records/s | "
            f"{rate:,.0f} records/s | {rate / mm2['second_half_records_per_second']:.2f}x |"]


def readme_section(mm2: dict, scale: dict | None, faults: dict | None = None, schemas: dict | None = None) -> list[str]:
    provenance_line = provenance(mm2, "make bench") + ("; partitions: `make bench-partitions`" if scale else "") + \
        ("; faults: `make bench-faults`" if faults else "") + ("; schemas: `make bench-schemas`" if schemas else "")
    return [provenance_line, "", *measured_rows(mm2, scale), *(fault_rows(faults) if faults else []),
            *(schema_rows(schemas) if schemas else [])]


def sizing_rows(mm2: dict, scale: dict | None) -> list[str]:
    """What a deployment needs, from the same runs: CPU per volume by record size (the replicator alone,
    brokers apart) and memory by partition count."""
    rows = ["| record size | records/s (2 cores, backlog) | MB/s | CPU s per million records | cores per 100 MB/s |",
            "|---|---:|---:|---:|---:|"]
    runs = {1024: mm2["mirrorspark"], **{int(size): v["mirrorspark"] for size, v in mm2.get("sizes", {}).items()}}
    for size, run in sorted(runs.items()):
        cpu = run["backlog_cpu_seconds_per_million"]
        cores = cpu * 1000 / size * 0.1  # CPU seconds per GB, a tenth of it per second at 100 MB/s
        rows.append(f"| {size:,} B | {run['backlog_records_per_second']:,} | {run['backlog_mb_per_second']:.1f} | "
                    f"{cpu:.2f} | {cores:.2f} |")
    if scale:
        rows += ["", "| partitions (quiet, full sync) | peak memory of the process (1 GB driver) |", "|---:|---:|"]
        for count, run in sorted(scale["runs"].items(), key=lambda item: int(item[0])):
            rows.append(f"| {int(count):,} | {run['mirrorspark']['peak_rss_mb']:,} MB |")
    return rows


def main() -> None:
    if (RESULTS / "mm2_vs_mirrorspark.json").is_file():
        mm2 = json.loads((RESULTS / "mm2_vs_mirrorspark.json").read_text())
        scale = json.loads((RESULTS / "partition_scale.json").read_text()) \
            if (RESULTS / "partition_scale.json").is_file() else None
        faults = json.loads((RESULTS / "fault_drills.json").read_text()) \
            if (RESULTS / "fault_drills.json").is_file() else None
        schemas = json.loads((RESULTS / "schema_rewrite.json").read_text()) \
            if (RESULTS / "schema_rewrite.json").is_file() else None
        front = ROOT / "README.md"
        front.write_text(section("readme", readme_section(mm2, scale, faults, schemas), front.read_text()))
    sizing = ROOT / "docs" / "sizing.md"
    if sizing.is_file() and (RESULTS / "mm2_vs_mirrorspark.json").is_file():
        mm2 = json.loads((RESULTS / "mm2_vs_mirrorspark.json").read_text())
        scale = json.loads((RESULTS / "partition_scale.json").read_text()) \
            if (RESULTS / "partition_scale.json").is_file() else None
        sizing.write_text(section("sizing", [provenance(mm2, "make bench") + (
            "; partitions: `make bench-partitions`" if scale else ""), "", *sizing_rows(mm2, scale)],
            sizing.read_text()))
    readme = ROOT / "docs" / "benchmarks.md"
    text = readme.read_text()
    if (RESULTS / "mm2_vs_mirrorspark.json").is_file():
        mm2 = json.loads((RESULTS / "mm2_vs_mirrorspark.json").read_text())
        body = [provenance(mm2, "make bench"), "", *table(mm2)]
        if mm2.get("backlog_rounds"):
            body += ["", "The 1 KiB backlog copy in rounds over fresh topics, MM2 and mirrorspark alternating which "
                     "goes first, each copy followed at once by the plain loop over the same topic (the bold column is "
                     "the one the throughput goal is read from):", "", *rounds_table(mm2)]
        if mm2.get("exactly_once_rounds"):
            body += ["", "The 1 KiB backlog copy with and without exactly-once, in rounds over fresh topics, the order "
                     "turning each round (the bold columns are the ones the exactly-once goals are read from):", "",
                     *exactly_once_table(mm2)]
        if mm2.get("sizes"):
            body += ["", "Other record sizes (backlog copy only):", "", *size_table(mm2)]
        text = section("mm2", body, text)
    if (RESULTS / "partition_scale.json").is_file():
        scale = json.loads((RESULTS / "partition_scale.json").read_text())
        command = (f".venv/bin/python bench/partition_scale.py --partitions {scale['settings']['partitions']}"
                   + (" --idle-rounds" if scale["settings"].get("idle_rounds") else ""))
        text = section("partitions", [provenance(scale, command), "", *partition_table(scale)], text)
    if (RESULTS / "partition_scale_10000.json").is_file():  # the 10,000-partition size run alone (docs/benchmarks.md)
        scale = json.loads((RESULTS / "partition_scale_10000.json").read_text())
        command = (f".venv/bin/python bench/partition_scale.py --partitions {scale['settings']['partitions']} "
                   f"--sync-rounds {scale['settings']['sync_rounds']}")
        text = section("partitions-10000", [provenance(scale, command), "", *partition_table(scale)], text)
    if (RESULTS / "fault_drills.json").is_file():
        faults = json.loads((RESULTS / "fault_drills.json").read_text())
        text = section("faults", [provenance(faults, "make bench-faults") + f"; feed {faults['rate']:,} records/s, "
                                  f"source down {faults['down_seconds']:.0f} s", "", *faults_table(faults)], text)
    if (RESULTS / "schema_rewrite.json").is_file():
        schemas = json.loads((RESULTS / "schema_rewrite.json").read_text())
        cost = schemas["rewrite_over_plain"]
        text = section("schemas", [provenance(schemas, "make bench-schemas") + f"; {schemas['settings']['records']:,} "
                                   f"Avro records of about {schemas['settings']['body']:,} B per run", "",
                                   *schemas_table(schemas), "",
                                   f"Ids rewritten against the same copy without: {cost['records_per_second']:.2f}x "
                                   f"the records/s, {cost['cpu_seconds_per_million']:.2f}x the CPU per record."], text)
    readme.write_text(text)
    print(f"rendered {readme}")


if __name__ == "__main__":
    main()
