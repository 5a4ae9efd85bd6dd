"""Source offset ranges that can no longer be replicated, reported loudly and kept in the state.

A range is lost when records were removed before they were copied (retention, ``deleteRecords``,
an unclean leader election truncating a partition), when a topic was deleted and re-created (a new
topic id) before its tail was copied, or when a remote topic vanished from the target. Every report
is an ERROR log line, ``mirrorspark_records_lost_total`` and an entry in the flow's
``data-loss.json`` (read by ``status``, the REST API and ``audit``).

Each lost record counts once, whichever check sees it first: a report names the offsets it covers
in one log (a source topic's partition, or a remote topic's partition by its topic id), and only
the offsets no earlier report covered are counted. Several checks see the same loss (the batch's
source check and the topic-identity check, a check retried after it failed half-way), and a count
that can double is as misleading as one that misses.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

from mirrorspark.partition import kafka_topic_ref
from mirrorspark.state.files import StateFiles

log = logging.getLogger(__name__)

FILE = "data-loss.json"
KEPT = 1000  # newest reports kept in the file; the metric keeps the total


@dataclass(frozen=True)
class Span:
    """Offsets ``start .. end - 1`` of one partition of one log: ``source <topic>@<topic id>`` or
    ``target <remote topic>@<topic id>``. A re-created topic is another log: its offsets start again
    at 0, and a loss in the new topic is not the old one's seen again. (``source <topic>``, without
    an id, when the id is not known.)"""

    log: str
    start: int
    end: int

    @staticmethod
    def source(topic: str, first: int, last: int, topic_id: str | None = None) -> Span:
        return Span(f"source {topic}@{topic_id}" if topic_id else f"source {topic}", first, last + 1)

    @staticmethod
    def target(remote: str, topic_id: str, start: int, end: int) -> Span:
        return Span(f"target {remote}@{topic_id}", start, end)


@dataclass(frozen=True)
class LossReport:
    """Source offsets ``first .. last`` (inclusive) of ``topic``/``partition`` that were not copied;
    ``records`` counts offsets (a transaction marker in the range counts as one) not counted by an
    earlier report. ``log``/``start``/``end`` are the span counted (``log`` empty: none known)."""

    flow: str
    topic: str
    partition: int
    first: int
    last: int
    records: int
    reason: str
    time: float
    log: str = ""
    start: int = -1
    end: int = -1

    def line(self) -> str:
        where = f" at source offsets {self.first}..{self.last}" if self.first >= 0 else ""
        return (f"flow {self.flow}: DATA LOSS: {self.records} record(s) of {self.topic}[{self.partition}]{where} "
                f"are lost: {self.reason}")

    def span(self) -> Span | None:
        return Span(self.log, self.start, self.end) if self.log else None


def uncovered(span: Span, covered: Iterable[Span]) -> int:
    """How many offsets of ``span`` none of ``covered`` (same log and partition) includes."""
    pieces = [(span.start, span.end)]
    for other in covered:
        pieces = [part for lo, hi in pieces
                  for part in ((lo, min(hi, other.start)), (max(lo, other.end), hi)) if part[0] < part[1]]
    return sum(hi - lo for lo, hi in pieces)


class LossLog:
    """The loss reports of one flow, persisted in its state folder."""

    def __init__(self, files: StateFiles, flow: str,
                 source_id: Callable[[str], str | None] = lambda _topic: None) -> None:
        """``source_id``: a source topic's id as the flow knows it now, which names the log a
        report's offsets belong to."""
        self.files = files
        self.flow = flow
        self.source_id = source_id
        self._lock = threading.Lock()
        self.reports: list[LossReport] = load(files)
        self.since_start: list[LossReport] = []  # what makes the flow ``degraded`` in this process
        self.listeners: list[Callable[[LossReport], None]] = []  # e.g. the lost-records metric

    def report(self, topic: str, partition: int, first: int, last: int, reason: str,
               records: int | None = None, span: Span | None = None) -> LossReport | None:
        """Report a loss; ``span`` defaults to the source range ``first .. last``. Returns the new
        report, or None when earlier reports already counted every offset of the span."""
        if span is None and first >= 0:
            span = Span.source(topic, first, last, self.source_id(topic))
        count = records if records is not None else last - first + 1
        with self._lock:  # the check and the append are one step: two threads cannot both count a range
            if span is not None:
                logs = {span.log, span.log.split("@", 1)[0]}  # reports written before spans named the generation
                count = uncovered(span, (s for r in self.reports if r.partition == partition
                                         and (s := r.span()) is not None and s.log in logs))
                if count <= 0:
                    return None  # the same loss seen again (another check, a retried one, a re-run batch)
            entry = LossReport(self.flow, topic, partition, first, last, count, reason, time.time(),
                               *((span.log, span.start, span.end) if span is not None else ("", -1, -1)))
            self.reports.append(entry)
            self.since_start.append(entry)
            self.reports = self.reports[-KEPT:]
            self.files.write(FILE, json.dumps([asdict(r) for r in self.reports]))
        log.error("%s", entry.line())
        for listener in self.listeners:
            listener(entry)
        return entry

    def total(self) -> int:
        with self._lock:
            return sum(r.records for r in self.reports)


def load(files: StateFiles) -> list[LossReport]:
    """The reports kept in a flow's state folder (an unreadable file counts as none, with a warning)."""
    text = files.read(FILE)
    if not text:
        return []
    try:
        return [LossReport(**{**entry, "log": kafka_topic_ref(entry["log"])} if entry.get("log") else entry)
                for entry in json.loads(text)]
    except (ValueError, TypeError) as exc:
        log.warning("%s/%s is unreadable (%s); earlier loss reports are not shown", files.uri(), FILE, exc)
        return []
