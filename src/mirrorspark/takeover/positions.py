"""Where mirrorspark's first start of a flow resumes after MM2: just past the last record MM2 wrote.

MM2 commits its source positions every ``offset.flush.interval.ms``; records written after the last
commit are on the target but not in its offsets topic, and resuming at the committed position would
copy them twice. Its offset syncs say exactly where some source offset u landed on the target (d).
From a sync whose target record still exists, the target records d..end-1 are MM2's copies, in
order, of the source records from u on, if every pair compares equal (key, value, headers, and
timestamps where the target keeps the producer's): then the last of those source records is the
last one MM2 wrote, and the pairs are the exact mapping of that part of MM2's copy. The oldest
sync within the last ``WINDOW`` target records is tried first (a longer exact mapping), then the
newest. Otherwise the flow resumes after MM2's committed offset, and the records MM2 wrote after it
are counted as possibly copied twice. Between older syncs the mapping is what MM2 itself knows:
the synced record, and one past it for the records after (never ahead).

A copy cut before its first offset sync (a writer stopped during its first batch) has no sync at
all; when nothing synced is usable, the starts of both logs are tried as the anchor (a copy that
began at the source's first record), under the same record-by-record comparison.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from confluent_kafka import TIMESTAMP_CREATE_TIME, KafkaError, KafkaException, TopicPartition

from mirrorspark.control.admin import consumer, watermarks
from mirrorspark.partition import OffsetRun, Partition
from mirrorspark.takeover.mm2_state import TakeoverRefused

WINDOW = 100_000  # target records compared first: MM2's last records are mapped exactly this far back
MAX_TAIL = 1_000_000  # records read after the newest sync; beyond, the committed offset is used

Record = tuple[int, bytes | None, bytes | None, tuple, int | None]  # offset, key, value, headers, CreateTime


@dataclass
class PartitionTakeover:
    topic: str                      # source topic
    partition: int
    remote: str                     # remote topic on the target
    mm2_committed: int | None       # last source offset MM2 committed as replicated (None: never)
    target_end: int
    resume: int                     # first source offset mirrorspark copies
    method: str                     # how ``resume`` was found
    lost: int = 0                   # source records gone (retention) before ``resume`` was reached
    written_after_commit: int | None = 0  # records MM2 wrote past its commit (None: not known)
    copied_twice: int | None = 0          # of those, the ones mirrorspark will copy again (None: not known)
    # Source -> target mapping of MM2's copy: (run, continues the previous run exactly)
    runs: list[tuple[OffsetRun, bool]] = field(default_factory=list)

    def as_dict(self) -> dict:
        row = asdict(self)
        row.pop("runs")
        return row


def read_from(conf: dict[str, Any], topic: str, partition: int, start: int, count: int,
              timeout: float = 60.0) -> list[Record]:
    """Up to ``count`` records of one partition from ``start``, as far as its end when asked (fewer when
    it ends first; none when ``start`` is outside its log). Read in short polls up to the end offset
    read first: one long poll waits its whole timeout whenever the partition holds fewer records than
    asked, and a partition still written never says it reached its end; a stateless takeover's
    comparisons took 7.5 minutes so."""
    if count <= 0:
        return []
    reader = consumer({**conf, "group.id": "mirrorspark-takeover-reader", "enable.auto.commit": False,
                       "enable.partition.eof": True})
    out: list[Record] = []
    deadline = time.monotonic() + timeout
    try:
        low, high = watermarks(reader, TopicPartition(topic, partition), deadline=deadline)
        if not low <= start < high:
            return out
        count = min(count, high - start)
        reader.assign([TopicPartition(topic, partition, start)])
        while len(out) < count and time.monotonic() < deadline:
            batch = reader.consume(min(10_000, count - len(out)), min(1.0, max(0.0, deadline - time.monotonic())))
            for msg in batch:
                error = msg.error()
                if error:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return out
                    raise TakeoverRefused(f"reading {topic}[{partition}] failed: {error.str()}")
                offset = cast(int, msg.offset())  # set on every record
                if offset >= high:
                    return out  # written after the end read first (a gap of markers before it)
                kind, ts = msg.timestamp()
                out.append((offset, msg.key(), msg.value(), tuple(msg.headers() or ()),
                            ts if kind == TIMESTAMP_CREATE_TIME else None))
                if len(out) >= count or offset >= high - 1:
                    return out
    except KafkaException as exc:
        raise TakeoverRefused(f"reading {topic}[{partition}] failed: {exc.args[0].str()}") from None
    finally:
        reader.close()
    return out


def same(a: Record, b: Record) -> bool:
    """The same record (MM2 copies key, value, headers and the timestamp unchanged; a target with
    LogAppendTime sets its own timestamps, which are then not compared)."""
    return a[1:4] == b[1:4] and (a[4] is None or b[4] is None or a[4] == b[4])


def runs_of(offsets: list[int], downstream: int) -> list[OffsetRun]:
    """Source offsets written one after the other from ``downstream`` on, as contiguous runs."""
    runs: list[OffsetRun] = []
    for index, offset in enumerate(offsets):
        last = runs[-1] if runs else None
        if (last is not None and last.upstream + last.count == offset
                and last.downstream + last.count == downstream + index):
            runs[-1] = OffsetRun(last.upstream, last.downstream, last.count + 1)
        else:
            runs.append(OffsetRun(offset, downstream + index, 1))
    return runs


def history(syncs: list[tuple[int, int]], before: tuple[int, int], target_start: int) -> list[tuple[OffsetRun, bool]]:
    """What MM2's own syncs say about its copy before ``before``: each synced record, with an unknown
    gap after it (translated to one past it, as MM2 does: the records in between were not
    compared, and surviving syncs of a compacted topic prove no one-for-one copy)."""
    points = sorted({(u, d) for u, d in syncs if target_start <= d < before[1] and u < before[0]})
    return [(OffsetRun(u, d, 1), False) for u, d in points]


def _compared(source_conf: dict[str, Any], target_conf: dict[str, Any], topic: str, partition: int, remote: str,
              anchor: tuple[int, int], target_end: int) -> list[int] | None:
    """Source offsets of MM2's copies at anchor's target offset..end-1, if every pair compares equal."""
    upstream, downstream = anchor
    written = target_end - downstream
    source = read_from(source_conf, topic, partition, upstream, written)
    if len(source) != written or not source or source[0][0] != upstream:
        return None
    target = read_from(target_conf, remote, partition, downstream, written)
    if len(target) != written or not all(same(a, b) for a, b in zip(source, target, strict=True)):
        return None
    return [r[0] for r in source]


def current_remote_generation(syncs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The syncs (upstream, downstream; in the order they were written) made since the remote topic
    was last re-created: after the last one whose target offset went back. A remote topic deleted and
    filled again starts its offsets at 0, so syncs of the old one and of the new one share target
    offsets: an old one taken for the new topic's anchors a comparison that cannot match (the sixth
    hour's seventh soak: a flow no instance could take over without state) or a translation to records
    that are not there. A source topic re-created keeps the remote's offsets growing: not a cut."""
    cut = 0
    for i in range(1, len(syncs)):
        if syncs[i][1] < syncs[i - 1][1]:
            cut = i
    return syncs[cut:]


