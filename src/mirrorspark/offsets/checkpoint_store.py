"""The latest checkpoint per (group, remote topic, partition), reloaded from the target at start.

MM2 reloads its checkpoints topic on start (3.7.1+) so checkpoints stay monotonic across restarts;
mirrorspark does the same and applies MM2's "emit only if newer" rule against it.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from mirrorspark.control.admin import TopicMissing, read_to_end
from mirrorspark.formats import Checkpoint, RecordFormatError

log = logging.getLogger(__name__)

Key = tuple[str, str, int]


WARNED = 5  # malformed records named one by one per read; the rest are counted

Record = tuple["bytes | None", "bytes | None", int, int, int]  # key, value, partition, offset, timestamp ms


def read_compacted_topic(conf: dict[str, Any], topic: str, timeout: float = 30.0) -> list[Record]:
    """Every record of partition 0 of ``topic`` up to its end offset at call time ([] without the topic)."""
    try:
        return list(read_to_end(conf, topic, timeout, partitions=[0]))
    except TopicMissing:
        return []


def decode_checkpoints(topic: str, records: Iterable[Record]) -> tuple[list[tuple[Checkpoint, int]], int]:
    """The checkpoints of ``records`` with their timestamps, in order, and how many records were not
    checkpoints. Those are skipped (as MM2 does) but never silently: each of the first few is named
    by partition and offset in a warning, the rest counted in one."""
    out: list[tuple[Checkpoint, int]] = []
    skipped = 0
    for key, value, partition, offset, ts in records:
        try:
            if key is None:
                raise RecordFormatError("no key")
            if value is None:
                continue  # a tombstone: a deleted key of the compacted topic, not a malformed record
            out.append((Checkpoint.from_record(bytes(key), bytes(value)), int(ts)))
        except RecordFormatError as exc:
            skipped += 1
            if skipped <= WARNED:
                log.warning("%s[%d] offset %d is not a checkpoint and is skipped: %s", topic, partition, offset,
                            exc)
    if skipped > WARNED:
        log.warning("%s: %d malformed record(s) skipped in all", topic, skipped)
    return out, skipped


class CheckpointStore:
    """Latest checkpoints of one flow's checkpoints topic."""

    def __init__(self) -> None:
        self.latest: dict[Key, Checkpoint] = {}
        self.skipped = 0

    def load(self, conf: dict[str, Any], topic: str) -> None:
        """Read ``topic`` fully; malformed records are skipped and counted (``skipped``)."""
        records = read_compacted_topic(conf, topic)
        found, self.skipped = decode_checkpoints(topic, records)
        for checkpoint, _ in found:
            self.latest[(checkpoint.group, checkpoint.topic, checkpoint.partition)] = checkpoint

    def is_newer(self, checkpoint: Checkpoint) -> bool:
        """MM2's rule: first one, or the upstream group rewound, or the downstream offset advanced."""
        previous = self.latest.get((checkpoint.group, checkpoint.topic, checkpoint.partition))
        return (previous is None or checkpoint.upstream < previous.upstream
                or checkpoint.downstream > previous.downstream)

    def put(self, checkpoint: Checkpoint) -> None:
        self.latest[(checkpoint.group, checkpoint.topic, checkpoint.partition)] = checkpoint

    def retain(self, groups: set[str]) -> int:
        """Forget the checkpoints of groups not in ``groups`` (deleted, expired or filtered out on the
        source): memory stays bounded and group sync stops writing them. Returns groups forgotten."""
        gone = self.groups() - groups
        for key in [k for k in self.latest if k[0] in gone]:
            del self.latest[key]
        return len(gone)

    def groups(self) -> set[str]:
        return {group for group, _, _ in self.latest}

    def for_group(self, group: str) -> list[Checkpoint]:
        return [c for (g, _, _), c in sorted(self.latest.items()) if g == group]
