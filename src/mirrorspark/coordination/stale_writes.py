"""Records a paused writer sent after it lost its flow: found, and the copies made twice counted.

The write fence (ADR 0011) is checked before each send. Records a JVM had already handed to its
Kafka producer when it was stopped still leave when it runs again, after another instance took the
flow over and may have copied the same source records: Kafka has no conditional append outside
transactions, so they cannot be held back. They are counted instead. The JVM keeps the target
offsets acknowledged after the lease's deadline (``io.mirrorspark.sink.Fences``); when the flow is
left, each such target partition is read from the first offset another writer can have written,
and a late record paired with a twin written by another writer (same key, value and headers) is a
copy made twice: a WARNING and ``mirrorspark_records_recopied_total`` say so.

The timestamp is not compared: a LogAppendTime target stamps each copy when it lands, and a source
record without a timestamp is stamped by the producer when sent, so two copies of one source
record differ there. Nor is one search enough: the new writer may copy the same source records
after the old one left, and the old producer may still deliver. So the search is repeated
(``LateWatch``) until every late record has its twin or the window ends: the old producer's
delivery timeout (it cannot deliver later) plus a lease timeout for the new writer's batch. A writer
that cannot copy within the window (the target down, itself stopped and taken over) copies them
later: past the window the search waits until the flow's offset syncs show a writer has copied
beyond the late records' source offsets, then looks once more (the ninth soak run: 6 copies made
twice after a window of 130 s, none said).
"""
from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirrorspark.control.admin import consumer
from mirrorspark.partition import Partition

log = logging.getLogger(__name__)

SCAN_LIMIT = 2_000_000  # records per partition read to find twins; late records beyond it `audit` counts
ROUNDS = (5.0, 10.0, 20.0, 30.0)  # seconds between searches; the last repeats until the window ends
DELIVERY_TIMEOUT_MS = 120_000  # the Java producer's default delivery.timeout.ms
WRITER_WAIT = 3600.0  # seconds past the window to wait for a writer to copy past the late records


@dataclass(frozen=True)
class LateWrites:
    """One target partition's records acknowledged after the lease's deadline."""

    topic: str
    partition: int
    scan_from: int  # every offset before it was acknowledged in time; -1 when not known
    offsets: tuple[int, ...]
    dropped: int  # late records beyond those the JVM kept
    upstream: int = -1  # the source offset after the last one the late records copy; -1 when not known

    @property
    def count(self) -> int:
        return len(self.offsets) + self.dropped


@dataclass(frozen=True)
class StaleReport:
    late: int
    doubled: dict[Partition, int]
    unchecked: int  # late records whose twins were not looked for (too far apart, unreadable, not kept)


def parse(text: str) -> tuple[bool, list[LateWrites]]:
    """``Fences.lateWrites``' JSON: whether the producers finished sending, and the partitions."""
    data = json.loads(text)
    return bool(data["flushed"]), [
        LateWrites(p["topic"], int(p["partition"]), int(p["from"]), tuple(int(o) for o in p["offsets"]),
                   int(p["dropped"]), int(p.get("upstream", -1))) for p in data["partitions"]]


def digest(key: bytes | None, value: bytes | None, headers: Iterable[tuple[str, str | bytes | None]]) -> bytes:
    """What two copies of one source record share on any target: key, value and headers (with
    whatever provenance they carry); not the timestamp, which the broker or producer may set."""
    h = hashlib.blake2b(digest_size=16)
    for part in (key, value):
        h.update(b"-" if part is None else b"+%d:" % len(part) + part)
    for name, data in headers:
        raw = name.encode()
        h.update(b"h%d:" % len(raw) + raw)
        body = data.encode() if isinstance(data, str) else data
        h.update(b"-" if body is None else b"+%d:" % len(body) + body)
    return h.digest()


