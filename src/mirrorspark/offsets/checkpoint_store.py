"""The latest checkpoint per (group, remote topic, partition), reloaded from the target at start.

MM2 reloads its checkpoints topic on start (3.7.1+) so checkpoints stay monotonic across restarts;
mirrorspark does the same and applies MM2's "emit only if newer" rule against it.
"""
from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirrorspark.control.admin import consumer

from mirrorspark.offsets.formats import Checkpoint, RecordFormatError

log = logging.getLogger(__name__)

Key = tuple[str, str, int]


def read_compacted_topic(conf: dict[str, Any], topic: str, timeout: float = 30.0) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of partition 0 of ``topic`` up to its end offset at call time."""
    reader = consumer({**conf, "group.id": "mirrorspark-internal-reader", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    try:
        metadata = reader.list_topics(topic, timeout=timeout).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return []
        low, high = reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=timeout)
        if high <= low:
            return []
        reader.assign([TopicPartition(topic, 0, low)])
        out: list[tuple[bytes, bytes]] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = reader.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    break
                raise KafkaException(msg.error())
            if msg.key() is not None and msg.value() is not None:
                out.append((msg.key(), msg.value()))
            if msg.offset() >= high - 1:
                break
        return out
    finally:
        reader.close()


class CheckpointStore:
    """Latest checkpoints of one flow's checkpoints topic."""

    def __init__(self) -> None:
        self.latest: dict[Key, Checkpoint] = {}
        self.loaded = False

    def load(self, conf: dict[str, Any], topic: str) -> int:
        """Read ``topic`` fully; undecodable records are skipped, as MM2 does. Returns records read."""
        records = read_compacted_topic(conf, topic)
        for key, value in records:
            try:
                checkpoint = Checkpoint.from_record(key, value)
            except RecordFormatError as exc:
                log.debug("skipping a checkpoint record: %s", exc)
                continue
            self.latest[(checkpoint.group, checkpoint.topic, checkpoint.partition)] = checkpoint
        self.loaded = True
        return len(records)

    def is_newer(self, checkpoint: Checkpoint) -> bool:
        """MM2's rule: first one, or the upstream group rewound, or the downstream offset advanced."""
        previous = self.latest.get((checkpoint.group, checkpoint.topic, checkpoint.partition))
        return (previous is None or checkpoint.upstream < previous.upstream
                or checkpoint.downstream > previous.downstream)

    def put(self, checkpoint: Checkpoint) -> None:
        self.latest[(checkpoint.group, checkpoint.topic, checkpoint.partition)] = checkpoint

    def groups(self) -> set[str]:
        return {group for group, _, _ in self.latest}

    def for_group(self, group: str) -> list[Checkpoint]:
        return [c for (g, _, _), c in sorted(self.latest.items()) if g == group]
