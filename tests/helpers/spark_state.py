"""A flow's Spark checkpoint folder read directly: the last batch planned (offsets) or committed (commits),
and how many records the committed batches cover."""
from __future__ import annotations

import json
from pathlib import Path


def latest(checkpoint: Path, log: str) -> int:
    return max((int(p.name) for p in (checkpoint / log).iterdir() if p.name.isdigit()), default=-1)


def committed_records(checkpoint: Path, topic: str) -> int:
    """Records of ``topic`` up to the end offsets of the last batch Spark committed (all start at 0)."""
    batches = [int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()]
    if not batches:
        return 0
    lines = (checkpoint / "offsets" / str(max(batches))).read_text().splitlines()
    ends = json.loads(lines[2]).get(topic, {})
    return sum(int(offset) for offset in ends.values())