def twins(records: Iterable[tuple[int, bytes]], late: set[int]) -> int:
    """How many ``late`` offsets pair with a record at another offset holding the same content, each
    other record paired once: a source that repeats a record does not make every late copy a twin."""
    stale: Counter[bytes] = Counter()
    others: Counter[bytes] = Counter()
    for offset, content in records:
        (stale if offset in late else others)[content] += 1
    return sum(min(n, others[content]) for content, n in stale.items())


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
                yield offset, digest(msg.key(), msg.value(), cast(list, msg.headers() or []))
                if offset >= end - 1:
                    return
    finally:
        reader.close()


def count(conf: dict[str, Any], items: list[LateWrites], limit: int = SCAN_LIMIT) -> StaleReport:
    """Read each partition and count the late records with a twin."""
    doubled: dict[Partition, int] = {}
    unchecked = 0
    probe = consumer({**conf, "group.id": "mirrorspark-stale-writes", "enable.auto.commit": False})
    try:
        for index, item in enumerate(items):
            unchecked += item.dropped
            if not item.offsets:
                continue
            try:
                low, high = probe.get_watermark_offsets(TopicPartition(item.topic, item.partition), timeout=15)
                # Every in-time acknowledgement of a partition precedes its late ones (one producer writes it in
                # order): a scan start past the first late record is of another remote topic under the same
                # name (deleted and re-created since), and the twins may lie anywhere after the log start.
                scan_from = item.scan_from if 0 <= item.scan_from <= min(item.offsets) else low
                start = max(low, scan_from)
                # The new writer's twins follow the first offset it can have written: a range that grew on
                # while the search is repeated is read as far as the limit, never refused as a whole.
                end = min(high, start + limit)
                late = {o for o in item.offsets if o < end}
                if len(late) < len(item.offsets):
                    log.warning("late writes to %s[%d] beyond offset %d not checked for copies made twice (more than "
                                "%d records from offset %d)", item.topic, item.partition, end, limit, start)
                    unchecked += len(item.offsets) - len(late)
                found = twins(_read(conf, item.topic, item.partition, start, end), late) if late else 0
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


def window(*, lease_timeout: float, producer: Mapping[str, str]) -> float:
    """Seconds after leaving in which a late record or its twin can still appear: the old producer
    delivers for at most its ``delivery.timeout.ms`` once it runs again, and the new writer gets one
    lease timeout more to copy the same source records (its batches wait for lease confirmations too)."""
    try:
        delivery = int(str(producer.get("delivery.timeout.ms", DELIVERY_TIMEOUT_MS)).strip()) / 1000
    except ValueError:  # the producer refuses such a value at start: the flow never sent anything
        delivery = DELIVERY_TIMEOUT_MS / 1000
    return delivery + lease_timeout


def _merge(old: LateWrites, new: LateWrites) -> LateWrites:
    """One partition's late records from two of the JVM's lists (each list is cleared once read)."""
    scan_from = -1 if -1 in (old.scan_from, new.scan_from) else min(old.scan_from, new.scan_from)
    upstream = -1 if -1 in (old.upstream, new.upstream) else max(old.upstream, new.upstream)
    return replace(old, scan_from=scan_from, offsets=tuple(sorted(set(old.offsets) | set(new.offsets))),
                   dropped=old.dropped + new.dropped, upstream=upstream)


