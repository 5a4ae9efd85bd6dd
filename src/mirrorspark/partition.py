"""A partition of a topic, and a run of offsets copied within one: the two shapes the sink report,
the offset mapping and its log, the takeover and the audit pass each other; and a topic id's text.

Kept below all of them (it imports nothing of mirrorspark), so each can name them without a cycle.
"""
from __future__ import annotations

from dataclasses import dataclass

Partition = tuple[str, int]
"""``(topic, partition)``: the key of every per-partition map. Which cluster's topic (the source or
its remote topic on the target) the holder's names say. Not ``confluent_kafka.TopicPartition``,
which also carries an offset and is only used to talk to a client."""


@dataclass(frozen=True, slots=True)
class OffsetRun:
    """Source offsets ``upstream .. upstream+count-1`` written, in order, at target offsets
    ``downstream .. downstream+count-1`` of one partition."""

    upstream: int
    downstream: int
    count: int

    @property
    def upstream_end(self) -> int:
        """The source offset after the run's last record."""
        return self.upstream + self.count

    @property
    def downstream_end(self) -> int:
        """The target offset after the run's last record."""
        return self.downstream + self.count


def kafka_topic_id(text: str) -> str:
    """A topic id as Kafka writes it (``Uuid.toString``: URL-safe base64). librdkafka's client writes the
    same 16 bytes in the standard alphabet (``+`` and ``/`` for ``-`` and ``_``), and a flow keeps the ids
    it saw: taken as they come, an id kept under librdkafka's clients (0.1.0's) did not equal the Java
    Admin's for about half of the topics, each then taken for a re-created topic and copied again."""
    return text.replace("+", "-").replace("/", "_").rstrip("=")


def kafka_topic_ref(ref: str) -> str:
    """``<name>@<topic id>`` (a binding, a loss report's log) with the id as Kafka writes it."""
    name, at, topic_id = ref.rpartition("@")
    return f"{name}@{kafka_topic_id(topic_id)}" if at else ref
