"""Source offset ranges that can no longer be replicated, reported loudly and kept in the state.

A range is lost when records were removed before they were copied (retention, ``deleteRecords``,
an unclean leader election truncating a partition), when a topic was deleted and re-created (a new
topic id) before its tail was copied, or when a remote topic vanished from the target. Every report
is an ERROR log line, ``mirrorspark_records_lost_total`` and an entry in the flow's
``data-loss.json`` (read by ``status``, the REST API and ``audit``).
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from mirrorspark.state.files import StateFiles

log = logging.getLogger(__name__)

FILE = "data-loss.json"
KEPT = 1000  # newest reports kept in the file; the metric keeps the total


@dataclass(frozen=True)
class LossReport:
    """Source offsets ``first .. last`` (inclusive) of ``topic``/``partition`` that were not copied;
    ``records`` counts offsets (a transaction marker in the range counts as one)."""

    flow: str
    topic: str
    partition: int
    first: int
    last: int
    records: int
    reason: str
    time: float

    def line(self) -> str:
        where = f" at source offsets {self.first}..{self.last}" if self.first >= 0 else ""
        return (f"flow {self.flow}: DATA LOSS: {self.records} record(s) of {self.topic}[{self.partition}]{where} "
                f"are lost: {self.reason}")


class LossLog:
    """The loss reports of one flow, persisted in its state folder."""

    def __init__(self, files: StateFiles, flow: str) -> None:
        self.files = files
        self.flow = flow
        self._lock = threading.Lock()
        self.reports: list[LossReport] = load(files)
        self.since_start: list[LossReport] = []  # what makes the flow ``degraded`` in this process
        self.listeners: list[Callable[[LossReport], None]] = []  # e.g. the lost-records metric

    def report(self, topic: str, partition: int, first: int, last: int, reason: str,
               records: int | None = None) -> LossReport:
        if first >= 0 and any((r.topic, r.partition, r.first, r.last) == (topic, partition, first, last)
                              for r in self.reports):
            # The same gap seen again (a re-run batch, a restart in fail mode): counted once.
            return next(r for r in self.reports if (r.topic, r.partition, r.first, r.last) ==
                        (topic, partition, first, last))
        entry = LossReport(self.flow, topic, partition, first, last,
                           records if records is not None else last - first + 1, reason, time.time())
        log.error("%s", entry.line())
        with self._lock:
            self.reports.append(entry)
            self.since_start.append(entry)
            self.reports = self.reports[-KEPT:]
            self.files.write(FILE, json.dumps([asdict(r) for r in self.reports]))
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
        return [LossReport(**entry) for entry in json.loads(text)]
    except (ValueError, TypeError) as exc:
        log.warning("%s/%s is unreadable (%s); earlier loss reports are not shown", files.uri(), FILE, exc)
        return []