def locate(source_conf: dict[str, Any], target_conf: dict[str, Any], topic: str, partition: int, remote: str,
           mm2_committed: int | None, syncs: list[tuple[int, int]], target_start: int, target_end: int,
           source_start: int, source_end: int | None = None) -> PartitionTakeover:
    """The resume position of one source partition. ``source_end``, when known, tells a source topic
    re-created since the newest offset sync (its end is not past that sync's source offset). Only the
    syncs of the remote topic's current generation are read."""
    syncs = current_remote_generation(syncs)
    usable = sorted({(d, u) for u, d in syncs if target_start <= d < target_end})
    recreated = _recreated(source_conf, target_conf, topic, partition, remote, usable, source_start, source_end)
    candidates: list[tuple[int, int]] = []
    in_window = [(u, d) for d, u in usable if target_end - d <= WINDOW]
    if in_window:
        candidates.append(in_window[0])  # the oldest within the window: the longest exact mapping
    if usable and target_end - usable[-1][0] <= MAX_TAIL:
        candidates.append((usable[-1][1], usable[-1][0]))  # the newest: the fewest records to compare
    if not usable and target_end - target_start <= MAX_TAIL:
        candidates.append((source_start, target_start))  # cut before its first sync: both logs' starts
    for anchor in dict.fromkeys([] if recreated else candidates):
        offsets = _compared(source_conf, target_conf, topic, partition, remote, anchor, target_end)
        if offsets is None:
            continue
        after = sum(1 for o in offsets if mm2_committed is None or o > mm2_committed)
        compared = [(run, i > 0) for i, run in enumerate(runs_of(offsets, anchor[1]))]
        runs = history(syncs, anchor, target_start) + compared
        how = "offset sync" if any(anchor == (u, d) for d, u in usable) else "log starts"
        return PartitionTakeover(topic, partition, remote, mm2_committed, target_end, offsets[-1] + 1,
                                 f"{how} {anchor[0]}->{anchor[1]} and {len(offsets)} record(s) compared",
                                 written_after_commit=after, copied_twice=0, runs=runs)
    if mm2_committed is None and (past := _past_log_start(source_conf, target_conf, topic, partition, remote,
                                                          usable, target_start, target_end, source_start,
                                                          source_end, recreated)):
        return past
    resume = (mm2_committed + 1) if mm2_committed is not None else source_start
    method = ("MM2's committed offset (no offset sync anchors its last writes)" if mm2_committed is not None
              else "source log start (MM2 committed nothing for this partition)")
    unknown = target_end > target_start  # MM2 wrote something: how much of it after its commit is unknown
    return PartitionTakeover(topic, partition, remote, mm2_committed, target_end, resume, method,
                             lost=max(0, source_start - resume), written_after_commit=None if unknown else 0,
                             copied_twice=None if unknown else 0,
                             runs=history(syncs, (resume, target_end), target_start))


