"""Turn the writer's acknowledged offset runs into the exact mapping and MM2 offset syncs.

After each batch the driver drains the runs the sink's commit messages brought back (see
docs/adr/0004-cluster-writer.md and ``mirrorspark.sink_report``). They extend the flow's
``OffsetRanges`` (kept on disk, so translation survives restarts) and become MM2-format offset
syncs: one where a run starts that does not continue the previous one (gaps: compaction,
transaction markers, re-writes) and one for the last record of each partition in the batch, so MM2
tooling sees the latest position. A break (records on the target the writer could not pair: an
exactly-once re-run skipping rows its progress holds no pair for) makes the gap around it inexact,
also when it ends the batch: translation in it stays behind the records, as MM2's does.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from mirrorspark.control.admin import producer
from mirrorspark.formats import OffsetSync
from mirrorspark.offsets.ranges import OffsetRanges
from mirrorspark.partition import OffsetRun, Partition
from mirrorspark.sink_report import WrittenRun

log = logging.getLogger(__name__)


class SyncProducer(Protocol):
    """What the writer needs of a Kafka producer (confluent_kafka's ``Producer``)."""

    def produce(self, topic: str, value: bytes, key: bytes, partition: int,
                on_delivery: Callable[[Any, Any], None]) -> None: ...

    def poll(self, timeout: float) -> int: ...

    def flush(self, timeout: float) -> int: ...


def make_sync_producer(conf: dict[str, Any]) -> SyncProducer:
    """The producer of offset syncs: ``conf`` (librdkafka settings of the cluster hosting the
    offset-syncs topic) with every sync acknowledged by all replicas."""
    return producer({**conf, "acks": "all", "linger.ms": 5})


def group_by_partition(reported: Iterable[WrittenRun]) -> dict[Partition, list[OffsetRun | None]]:
    """Runs per (remote topic, partition) in report order; None marks a failed write (a break)."""
    grouped: dict[Partition, list[OffsetRun | None]] = {}
    for r in reported:
        grouped.setdefault((r.topic, r.partition), []).append(r.run if r.written else None)
    return grouped


class OffsetSyncWriter:
    """One flow's offset-sync side: ranges updated and persisted (``save`` is called with the
    (source topic, partition) keys a batch touched), MM2 syncs published to ``sync_topic`` through
    ``sync_producer``."""

    def __init__(self, flow_name: str, ranges: OffsetRanges, save: Callable[[set[Partition]], None],
                 sync_topic: str, sync_producer: SyncProducer) -> None:
        self.flow_name = flow_name
        self.ranges = ranges
        self._save = save
        self.sync_topic = sync_topic
        self._producer = sync_producer

    def on_batch(self, reported: Iterable[WrittenRun], source_of: Mapping[str, str]) -> int:
        """Apply one batch's runs (``source_of``: remote topic -> source topic); returns offset
        syncs published."""
        syncs: list[OffsetSync] = []
        touched: set[Partition] = set()
        for (remote, partition), runs in group_by_partition(reported).items():
            topic = source_of.get(remote)
            if topic is None:
                log.warning("flow %s: the writer reported offsets for %s, which no source topic maps to",
                            self.flow_name, remote)
                continue
            touched.add((topic, partition))
            contiguous = True
            last: OffsetRun | None = None
            for run in runs:
                if run is None:
                    contiguous = False
                    continue
                previous = self.ranges.latest(topic, partition)
                continues = previous is not None and contiguous and previous == (run.upstream - 1, run.downstream - 1)
                self.ranges.add(topic, partition, [run], contiguous_with_previous=contiguous)
                if not continues:
                    syncs.append(OffsetSync(topic, partition, run.upstream, run.downstream))
                contiguous = True
                last = run
            if not contiguous:  # a break ended the batch: the next batch's first run does not continue this one
                self.ranges.break_after_last(topic, partition)
            if last is not None and last.count > 1:
                syncs.append(OffsetSync(topic, partition, last.upstream_end - 1, last.downstream_end - 1))
        if touched:
            self._save(touched)
        if syncs:
            # Sent without waiting, as MM2 does: the batch does not pay a round trip for them, and
            # translation here uses the ranges saved above. A failed sync is logged (MM2 too).
            for sync in syncs:
                self._producer.produce(self.sync_topic, sync.value_bytes(), sync.key_bytes(), partition=0,
                                       on_delivery=self._delivered)
            self._producer.poll(0)
        return len(syncs)

    def _delivered(self, err, _msg) -> None:
        if err is not None:
            log.warning("flow %s: an offset sync to %s was not written: %s", self.flow_name, self.sync_topic, err.str())

    def close(self) -> None:
        left = self._producer.flush(10)
        if left:
            log.warning("flow %s: %d offset sync(s) not acknowledged at stop", self.flow_name, left)
