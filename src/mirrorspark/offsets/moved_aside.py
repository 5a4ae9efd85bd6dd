"""The source records ``reconcile`` moved aside from a flow, kept in the flow's state folder
(``moved-aside.json``): the offset mapping marks them only until the flow copies again, and
``audit`` must still know they are not missing on the target but kept in the side topics.
"""
from __future__ import annotations

import json
import time

from mirrorspark.partition import Partition
from mirrorspark.state.files import StateError, StateFiles

FILE = "moved-aside.json"
Ranges = dict[Partition, list[tuple[int, int]]]  # source partition -> [first, end) ranges


def load(files: StateFiles) -> Ranges:
    """The ranges kept; an unreadable file is an error naming it (a count built on it would be wrong)."""
    text = files.read(FILE)
    if not text:
        return {}
    try:
        out: Ranges = {}
        for entry in json.loads(text):
            out.setdefault((entry["topic"], int(entry["partition"])), []).append(
                (int(entry["first"]), int(entry["end"])))
        return out
    except (ValueError, KeyError, TypeError) as exc:
        raise StateError(f"{files.uri()}/{FILE} cannot be read ({exc}): restore it from the reports in "
                         "<state-dir>/reconcile/") from None


def record(files: StateFiles, topic: str, partition: int, first: int, end: int) -> None:
    """Add ``[first, end)`` of the partition, merged with a range it overlaps or touches."""
    ranges = load(files)
    kept = ranges.setdefault((topic, partition), [])
    for index, (lo, hi) in enumerate(kept):
        if first <= hi and lo <= end:
            kept[index] = (min(lo, first), max(hi, end))
            break
    else:
        kept.append((first, end))
    body = [{"topic": t, "partition": p, "first": lo, "end": hi, "recorded": time.time()}
            for (t, p), spans in sorted(ranges.items()) for lo, hi in sorted(spans)]
    files.write(FILE, json.dumps(body, indent=1))