PAST_LOG_START = "source log start past the copy"  # how ``_past_log_start`` found the resume point
NEW_GENERATION = "source topic re-created since the copy's newest offset sync"


def _recreated(source_conf: dict[str, Any], target_conf: dict[str, Any], topic: str, partition: int, remote: str,
               usable: list[tuple[int, int]], source_start: int, source_end: int | None) -> bool:
    """The source partition is another log than the one the offset syncs were made from: its topic was
    deleted and made again. Either its offsets went back past the newest sync, unless an older sync's
    record is still the same on both sides (a log truncated by an unclean leader election, not a new
    topic); or the new topic has grown past that sync, the record at the newest sync's source offset
    is not its copy and was written after it, and so was the source's first record (a newer
    CreateTime than the newest synced copy: the whole log is younger than the copy). Older syncs are
    not asked: they may be an older generation's. A log cut short and written again keeps older
    first records; a copy a transformation changed or stamped later, and a topic written with old
    timestamps, are not taken for a new topic: the start is then refused, never guessed."""
    if not usable or source_end is None:
        return False
    if source_end <= usable[-1][1]:
        return not _still_on_source(source_conf, target_conf, topic, partition, remote, usable, source_start,
                                    source_end)
    # Only the newest sync tells which log the copy followed last: older ones may be an older
    # generation's (a remote topic holds every generation's copies), whose records always differ.
    newest = usable[-1]
    return source_start <= newest[1] < source_end \
        and _written_after_its_copy(source_conf, target_conf, topic, partition, remote, newest) \
        and _first_written_after_the_last_copy(source_conf, target_conf, topic, partition, remote, source_start,
                                                newest[0])


def _written_after_its_copy(source_conf: dict[str, Any], target_conf: dict[str, Any], topic: str, partition: int,
                            remote: str, sync: tuple[int, int]) -> bool:
    """The source's record at the sync's source offset is another record, written after the copy's."""
    downstream, upstream = sync
    source = read_from(source_conf, topic, partition, upstream, 1)
    target = read_from(target_conf, remote, partition, downstream, 1)
    if not (source and target) or source[0][0] != upstream or same(source[0], target[0]):
        return False
    created, copied = source[0][4], target[0][4]
    return created is not None and copied is not None and created > copied


def _first_written_after_the_last_copy(source_conf: dict[str, Any], target_conf: dict[str, Any], topic: str,
                                       partition: int, remote: str, source_start: int, last_synced: int) -> bool:
    """Even the source's first record was written after the copy's newest synced record: the whole log
    is younger than the copy (a log cut short by an unclean election and written again keeps its older
    first records; a transformation that stamps its copies later makes the copy the younger)."""
    first = read_from(source_conf, topic, partition, source_start, 1)
    copy = read_from(target_conf, remote, partition, last_synced, 1)
    if not (first and copy):
        return False
    created, copied = first[0][4], copy[0][4]
    return created is not None and copied is not None and created > copied