class LateWatch:
    """The search for twins of one flow's late records, repeated until each has its twin, nothing
    more can arrive, or the window ends; only copies not counted before are added to the metric."""

    def __init__(self, *, flow: str, conf: dict[str, Any], window: float, collect: Callable[[int], str | None],
                 count_recopied: Callable[[Mapping[Partition, int]], None],
                 copied_past: Callable[[list[LateWrites]], bool] | None = None, writer_wait: float = WRITER_WAIT,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``copied_past``: whether a writer of the flow has copied past each partition's late records
        (the newest offset syncs, ``upstream``); None when the flow keeps no offset syncs: the window
        alone bounds the search then. ``writer_wait``: how long past the window to wait for it."""
        self.flow = flow
        self.conf = conf
        self.window = window
        self._collect = collect  # the JVM's late records since the last call (``FlowLease.late_writes``)
        self._count_recopied = count_recopied
        self._clock = clock
        self._copied_past = copied_past
        self.writer_wait = writer_wait
        self.waited = False  # the window ended before a writer had copied past the late records
        self._passed = False  # a writer has copied past them since: the next search is the last
        self.deadline = clock() + window
        self._items: dict[Partition, LateWrites] = {}
        self._flushed = True
        self._counted: dict[Partition, int] = {}  # copies made twice already added to the metric
        self.searches = 0
        self.last: StaleReport | None = None
        self._finished = False  # the search ended: ``add`` refuses further lists
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, text: str | None, *, left_again: bool = False) -> bool:
        """Fold in a ``Fences.lateWrites`` list (None: the JVM is gone and sends nothing more);
        ``left_again``: the flow was taken back and lost once more, so the window starts anew.
        False when the search has ended: the list is for a new watch then."""
        flushed, items = parse(text) if text else (True, [])
        with self._lock:
            if self._finished:
                return False
            self._flushed = flushed
            for item in items:
                where = (item.topic, item.partition)
                self._items[where] = _merge(self._items[where], item) if where in self._items else item
            if left_again:
                self.deadline = max(self.deadline, self._clock() + self.window)
                self.waited = self._passed = False
        return True

    def pending(self) -> bool:
        """Something to look for: late records known, or sends still under way."""
        with self._lock:
            return bool(self._items) or not self._flushed

    def settled(self) -> bool:
        """Every late record the JVM kept has its twin and the producers have sent all they held:
        no later search can find more."""
        with self._lock:
            return self._settled()

    def _settled(self) -> bool:
        return self._flushed and all(self._counted.get(where, 0) >= len(item.offsets)
                                     for where, item in self._items.items())

    def search(self) -> StaleReport:
        """One search: the late records known so far, their twins on the target, the new ones counted."""
        if self.searches:
            self.add(self._collect(2_000))
        with self._lock:
            items = list(self._items.values())
        found = count(self.conf, items)
        self.searches += 1
        self.last = found
        with self._lock:
            added = {where: n - self._counted.get(where, 0) for where, n in found.doubled.items()
                     if n > self._counted.get(where, 0)}
            self._counted.update({where: found.doubled[where] for where in added})
        if added:
            self._count_recopied(added)
        (self._first_said if self.searches == 1 else self._more_said)(found, added)
        return found

    def run(self) -> None:
        """Search now, then again with growing pauses until settled, the window's end, or ``stop``; past
        the window, wait (without searching) while no writer has copied past the late records, then
        search once more."""
        pauses = iter(ROUNDS)
        pause = ROUNDS[-1]
        search = True
        while True:
            if search:
                try:
                    self.search()
                except Exception:  # a bug in one search must not hide what was already said
                    log.exception("flow %s: searching late writes for copies made twice failed", self.flow)
            with self._lock:
                settled, left = self._settled(), self.deadline - self._clock()
                self._finished = settled
            if settled:
                return
            if left > 0:
                search, pause = True, next(pauses, pause)
                if self._wait(min(pause, left)):
                    return
                continue
            behind = not self._passed and self._writer_behind()
            with self._lock:  # decided with ``add`` held off: a list added now is searched, or refused
                if self.deadline - self._clock() > 0:
                    continue  # the flow was left again meanwhile: a new window
                over = self._clock() >= self.deadline + self.writer_wait
                if behind and not over:
                    search = False
                elif not behind and self.waited and not self._passed:
                    search = self._passed = True  # a writer has copied past them since: one more search
                    continue
                else:
                    self._finished = True
            if self._finished:
                self._final_said(cut_short=False, behind=behind)
                return
            if not self.waited:
                self.waited = True
                log.info("flow %s: %.0f s after the flow was left, no writer has yet copied past this instance's "
                         "late records: the search for copies made twice waits for one (up to %.0f s more)",
                         self.flow, self.window, self.writer_wait)
            if self._wait(ROUNDS[-1]):
                return

    def _wait(self, seconds: float) -> bool:
        """Pause; True when the process stops meanwhile (what is unpaired is said)."""
        if not self._stop.wait(seconds):
            return False
        with self._lock:
            self._finished = True
        self._final_said(cut_short=True)
        return True

    def _writer_behind(self) -> bool:
        """Some late record's twin can still be written: no writer has copied past its source offset.
        False without offset syncs or source offsets to compare; True when the syncs cannot be read."""
        with self._lock:
            items = [item for where, item in self._items.items()
                     if item.upstream >= 0 and self._counted.get(where, 0) < len(item.offsets)]
        if self._copied_past is None or not items:
            return False
        try:
            return not self._copied_past(items)
        except Exception as exc:  # noqa: BLE001 - unknown: keep waiting, up to the limit
            log.debug("flow %s: the offset syncs could not be read: %s", self.flow, exc)
            return True

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name=f"mirrorspark-late-writes {self.flow}", daemon=True)
        self._thread.start()

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 15.0) -> None:
        """The process stops: no further search; what is still unpaired is said."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _first_said(self, found: StaleReport, added: Mapping[Partition, int]) -> None:
        total = sum(found.doubled.values())
        where = ", ".join(f"{t}[{p}]: {n}" for (t, p), n in sorted(found.doubled.items()))
        message = (f"flow {self.flow}: {found.late} record(s) this instance had handed to its producer before it "
                   "lost the flow (stopped or paused past its lease) reached the target after the lease's deadline; "
                   + (f"{total} of them are copies the instance now writing the flow made too: copied twice ({where}; "
                      "counted in mirrorspark_records_recopied_total)" if total else
                      "none of them is also a copy by another writer so far"))
        settled = self.settled()
        if not settled:
            message += (f"; the search goes on for up to {self.window:.0f} s, as the other writer may still copy the "
                        "same source records" + ("" if self._flushed else " and more late records may still be sent"))
        elif found.unchecked:
            message += f"; {found.unchecked} late record(s) could not be checked: `mirrorspark audit` counts them"
        (log.warning if total or (settled and found.unchecked) else log.info)(
            "%s. Exactly-once writes (transactions) would fence such records", message)

    def _more_said(self, found: StaleReport, added: Mapping[Partition, int]) -> None:
        if not added:
            return
        where = ", ".join(f"{t}[{p}]: {n}" for (t, p), n in sorted(added.items()))
        log.warning("flow %s: %d more late record(s) of this instance are copies the instance now writing the flow "
                    "made since: copied twice (%s; counted in mirrorspark_records_recopied_total)", self.flow,
                    sum(added.values()), where)

    def _final_said(self, cut_short: bool, behind: bool = False) -> None:
        found = self.last
        if found is None:
            return
        total = sum(self._counted.values())
        dropped = sum(item.dropped for item in self._items.values())
        unpaired = sum(len(item.offsets) for item in self._items.values()) - total - (found.unchecked - dropped)
        if cut_short:
            how = f"the search was cut short after {self.searches} search(es) (this process stops)"
        elif behind:  # a twin can still come: what is unpaired is in doubt
            how = (f"the search ended {self.window + self.writer_wait:.0f} s after the flow was left, before any "
                   "writer had copied past them")
            cut_short = True
        else:
            how = (f"{unpaired} had no twin when the search ended, "
                   + ("after a writer had copied past them" if self.waited else
                      f"{self.window:.0f} s after the flow was left"))
        message = (f"flow {self.flow}: late records of this instance: {found.late}, "
                   + (f"copied twice {total} (counted in mirrorspark_records_recopied_total)" if total else
                      "none also copied by another writer") + f"; {how}")
        doubt = found.unchecked + (unpaired if cut_short else 0)
        if doubt or not self._flushed:
            message += (f"; {doubt} late record(s) could not be checked"
                        + ("" if self._flushed else ", and more may have been sent")
                        + ": `mirrorspark audit` counts them")
        (log.warning if total or doubt or not self._flushed else log.info)("%s", message)
