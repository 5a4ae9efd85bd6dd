"""A flow's offset ranges kept in its state location, so translation survives restarts and moves.

Each batch writes one numbered file with the rows of the partitions it touched (and what they are
bound to: the remote topic's name and id), before Spark
commits the batch; loading replays the files in order (later rows of a partition replace earlier
ones). Every ``SNAPSHOT_EVERY`` files the whole mapping is written as a snapshot and the files
before it are deleted, so loading reads a bounded number of small files. A crash between two
writes leaves the previous file set: translation falls back to older runs, never ahead.
"""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable

from mirrorspark.offsets.ranges import DEFAULT_MAX_RUNS, Binding, OffsetRanges, RangeRow
from mirrorspark.partition import OffsetRun, Partition
from mirrorspark.state.files import StateFiles

log = logging.getLogger(__name__)

SNAPSHOT_EVERY = 200


def _name(seq: int) -> str:
    return f"{seq:020d}.json"


def _row(fields: list) -> RangeRow:
    upstream, downstream, count, exact = fields
    return RangeRow(OffsetRun(int(upstream), int(downstream), int(count)), bool(exact))


def _fields(row: RangeRow) -> list:
    """A run as a file keeps it: ``[upstream, downstream, count, exact gap after]``."""
    return [row.run.upstream, row.run.downstream, row.run.count, row.exact_gap_after]


def _parse(text: str | None) -> dict | None:
    """A range-log file's body, or None when it is missing or not what ``save`` writes."""
    try:
        body = json.loads(text or "")
        partitions = [(str(t), int(p), [_row(fields) for fields in rows], Binding.from_json(bound))
                      for t, p, rows, bound in body["partitions"]]
        return {"snapshot": bool(body.get("snapshot")), "partitions": partitions}
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


class RangeLog:
    def __init__(self, files: StateFiles) -> None:
        self.files = files
        self._next = 0
        self._since_snapshot = 0
        # The batch thread saves after each batch and the control thread after a topic change: without
        # it two saves took one file number, or a snapshot deleted the file another save was writing.
        self._lock = threading.Lock()

    def load(self, max_runs_per_partition: int = DEFAULT_MAX_RUNS) -> OffsetRanges:
        ranges = OffsetRanges(max_runs_per_partition)
        entries: list[tuple[int, dict]] = []
        for name in self.files.list():
            stem = name.removesuffix(".json")
            if not stem.isdigit():
                continue
            body = _parse(self.files.read(name))
            if body is None:
                log.error("offset ranges: %s/%s is damaged and skipped; translation of what it held falls back "
                          "to older runs (never ahead) and checkpoints for it may pause", self.files.uri(), name)
                continue
            entries.append((int(stem), body))
        entries.sort(key=lambda e: e[0])
        start = max((i for i, (_, body) in enumerate(entries) if body["snapshot"]), default=0)
        for _, body in entries[start:]:
            for topic, partition, rows, binding in body["partitions"]:
                ranges.restore(topic, partition, rows, binding)
        if entries:
            self._next = entries[-1][0] + 1
            self._since_snapshot = len(entries) - start
        return ranges

    def save(self, ranges: OffsetRanges, partitions: Iterable[Partition]) -> None:
        """The rows of ``partitions``; every SNAPSHOT_EVERY saves, all of them, and older files go.
        Saves are serialised, and each reads the rows under the lock, so a later file never holds
        older rows than an earlier one."""
        with self._lock:
            self._save(ranges, partitions)

    def _save(self, ranges: OffsetRanges, partitions: Iterable[Partition]) -> None:
        snapshot = self._since_snapshot >= SNAPSHOT_EVERY
        chosen = ranges.partitions() if snapshot else sorted(set(partitions))
        body = {"snapshot": snapshot,
                "partitions": [[t, p, [_fields(r) for r in ranges.rows(t, p)], ranges.binding(t, p).as_json()]
                               for t, p in chosen]}
        seq = self._next
        self.files.write(_name(seq), json.dumps(body, separators=(",", ":")))
        self._next += 1
        self._since_snapshot += 1
        if snapshot:
            self._since_snapshot = 1
            for name in self.files.list():
                stem = name.removesuffix(".json")
                if stem.isdigit() and int(stem) < seq:
                    self.files.delete(name)

