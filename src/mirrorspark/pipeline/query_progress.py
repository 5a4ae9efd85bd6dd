"""What Spark's progress reports say of a flow's query: records read, data batches, the latest
rate and the phases of the latest data batch (for the progress log and the REST API).

The reports are read as JVM objects, field by field. ``StreamingQuery.recentProgress`` in Python
renders each of the last 100 reports to JSON and parses it back, and each report carries the
start, end and latest offsets of every source partition: at 3,000 partitions about 15 MB of JSON
rendered and parsed per progress line, for three numbers a report.
"""
from __future__ import annotations

import math
from typing import Any


def _reports(query) -> list[Any]:
    """The query's recent progress reports (``StreamingQueryProgress`` on the JVM), oldest first."""
    return list(query._jsq.recentProgress())


class QueryProgress:
    def __init__(self) -> None:
        self.records_read = 0
        self.last_batch_id: int | None = None
        self.last_rate = 0.0
        self._counted: set[int] = set()

    def collect(self, query) -> None:
        """Fold the progress reports of data batches not yet counted into the running totals."""
        if query is None:
            return
        for progress in _reports(query):
            batch = int(progress.batchId())
            self.last_batch_id = batch if self.last_batch_id is None else max(batch, self.last_batch_id)
            if batch in self._counted:
                continue
            rows = int(progress.numInputRows())
            if rows > 0:
                self._counted.add(batch)
                self.records_read += rows
                rate = float(progress.processedRowsPerSecond())
                self.last_rate = 0.0 if math.isnan(rate) or math.isinf(rate) else rate
        if len(self._counted) > 10_000 and self.last_batch_id is not None:
            self._counted = {b for b in self._counted if b > self.last_batch_id - 1_000}

    @staticmethod
    def durations(query) -> dict[str, int]:
        """Spark's own breakdown of the latest data batch (ms per phase: latestOffset, addBatch,
        walCommit, commitOffsets, triggerExecution...)."""
        if query is None:
            return {}
        for progress in reversed(_reports(query)):
            if int(progress.numInputRows()) > 0:
                return {str(phase): int(ms) for phase, ms in progress.durationMs().items()}
        return {}

    @property
    def data_batches(self) -> int:
        """Batches that carried records, among those seen in Spark's recent progress."""
        return len(self._counted)
