"""What this flow has written, per partition, kept in the state after every batch.

Two marks per partition, both tiny: the next source offset after the highest one written (a
record below it written again is a re-copy) and the target partition's end after this flow's last
write. The second lets a batch that a crash interrupted resume from what the target already
holds: the re-run compares its rows with the target records between that end and the target's
end now, and sends only what is not there (``MirrorDataWriter``, docs/adr/0005-data-integrity.md).
"""
from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterable, Mapping

from mirrorspark.partition import Partition
from mirrorspark.sink_report import WrittenRun
from mirrorspark.state.files import StateError, StateFiles


def _locked(method):
    """The batch thread and the topic-refresh thread both update the marks."""
    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)
    return guarded


def _key(topic: str, partition: int) -> str:
    return f"{topic}\t{partition}"


def _unkey(key: str) -> Partition:
    topic, partition = key.rsplit("\t", 1)
    return topic, int(partition)


def _unreadable(files: StateFiles, name: str, why: str) -> StateError:
    """Read as "no marks", a damaged file would have the interrupted batch written again whole and
    its re-copies counted nowhere; so the flow stops until a person restores or removes it."""
    return StateError(f"{files.uri()}/{name} is unreadable ({why}): it holds what this flow has written. "
                      "Restore it, or remove it to go on without it: records of an interrupted batch are then "
                      "written again, and records copied again after this restart are not counted")


def _parsed(text: str, files: StateFiles, name: str) -> dict:
    """The JSON object of a marks file; an empty file (a write a power loss cut short) is damaged too."""
    if not text.strip():
        raise _unreadable(files, name, "the file is empty")
    try:
        found = json.loads(text)
    except ValueError as exc:
        raise _unreadable(files, name, f"not JSON: {exc}") from None
    if not isinstance(found, dict):
        raise _unreadable(files, name, f"a JSON {type(found).__name__}, not an object")
    return found


class WriteMarks:
    """Source and target marks of one flow; ``batch``/``planned`` name the batch they include."""

    FILE = "write-marks.json"

    def __init__(self, files: StateFiles) -> None:
        self.files = files
        self._lock = threading.RLock()
        self.source_next: dict[str, int] = {}
        self.target_end: dict[str, int] = {}
        self.before: dict[str, int] = {}  # target ends before batch ``batch`` wrote
        self.batch: int | None = None
        self.planned: str | None = None
        text = files.read(self.FILE)
        if text is None:
            return  # a flow that has written nothing yet
        found = _parsed(text, files, self.FILE)
        try:
            self.source_next = {k: int(v) for k, v in found.get("source_next", {}).items()}
            self.target_end = {k: int(v) for k, v in found.get("target_end", {}).items()}
            self.before = {k: int(v) for k, v in found.get("before", {}).items()}
            self.batch, self.planned = found.get("batch"), found.get("planned")
        except (ValueError, AttributeError, TypeError) as exc:
            raise _unreadable(files, self.FILE, str(exc)) from None

    @_locked
    def save(self) -> None:
        self.files.write(self.FILE, json.dumps({
            "batch": self.batch, "planned": self.planned, "source_next": self.source_next,
            "target_end": self.target_end, "before": self.before}))

    @_locked
    def unknown_targets(self, partitions: Iterable[Partition]) -> list[Partition]:
        return [p for p in partitions if _key(*p) not in self.target_end]

    @_locked
    def learn_targets(self, ends: Mapping[Partition, int]) -> None:
        """Target ends of partitions this flow has not written yet, recorded before it writes them."""
        for (topic, partition), end in ends.items():
            self.target_end[_key(topic, partition)] = end
            self.before[_key(topic, partition)] = end
        self.save()

    @_locked
    def resume_from(self, batch_id: int, planned: str) -> dict[Partition, int]:
        """Where an interrupted attempt of ``batch_id`` started writing, per target partition."""
        marks = self.before if (self.batch == batch_id and self.planned == planned) else self.target_end
        return {_unkey(k): v for k, v in marks.items()}

    @_locked
    def starts_of(self, batch_id: int, planned: str, targets: Iterable[Partition]) -> dict[Partition, int]:
        """``resume_from`` for ``targets`` only (those a batch writes to, not every partition)."""
        marks = self.before if (self.batch == batch_id and self.planned == planned) else self.target_end
        out = {}
        for target in targets:
            mark = marks.get(_key(*target))
            if mark is not None:
                out[target] = mark
        return out

    @_locked
    def batch_written(self, batch_id: int, planned: str, runs: Iterable[WrittenRun],
                      source_of: Mapping[str, str]) -> dict[Partition, int]:
        """Fold a written batch in (``source_of``: remote topic -> source topic); returns per
        remote partition how many records had been written before (re-copies)."""
        folded = self.batch == batch_id and self.planned == planned  # written whole, then interrupted
        if not folded:
            self.before = dict(self.target_end)
        again: dict[Partition, int] = {}
        for row in runs:
            if not row.written:
                continue
            remote = (row.topic, row.partition)
            key = _key(source_of.get(row.topic, row.topic), row.partition)
            run = row.run
            mark = self.source_next.get(key, 0)
            repeated = max(0, min(run.upstream_end, mark) - run.upstream)
            if repeated and not folded:  # a folded batch's re-run counts its re-copies in the sink
                again[remote] = again.get(remote, 0) + repeated
            self.source_next[key] = max(mark, run.upstream_end)
            target = _key(*remote)
            self.target_end[target] = max(self.target_end.get(target, 0), run.downstream_end)
        self.batch, self.planned = batch_id, planned
        self.save()
        return again

    @_locked
    def source_marks(self, topic: str) -> dict[int, int]:
        """Per partition of source ``topic``: the next offset after the highest one written."""
        return {_unkey(k)[1]: v for k, v in self.source_next.items() if _unkey(k)[0] == topic}

    @_locked
    def target_marks(self, targets: Iterable[Partition]) -> dict[Partition, int]:
        """The end each target partition had after this flow's last write to it (known ones only)."""
        out = {}
        for target in targets:
            mark = self.target_end.get(_key(*target))
            if mark is not None:
                out[target] = mark
        return out

    @_locked
    def forget_source(self, topic: str) -> None:
        """A re-created source topic starts again at its own offsets."""
        self.source_next = {k: v for k, v in self.source_next.items() if _unkey(k)[0] != topic}
        self.save()

    @_locked
    def move_source(self, topic: str, partition: int, next_offset: int) -> None:
        """A truncated source partition is read on from ``next_offset``, below what was written."""
        self.source_next[_key(topic, partition)] = next_offset
        self.save()

    @_locked
    def reset_target(self, topic: str, ends: Mapping[int, int]) -> None:
        """A re-created remote topic: its ends now, as a partition never written."""
        for partition, end in ends.items():
            self.target_end[_key(topic, partition)] = end
            self.before[_key(topic, partition)] = end
        self.save()

    @_locked
    def written_to(self, topics: Iterable[str]) -> dict[str, dict[int, int]]:
        """Per remote topic and partition: records this flow wrote to it (its end after the last write).
        One pass over the marks for every topic: the identity check asks for all of them each round."""
        out: dict[str, dict[int, int]] = {topic: {} for topic in topics}
        for key, end in self.target_end.items():
            topic, partition = _unkey(key)
            if topic in out:
                out[topic][partition] = end
        return out
