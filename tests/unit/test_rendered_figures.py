"""Every benchmark figure in the README, docs/benchmarks.md and docs/sizing.md is the one its results file
holds: rendering the pages again from bench/results/ (bench/render_readme.py) changes nothing."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/benchmarks.md", "docs/sizing.md")


def test_the_pages_figures_are_their_results_files(tmp_path, monkeypatch):
    for page in PAGES:
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / page, tmp_path / page)
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("render_readme", ROOT / "bench" / "render_readme.py")
    assert spec is not None and spec.loader is not None
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)
    monkeypatch.setattr(render, "ROOT", tmp_path)
    monkeypatch.setattr(render, "RESULTS", ROOT / "bench" / "results")
    render.main()
    for page in PAGES:
        assert (tmp_path / page).read_text() == (ROOT / page).read_text(), \
            f"{page}: a figure differs from bench/results/; run .venv/bin/python bench/render_readme.py"
