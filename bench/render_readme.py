"""Renders the benchmark tables of docs/benchmarks.md from the result files, so no figure is typed by hand.

    .venv/bin/python bench/render_readme.py   # rewrites the parts of docs/benchmarks.md between the bench markers

Each table carries the command and the machine of the run it comes from (the commit stays in the results file).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mm2_vs_mirrorspark import rounds_table, size_table, table
from partition_scale import table as partition_table

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
        raise SystemExit(f"docs/benchmarks.md has no {start} ... {end} markers")
    return pattern.sub(lambda _: "\n".join([start, *body, end]), text)


def main() -> None:
    readme = ROOT / "docs" / "benchmarks.md"
    text = readme.read_text()
    if (RESULTS / "mm2_vs_mirrorspark.json").is_file():
        mm2 = json.loads((RESULTS / "mm2_vs_mirrorspark.json").read_text())
        body = [provenance(mm2, "make bench"), "", *table(mm2)]
        if mm2.get("backlog_rounds"):
            body += ["", "The 1 KiB backlog copy in rounds over fresh topics, MM2 and mirrorspark alternating which "
                     "goes first, each copy followed at once by the ceiling over the same topic (the bold column is "
                     "the one the throughput goal is read from):", "", *rounds_table(mm2)]
        if mm2.get("sizes"):
            body += ["", "Other record sizes (backlog copy only):", "", *size_table(mm2)]
        text = section("mm2", body, text)
    if (RESULTS / "partition_scale.json").is_file():
        scale = json.loads((RESULTS / "partition_scale.json").read_text())
        command = f".venv/bin/python bench/partition_scale.py --partitions {scale['settings']['partitions']}"
        text = section("partitions", [provenance(scale, command), "", *partition_table(scale)], text)
    readme.write_text(text)
    print(f"rendered {readme}")


if __name__ == "__main__":
    main()
