"""The dashboard and the operations guide only name metrics the process really exports."""
from __future__ import annotations

import re
from pathlib import Path

from mirrorspark.metrics.registry import MirrorMetrics

DOCS = Path(__file__).resolve().parents[3] / "docs"


def exported() -> set[str]:
    names = set()
    for family in MirrorMetrics().registry.collect():
        names.add(family.name)
        names.update(f"{family.name}{suffix}" for suffix in ("_total", "_created"))
    return names


def test_dashboard_and_guide_use_exported_metric_names():
    known = exported()
    dashboard = (DOCS / "grafana" / "mirrorspark.json").read_text()
    guide = (DOCS / "operations.md").read_text()
    used = set(re.findall(r"mirrorspark_[a-z_]+", dashboard + guide))
    expanded = set()
    for name in used:  # the guide writes mirrorspark_x_{min,max,avg}
        expanded |= {name + s for s in ("min", "max", "avg")} if name.endswith("_") else {name}
    assert expanded and expanded <= known, sorted(expanded - known)