def _still_on_source(source_conf: dict[str, Any], target_conf: dict[str, Any], topic: str, partition: int,
                     remote: str, usable: list[tuple[int, int]], source_start: int, source_end: int) -> bool:
    """The newest sync whose source offset the source still has maps two equal records: the copy
    and the source are one log, whatever its end says."""
    inside = [(d, u) for d, u in usable if source_start <= u < source_end]
    if not inside:
        return False
    downstream, upstream = inside[-1]
    source = read_from(source_conf, topic, partition, upstream, 1)
    target = read_from(target_conf, remote, partition, downstream, 1)
    return bool(source and target) and source[0][0] == upstream and same(source[0], target[0])


def _past_log_start(source_conf: dict[str, Any], target_conf: dict[str, Any], topic: str, partition: int,
                    remote: str, usable: list[tuple[int, int]], target_start: int, target_end: int,
                    source_start: int, source_end: int | None = None,
                    recreated: bool = False) -> PartitionTakeover | None:
    """The source no longer has the records after the copy's newest offset sync (retention ran past it
    while no instance wrote the flow): they cannot be compared, but they cannot be copied either. The
    copy's last records are then found among the source's first ones (the records from the sync on
    end with a prefix of what the source still has); the flow resumes after them. When none of them
    is there, it resumes at the source's start and the records between the copy's end and that start
    are lost: at most ``start - (sync + copies after it)``, exactly that many when the source's
    offsets have no gaps (no transactions, no compaction).

    ``recreated``: the source partition's end is not past the newest sync's source offset, so its offsets
    went back (the topic was deleted and made again): the same search finds the copies of the new
    topic's first records after that sync; without any, the new topic is copied from its start, and
    only records retention removed from it before they were copied (its offsets below ``source_start``)
    are lost.
    None: no sync, the sync's record is still on the source (the records differ), or the tail is too long."""
    if not usable or (source_start <= usable[-1][1] and not recreated):
        return None  # no sync says where the copy was, or its record is still there (the records differ)
    newest = usable[-1]  # (downstream, upstream)
    tail_from = newest[0]
    written = target_end - tail_from
    if written <= 0 or written > MAX_TAIL:
        return None
    copied = read_from(target_conf, remote, partition, tail_from, written)
    available = written if source_end is None else min(written, max(0, source_end - source_start))
    still = read_from(source_conf, topic, partition, source_start, available) if available else []
    if len(copied) != written:
        return None
    first = still[0] if still else None
    matches = [at for at in range(len(copied)) if first is not None and same(first, copied[at])
               and len(copied) - at <= len(still)
               and all(same(a, b) for a, b in zip(still, copied[at:], strict=False))]
    if len(matches) > 1:
        return None  # repeating records: which suffix is the copy's cannot be told, so nothing is guessed
    how = NEW_GENERATION if recreated else PAST_LOG_START
    if matches:
        at = matches[0]
        offsets = [r[0] for r in still[:len(copied) - at]]
        return PartitionTakeover(topic, partition, remote, None, target_end, offsets[-1] + 1,
                                 f"{how}: its last {len(offsets)} record(s) found from source offset "
                                 f"{source_start}", copied_twice=0,
                                 runs=[(run, i > 0) for i, run in enumerate(runs_of(offsets, tail_from + at))])
    if recreated and written > 1 and not _older_than(copied, first):
        return None  # copies after the newest sync that are neither the new topic's first records nor older
    if recreated:  # none of the new topic's records was copied: all of them are, from its first
        return PartitionTakeover(topic, partition, remote, None, target_end, source_start,
                                 f"{how}: none of the new topic's records is on the target yet", lost=source_start,
                                 copied_twice=0)
    floor = newest[1] + written
    if floor > source_start:
        return None  # the copy may reach past the source's start: resuming there could copy records again
    return PartitionTakeover(topic, partition, remote, None, target_end, source_start,
                             f"{PAST_LOG_START}: none of its records is on the source any more",
                             lost=max(0, source_start - floor), copied_twice=0)


def _older_than(copies: list[Record], first: Record | None) -> bool:
    """Every copy was written before the new topic's first record (CreateTime): they are the old topic's
    last records, copied after its newest sync and before its deletion (the writer between two syncs).
    A new topic with no record yet has had none copied. Timestamps not kept (LogAppendTime): not known."""
    if first is None:
        return True
    return first[4] is not None and all(copy[4] is not None and copy[4] < first[4] for copy in copies)


def starting_offsets(positions: Mapping[Partition, int]) -> dict[str, dict[str, int]]:
    """Spark's ``startingOffsets`` JSON shape."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(positions.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out
