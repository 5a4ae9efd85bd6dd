"""Spark's offset and commit logs of a flow's query, read (and in one case rewritten) by mirrorspark.

``offsets/N`` holds the source end offsets batch N reads up to (written before it runs),
``commits/N`` says batch N finished. The start of batch N is the end of batch N-1. A batch with an
offsets entry but no commit was interrupted: Spark runs it again, over the same offsets, at start.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

from mirrorspark.errors import OperationalError
from mirrorspark.partition import Partition
from mirrorspark.state.files import StateFiles

Positions = dict[Partition, int]


def _source_line(lines: list[str]) -> tuple[int, dict, Positions] | None:
    """Where an offsets entry's source line is (after the version and metadata lines; one Kafka
    source per query), its JSON (topic -> partition -> offset) and its positions."""
    for index in range(2, len(lines)):
        try:
            sources = json.loads(lines[index])
            positions = {(topic, int(p)): int(o) for topic, partitions in sources.items()
                         for p, o in partitions.items()}
        except (ValueError, TypeError, AttributeError):
            continue
        return index, sources, positions
    return None


class OffsetLogUnreadable(OperationalError):
    """An entry of Spark's offset log is missing or has no source positions: loss detection, resume
    and the write marks all start from it, so nothing is written until it is repaired."""


# Where the grouped source keeps its query's first positions (``GroupedMicroBatchStream.keptInitial``).
KEPT_START = "mirrorspark-initial-offsets"


class SparkOffsetLog:
    """The checkpoint folder of one query."""

    def __init__(self, checkpoint: StateFiles) -> None:
        self.offsets, self.commits = checkpoint.child("offsets"), checkpoint.child("commits")
        self.first = checkpoint.child("sources").child("0")  # the query's one source: its kept first positions

    def align_first_positions(self, starting: str) -> bool:
        """Before a start with explicit positions (Spark's JSON): while no batch is planned, the grouped
        source starts from the positions the query's first start kept (``sources/0/KEPT_START``, so that
        "latest" does not move between starts), not from the ones given now. A takeover that failed
        after its query started, and was moved since (a remote topic deleted: refilled from the source's
        start), would then start from the old positions and skip the refill, uncounted. Each partition
        given an offset is set to it in the kept file; returns whether any changed."""
        if self._ids(self.offsets):
            return False
        text = self.first.read(KEPT_START)
        if not text or not text.strip():
            return False
        kept = json.loads(text)
        changed = False
        for topic, partitions in json.loads(starting).items():
            for partition, offset in partitions.items():
                held = kept.get(topic, {})
                if int(offset) >= 0 and str(partition) in held and int(held[str(partition)]) != int(offset):
                    held[str(partition)] = int(offset)
                    changed = True
        if changed:
            self.first.write(KEPT_START, json.dumps(kept, separators=(",", ":")))
            self.first.delete(f".{KEPT_START}.crc")  # Hadoop's local checksum of the old text
        return changed

    def kept_first_positions(self) -> Positions:
        """The positions the query's first start kept (``sources/0/KEPT_START``) while no batch is
        planned: where a start without explicit positions reads from. Empty once a batch is planned
        (Spark's offset log says then), or when nothing was kept."""
        if self._ids(self.offsets):
            return {}
        text = self.first.read(KEPT_START)
        if not text or not text.strip():
            return {}
        return {(topic, int(p)): int(o) for topic, partitions in json.loads(text).items()
                for p, o in partitions.items()}

    def _ids(self, files: StateFiles) -> list[int]:
        return sorted(int(name) for name in files.list() if name.isdigit())

    def entry(self, batch_id: int) -> tuple[str, Positions]:
        """Batch ``batch_id``'s end positions and their text (which names the batch exactly)."""
        lines, found = self._read(batch_id)
        return lines[found[0]], found[2]

    def _read(self, batch_id: int) -> tuple[list[str], tuple[int, dict, Positions]]:
        text = self.offsets.read(str(batch_id))
        lines = [] if text is None else text.splitlines()
        found = _source_line(lines)
        if found is None:
            what = "is missing" if text is None else "has no source offsets Spark could have written"
            raise OffsetLogUnreadable(
                f"{self.offsets.uri()}/{batch_id} {what}: batch {batch_id}'s positions cannot be known, so its "
                "records cannot be checked for loss or duplicates. Restore the file from a backup, or move the "
                "flow's checkpoint folder away to start over from the target's offset syncs")
        return lines, found

    def last_committed(self) -> int | None:
        ids = self._ids(self.commits)
        return ids[-1] if ids else None

    def pending(self) -> int | None:
        """The batch Spark will run again at start (planned, never committed), if any."""
        planned = self._ids(self.offsets)
        if not planned:
            return None
        committed = self.last_committed()
        return planned[-1] if committed is None or planned[-1] > committed else None

    def committed_positions(self) -> Positions:
        committed = self.last_committed()
        return {} if committed is None else self.entry(committed)[1]

    def rewind(self, topic: str, starts: Mapping[int, int], merge: bool = False) -> None:
        """Make the next batch read ``topic`` from ``starts`` (partition -> offset): a re-created
        topic is read from its beginning instead of from the old topic's offsets. Only entries
        from the last committed batch on are rewritten, while the query is stopped. ``merge``: only
        the partitions in ``starts`` move (a truncated partition), the others stay."""
        committed = self.last_committed()
        for batch in self._ids(self.offsets):
            if committed is not None and batch < committed:
                continue
            lines, found = self._read(batch)
            if topic in found[1]:
                index, sources, _ = found
                kept = sources[topic] if merge else {}
                sources[topic] = {**kept, **{str(p): o for p, o in sorted(starts.items())}}
                lines[index] = json.dumps(sources, separators=(",", ":"))
            self.offsets.write(str(batch), "\n".join(lines))
            self.offsets.delete(f".{batch}.crc")  # Hadoop's local checksum of the old text

    def advance(self, positions: Mapping[Partition, int]) -> dict[Partition, tuple[int, int]]:
        """Make the next batch read each partition from at least ``positions`` (records moved aside by
        ``reconcile`` are not read); other partitions are left as they are. Only entries from the
        last committed batch on are rewritten, while the query is stopped. Returns the committed
        positions moved: partition -> (before, after)."""
        committed = self.last_committed()
        moved: dict[Partition, tuple[int, int]] = {}
        for batch in self._ids(self.offsets):
            if committed is not None and batch < committed:
                continue
            lines, (index, sources, found) = self._read(batch)
            changed = False
            for (topic, partition), end in sorted(positions.items()):
                before = found.get((topic, partition))
                if before is None or before >= end:
                    continue
                sources[topic][str(partition)] = end
                changed = True
                if batch == committed:
                    moved[(topic, partition)] = (before, end)
            if changed:
                lines[index] = json.dumps(sources, separators=(",", ":"))
                self.offsets.write(str(batch), "\n".join(lines))
                self.offsets.delete(f".{batch}.crc")
        return moved
