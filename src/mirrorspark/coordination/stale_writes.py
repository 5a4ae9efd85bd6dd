"""Records a paused writer sent after it lost its flow: found, and the copies made twice counted.

The write fence (ADR 0011) is checked before each send. Records a JVM had already handed to its
Kafka producer when it was stopped still leave when it runs again, after another instance took the
flow over and may have copied the same source records: Kafka has no conditional append outside
transactions, so they cannot be held back. They are counted instead. The JVM keeps the target
offsets acknowledged after the lease's deadline (``io.mirrorspark.sink.Fences``); when the flow is
left, each such target partition is read from the first offset another writer can have written,
and a late record whose twin (same key, value, headers and timestamp) is also there is a copy made
twice: a WARNING and ``mirrorspark_records_recopied_total`` say so.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirrorspark.control.admin import consumer

log = logging.getLogger(__name__)

SCAN_LIMIT = 2_000_000  # records per partition read to find twins; beyond it, `audit` counts them


@dataclass(frozen=True)
class LateWrites:
    """One target partition's records acknowledged after the lease's deadline."""

    topic: str
    partition: int
    scan_from: int  # every offset before it was acknowledged in time; -1 when not known
    offsets: tuple[int, ...]
    dropped: int  # late records beyond those the JVM kept

    @property
    def count(self) -> int:
        return len(self.offsets) + self.dropped


@dataclass(frozen=True)
class StaleReport:
    late: int
    doubled: dict[tuple[str, int], int]
    unchecked: int  # late records whose twins were not looked for (too far apart, unreadable, not kept)


def parse(text: str) -> tuple[bool, list[LateWrites]]:
    """``Fences.lateWrites``' JSON: whether the producers finished sending, and the partitions."""
    data = json.loads(text)
    return bool(data["flushed"]), [
        LateWrites(p["topic"], int(p["partition"]), int(p["from"]), tuple(int(o) for o in p["offsets"]),
                   int(p["dropped"])) for p in data["partitions"]]


def digest(key: bytes | None, value: bytes | None, headers: Iterable[tuple[str, str | bytes | None]],
           timestamp: int | None) -> bytes:
    """What makes two target records copies of one source record (MM2 keeps all four)."""
    h = hashlib.blake2b(digest_size=16)
    for part in (key, value):
        h.update(b"-" if part is None else b"+%d:" % len(part) + part)
    for name, data in headers:
        raw = name.encode()
        h.update(b"h%d:" % len(raw) + raw)
        body = data.encode() if isinstance(data, str) else data
        h.update(b"-" if body is None else b"+%d:" % len(body) + body)
    h.update(b"t%d" % (-1 if timestamp is None else timestamp))
    return h.digest()


def twins(records: Iterable[tuple[int, bytes]], late: set[int]) -> int:
    """How many ``late`` offsets hold a record that another offset of ``records`` holds too."""
    seen: Counter[bytes] = Counter()
    at: dict[int, bytes] = {}
    for offset, content in records:
        seen[content] += 1
        if offset in late:
            at[offset] = content
    return sum(1 for content in at.values() if seen[content] > 1)


def _read(conf: dict[str, Any], topic: str, partition: int, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    reader = consumer({**conf, "group.id": "mirrorspark-stale-writes", "enable.auto.commit": False,
                       "enable.partition.eof": True})
    try:
        reader.assign([TopicPartition(topic, partition, start)])
        while True:
            batch = reader.consume(10_000, 10.0)
            if not batch:
                raise OSError(f"reading {topic}[{partition}] from {start} made no progress for 10 s")
            for msg in batch:
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return
                    raise KafkaException(error)
                offset = cast(int, msg.offset())
                if offset >= end:
                    return
                yield offset, digest(msg.key(), msg.value(), cast(list, msg.headers() or []), msg.timestamp()[1])
                if offset >= end - 1:
                    return
    finally:
        reader.close()


def count(conf: dict[str, Any], items: list[LateWrites], limit: int = SCAN_LIMIT) -> StaleReport:
    """Read each partition and count the late records with a twin."""
    doubled: dict[tuple[str, int], int] = {}
    unchecked = 0
    probe = consumer({**conf, "group.id": "mirrorspark-stale-writes", "enable.auto.commit": False})
    try:
        for index, item in enumerate(items):
            unchecked += item.dropped
            if not item.offsets:
                continue
            try:
                low, high = probe.get_watermark_offsets(TopicPartition(item.topic, item.partition), timeout=15)
                start = max(low, min(item.scan_from if item.scan_from >= 0 else low, min(item.offsets)))
                if high - start > limit:
                    raise OSError(f"{high - start} records from offset {start} (more than {limit} are not read)")
                found = twins(_read(conf, item.topic, item.partition, start, high), set(item.offsets))
            except KafkaException as exc:  # the target out of reach: the other partitions would wait as long
                log.warning("late writes not checked for copies made twice: the target does not answer: %s", exc)
                unchecked += sum(i.count for i in items[index:]) - item.dropped
                break
            except OSError as exc:
                log.warning("late writes to %s[%d] not checked for copies made twice: %s", item.topic,
                            item.partition, exc)
                unchecked += len(item.offsets)
                continue
            if found:
                doubled[(item.topic, item.partition)] = found
    finally:
        probe.close()
    return StaleReport(sum(i.count for i in items), doubled, unchecked)


def report(flow: str, text: str | None, conf: dict[str, Any],
           count_recopied: Callable[[Mapping[tuple[str, int], int]], None]) -> StaleReport | None:
    """Count and say what this instance sent after it lost ``flow`` (``text``: ``Fences.lateWrites``)."""
    if not text:
        return None
    flushed, items = parse(text)
    if not items:
        return None
    found = count(conf, items)
    total = sum(found.doubled.values())
    if total:
        count_recopied(found.doubled)
    where = ", ".join(f"{t}[{p}]: {n}" for (t, p), n in sorted(found.doubled.items()))
    message = (f"flow {flow}: {found.late} record(s) this instance had handed to its producer before it lost the "
               "flow (stopped or paused past its lease) reached the target after the lease's deadline; "
               + (f"{total} of them are copies the instance now writing the flow made too: copied twice ({where}; "
                  "counted in mirrorspark_records_recopied_total)" if total else
                  "none of them is also a copy by another writer"))
    if found.unchecked or not flushed:
        message += (f"; {found.unchecked} late record(s) could not be checked"
                    + ("" if flushed else ", and more may still be sent") + ": `mirrorspark audit` counts them")
    (log.warning if total or found.unchecked or not flushed else log.info)(
        "%s. Exactly-once writes (transactions) would fence such records", message)
    return found
