"""The operations guide's table of series is the one the code makes, and the dashboard and the guide
only name series the process really exports."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"


def generator():
    spec = importlib.util.spec_from_file_location("metrics_table", ROOT / "scripts" / "metrics_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_guides_table_is_generated_from_the_code():
    table = generator()
    guide = (DOCS / "operations.md").read_text()
    between = guide.split(table.BEGIN, 1)[1].split(table.END, 1)[0].strip()
    assert between == table.table(), "run: .venv/bin/python scripts/metrics_table.py --write"


def test_dashboard_and_guide_use_exported_metric_names():
    exported = {row.split("`")[1] for row in generator().table().splitlines()[2:]}
    histograms = {name for name in exported if name.endswith("_seconds") and f"| `{name}` | histogram" in
                  generator().table()}
    known = exported | {f"{h}{s}" for h in histograms for s in ("_bucket", "_sum", "_count")}
    dashboard = (DOCS / "grafana" / "mirrorspark.json").read_text()
    guide = (DOCS / "operations.md").read_text()
    used = set(re.findall(r"mirrorspark_[a-z_]+[a-z]", dashboard + guide))
    assert used and used <= known, sorted(used - known)
