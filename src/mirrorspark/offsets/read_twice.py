"""What a failover would read a second time on a topic both clusters write (active/active on the
same names), per group and partition, as the checkpoint task last worked it out.

One offset cannot say how far a consumer read the records of two clusters that are interleaved
differently on each side; the checkpoint takes the lower position so nothing is skipped, and the
records read again are counted here so ``failover`` can say how many. Kept in the flow's state
folder (``read-twice.json``) because ``failover`` runs in another process, often while the old
cluster is down.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from mirrorspark.state.files import StateFiles

log = logging.getLogger(__name__)

FILE = "read-twice.json"
Key = tuple[str, str, int]  # group, topic on the target, partition


def save(files: StateFiles, figures: Mapping[Key, tuple[int, int]]) -> None:
    """``figures``: (group, topic, partition) -> (the group's committed source offset, records read twice)."""
    body = [{"group": g, "topic": t, "partition": p, "upstream": u, "read_twice": n}
            for (g, t, p), (u, n) in sorted(figures.items())]
    files.write(FILE, json.dumps(body))


def load(files: StateFiles) -> dict[Key, tuple[int, int]]:
    """What ``save`` kept; empty when there is none or it cannot be read (a warning says so)."""
    text = files.read(FILE)
    if not text:
        return {}
    try:
        return {(e["group"], e["topic"], int(e["partition"])): (int(e["upstream"]), int(e["read_twice"]))
                for e in json.loads(text)}
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("%s/%s is unreadable (%s); records a failover reads twice are not shown", files.uri(), FILE, exc)
        return {}
