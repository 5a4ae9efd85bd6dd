"""What Spark's progress reports say of a flow's query: records read, data batches, the latest
rate and the phases of the latest data batch (for the progress log and the REST API)."""
from __future__ import annotations


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
        for progress in query.recentProgress:
            batch = progress["batchId"]
            self.last_batch_id = batch if self.last_batch_id is None else max(batch, self.last_batch_id)
            if progress["numInputRows"] > 0 and batch not in self._counted:
                self._counted.add(batch)
                self.records_read += progress["numInputRows"]
                self.last_rate = progress.get("processedRowsPerSecond") or 0.0
        if len(self._counted) > 10_000 and self.last_batch_id is not None:
            self._counted = {b for b in self._counted if b > self.last_batch_id - 1_000}

    @staticmethod
    def durations(query) -> dict[str, int]:
        """Spark's own breakdown of the latest data batch (ms per phase: latestOffset, addBatch,
        walCommit, commitOffsets, triggerExecution...)."""
        if query is None:
            return {}
        for progress in reversed(query.recentProgress):
            if progress["numInputRows"] > 0:
                return dict(progress["durationMs"])
        return {}

    @property
    def data_batches(self) -> int:
        """Batches that carried records, among those seen in Spark's recent progress."""
        return len(self._counted)
