"""Lag MM2 does not report: source records not yet replicated, in offsets and in seconds.

Every ``mirrorspark.metrics.lag.interval.seconds`` the probe compares the source's end offsets
(``ListOffsets``, read_committed when the flow reads committed records) with the positions of
the flow's last committed Spark batch. For a lagging partition it reads the first record not
yet replicated, and the lag in seconds is that record's age.

While the flow is caught up (no lag outside the heartbeat topics, whose copies are held back on
purpose while a flow is idle), a round runs only every ``IDLE_ROUNDS`` intervals (30 s by default): at thousands of
quiet partitions each round's ListOffsets and per-partition bookkeeping were over half of the
driver's idle CPU, and a caught-up flow's lag can only change by records arriving, which start a
batch at once. Any lag found puts the probe back on its interval.
"""
from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from confluent_kafka import Consumer, IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirrorspark.control.admin import consumer, topic_partitions
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.partition import Partition

log = logging.getLogger(__name__)

MAX_PROBED = 200  # partitions whose oldest pending record is read per round
IDLE_ROUNDS = 6  # while the flow is caught up, one round in this many runs


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    end_offset: int
    position: int
    offsets: int
    seconds: float


class LagProbe:
    """Lag of one flow's planned source topics."""

    def __init__(self, *, metrics: MirrorMetrics, flow_name: str, source: str, target: str, admin: AdminClient,
                 source_conf: dict[str, Any], read_committed: bool,
                 planned_topics: Callable[[], list[str]], positions: Callable[[], dict[Partition, int]],
                 on_ends: Callable[[dict[Partition, int]], None] | None = None,
                 held: str | None = None, idle_interval: float = 0.0,
                 on_round: Callable[[str | None], None] | None = None) -> None:
        self.metrics = metrics
        self.flow_name = flow_name
        self.labels = {"source": source, "target": target}
        self.admin = admin
        self.source_conf = source_conf
        self.isolation = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        self.planned_topics = planned_topics
        self.positions = positions
        self.on_ends = on_ends  # the source's ends, for whoever else needs them (no second read)
        self.gauges: dict[Partition, tuple[Any, Any, int, float]] = {}
        self.latest: list[PartitionLag] = []
        self.measured_at: float | None = None
        self._consumer: Consumer | None = None
        self.held = re.compile(held) if held else None  # topics whose lag is held back on purpose
        self.idle_interval = idle_interval
        self._caught_up_at: float | None = None  # monotonic time of the last round that found no lag
        # Told each round's outcome: None when the source answered, else the error (the supervisor says
        # a source out of reach, which a real-time query does not fail on).
        self.on_round = on_round

    def _offsets(self, partitions: list[TopicPartition], earliest: bool = False) -> dict[Partition, int]:
        """End (or start) offsets in one ListOffsets call of the probe's consumer (-1 and -2 are
        Kafka's latest and earliest; its isolation level gives the stable end in read_committed).
        The admin client's call makes a future per partition: twice the CPU at thousands of
        partitions, every few seconds. A partition that does not answer (leader moving, topic
        deleted) is left out of this round."""
        if not partitions:
            return {}
        mark = -2 if earliest else -1
        found = self._reader().offsets_for_times([TopicPartition(tp.topic, tp.partition, mark) for tp in partitions],
                                                 15)
        return {(tp.topic, tp.partition): tp.offset for tp in found if tp.error is None and tp.offset >= 0}

    def _partitions(self, topics: list[str]) -> list[TopicPartition]:
        counts = topic_partitions(self.admin, timeout=15)
        return [TopicPartition(t, p) for t in topics for p in range(counts.get(t, 0))]

    def _oldest_pending_timestamps(self, positions: dict[Partition, int]) -> dict[Partition, int]:
        """Timestamp (ms) of the first record at or after each position."""
        if not positions:
            return {}
        reader = self._reader()
        reader.assign([TopicPartition(t, p, o) for (t, p), o in positions.items()])
        found: dict[Partition, int] = {}
        deadline = time.monotonic() + 3.0
        while len(found) < len(positions) and time.monotonic() < deadline:
            for message in reader.consume(500, timeout=0.5):
                if message.error() is None:
                    key = cast(Partition, (message.topic(), message.partition()))  # set on every record
                    found.setdefault(key, message.timestamp()[1])
        reader.unassign()
        return found

    def _reader(self) -> Consumer:
        if self._consumer is None:
            self._consumer = consumer({**self.source_conf, "group.id": f"mirrorspark-lag-{self.flow_name}",
                                       "enable.auto.commit": False, "enable.partition.eof": False,
                                       "isolation.level": "read_committed" if self.isolation ==
                                       IsolationLevel.READ_COMMITTED else "read_uncommitted",
                                       "fetch.max.bytes": 1 << 20, "max.partition.fetch.bytes": 65536})
        return self._consumer

    def run_once(self) -> list[PartitionLag]:
        partitions = self._partitions(self.planned_topics())
        ends = self._offsets(partitions)
        if self.on_ends is not None:
            self.on_ends(ends)
        done = self.positions()
        missing = [tp for tp in partitions if (tp.topic, tp.partition) not in done]
        starts = self._offsets(missing, earliest=True)  # Spark starts new partitions there
        lags = {}
        for key, end in ends.items():
            position = done.get(key, starts.get(key, end))
            lags[key] = (end, position, max(0, end - position))
        lagging = {k: pos for k, (_, pos, lag) in sorted(lags.items(), key=lambda i: -i[1][2]) if lag > 0}
        stamps = self._oldest_pending_timestamps(dict(list(lagging.items())[:MAX_PROBED]))
        now_ms = time.time() * 1000
        out = []
        for (topic, partition), (end, position, lag) in sorted(lags.items()):
            seconds = max(0.0, (now_ms - stamps[(topic, partition)]) / 1000) if lag and (topic, partition) in stamps \
                else 0.0
            out.append(PartitionLag(topic, partition, end, position, lag, seconds))
            self._publish(topic, partition, lag, seconds)
        for key in set(self.gauges) - set(lags):  # gone from the plan: its series are dropped with it
            del self.gauges[key]
        self.latest, self.measured_at = out, time.time()
        return out

    def _publish(self, topic: str, partition: int, lag: int, seconds: float) -> None:
        """Set the partition's two gauges; a value that did not change costs a dictionary lookup
        (thousands of quiet partitions every few seconds)."""
        key = (topic, partition)
        known = self.gauges.get(key)
        if known is not None and known[2] == lag and known[3] == seconds:
            return
        if known is None:
            labels = {**self.labels, "source_topic": topic, "partition": str(partition)}
            known = (self.metrics.lag_records.labels(**labels), self.metrics.lag_seconds.labels(**labels), -1, -1.0)
        known[0].set(lag)
        known[1].set(seconds)
        self.gauges[key] = (known[0], known[1], lag, seconds)

    def caught_up(self, lags: list[PartitionLag]) -> bool:
        """No lag outside the held topics."""
        return all(lag.offsets == 0 or (self.held is not None and self.held.fullmatch(lag.topic))
                   for lag in lags)

    def due(self, now: float) -> bool:
        """A round is due unless the last one found the flow caught up less than the idle interval ago."""
        return self._caught_up_at is None or now - self._caught_up_at >= self.idle_interval

    def safe_run(self) -> None:
        """One round when due (see the module's docstring); a failed round is logged, never raised."""
        now = time.monotonic()
        if not self.due(now):
            return
        try:
            lags = self.run_once()
            self._caught_up_at = now if self.caught_up(lags) else None
        except KafkaException as exc:
            log.warning("flow %s: measuring lag failed: %s", self.flow_name, exc)
            self._caught_up_at = None  # the next round on the interval, to see the source answer again soon
            self._told(str(exc))
            return
        self._told(None)

    def _told(self, error: str | None) -> None:
        if self.on_round is not None:
            self.on_round(error)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
