"""Where mirrorspark's first start of a flow resumes after MM2: just past the last record MM2 wrote.

MM2 commits its source positions every ``offset.flush.interval.ms``; records written after the last
commit are on the target but not in its offsets topic, and resuming at the committed position would
copy them twice. Its offset syncs say exactly where some source offset u landed on the target (d).
From the newest sync whose target record still exists, the target records d..end-1 are MM2's
copies, in order, of the source records from u on: the k-th of those source records is the last
one MM2 wrote. Both ends are compared (key, value, headers) before it is trusted; otherwise the
flow resumes after MM2's committed offset and the records MM2 wrote after it are counted as
copied twice.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import KafkaError, TopicPartition

from mirrorspark.control.admin import consumer
from mirrorspark.offsets.ranges import Run

MAX_TAIL = 1_000_000  # records read from the source after a sync; beyond, the committed offset is used

Record = tuple[int, bytes | None, bytes | None, tuple]  # offset, key, value, headers


@dataclass
class PartitionTakeover:
    topic: str                      # source topic
    partition: int
    remote: str                     # remote topic on the target
    mm2_committed: int | None       # last source offset MM2 committed as replicated (None: never)
    target_end: int
    resume: int                     # first source offset mirrorspark copies
    method: str                     # how ``resume`` was found
    written_after_commit: int | None = 0  # records MM2 wrote past its commit (None: not known)
    copied_twice: int | None = 0          # of those, the ones mirrorspark will copy again (None: not known)
    # Source -> target mapping of MM2's copy: (run, continues the previous run exactly)
    runs: list[tuple[Run, bool]] = field(default_factory=list)

    def as_dict(self) -> dict:
        row = asdict(self)
        row.pop("runs")
        return row


def read_from(conf: dict[str, Any], topic: str, partition: int, start: int, count: int,
              timeout: float = 60.0) -> list[Record]:
    """Up to ``count`` records of one partition from ``start`` (fewer when the partition ends first)."""
    if count <= 0:
        return []
    reader = consumer({**conf, "group.id": "mirrorspark-takeover-reader", "enable.auto.commit": False,
                       "enable.partition.eof": True})
    out: list[Record] = []
    try:
        reader.assign([TopicPartition(topic, partition, start)])
        while len(out) < count:
            batch = reader.consume(min(10_000, count - len(out)), timeout)
            if not batch:
                break
            for msg in batch:
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        return out
                    raise RuntimeError(f"reading {topic}[{partition}] failed: {msg.error().str()}")
                out.append((msg.offset(), msg.key(), msg.value(), tuple(msg.headers() or ())))
                if len(out) >= count:
                    break
    finally:
        reader.close()
    return out


def same(a: Record, b: Record) -> bool:
    """The same record content (MM2 copies key, value and headers unchanged)."""
    return a[1:] == b[1:]


def runs_of(offsets: list[int], downstream: int) -> list[Run]:
    """Source offsets written one after the other from ``downstream`` on, as contiguous runs."""
    runs: list[Run] = []
    for index, offset in enumerate(offsets):
        last = runs[-1] if runs else None
        if last is not None and last.upstream + last.count == offset and last.downstream + last.count == downstream + index:
            runs[-1] = Run(last.upstream, last.downstream, last.count + 1)
        else:
            runs.append(Run(offset, downstream + index, 1))
    return runs


def history(syncs: list[tuple[int, int]], anchor: tuple[int, int], target_start: int
            ) -> tuple[list[tuple[Run, bool]], bool]:
    """Runs from MM2's offset syncs up to ``anchor``: between two syncs whose source and target
    distances agree every record in between was copied one for one (an exact run); elsewhere only
    the synced record is known, and the gap after it translates to one past it (never ahead)."""
    points = sorted({(u, d) for u, d in syncs if target_start <= d and u <= anchor[0] and d <= anchor[1]})
    if not points or points[-1] != anchor:
        points.append(anchor)
    out: list[tuple[Run, bool]] = []
    exact = False
    for (u1, d1), (u2, d2) in zip(points, points[1:]):
        if u2 > u1 and u2 - u1 == d2 - d1:
            out.append((Run(u1, d1, u2 - u1), exact))
            exact = True
        else:
            out.append((Run(u1, d1, 1), exact))
            exact = False
    return out, exact


def locate(source_conf: dict[str, Any], target_conf: dict[str, Any], topic: str, partition: int, remote: str,
           mm2_committed: int | None, syncs: list[tuple[int, int]], target_start: int, target_end: int,
           source_start: int) -> PartitionTakeover:
    """The resume position of one source partition."""
    fallback = (mm2_committed + 1) if mm2_committed is not None else source_start
    anchors = sorted((u, d) for u, d in syncs if target_start <= d < target_end)
    if anchors:
        upstream, downstream = anchors[-1]
        written = target_end - downstream
        if written <= MAX_TAIL:
            source = read_from(source_conf, topic, partition, upstream, written)
            if len(source) == written and source[0][0] == upstream:
                target = read_from(target_conf, remote, partition, downstream, written)
                if len(target) == written and same(source[0], target[0]) and same(source[-1], target[-1]):
                    offsets = [r[0] for r in source]
                    after = sum(1 for o in offsets if mm2_committed is None or o > mm2_committed)
                    before, exact = history(syncs, (upstream, downstream), target_start)
                    tail = runs_of(offsets, downstream)
                    runs = before + [(run, exact if i == 0 else True) for i, run in enumerate(tail)]
                    return PartitionTakeover(topic, partition, remote, mm2_committed, target_end, offsets[-1] + 1,
                                             f"offset sync {upstream}->{downstream} and {written} record(s) compared",
                                             after, 0, runs)
    method = ("MM2's committed offset (no offset sync to anchor its last writes)" if mm2_committed is not None
              else "source log start (MM2 committed nothing for this partition)")
    return PartitionTakeover(topic, partition, remote, mm2_committed, target_end, max(fallback, source_start),
                             method, None, None)


def starting_offsets(positions: Mapping[tuple[str, int], int]) -> dict[str, dict[str, int]]:
    """Spark's ``startingOffsets`` JSON shape."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(positions.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out
