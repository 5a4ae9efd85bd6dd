"""What a stopped MirrorMaker 2 (dedicated mode) left on the clusters, read without MM2.

- Its Connect offsets topic ``mm2-offsets.<source>.internal`` on the target (or ``<target>.offset.storage.topic``):
  JSON keys ``["MirrorSourceConnector", {"cluster": S, "topic": t, "partition": p}]`` and values
  ``{"offset": N}``, N being the last source offset MM2 committed as replicated.
- Its offset syncs (``mm2-offset-syncs.<other>.internal``): source offset u was written at target offset d.
- Its Connect worker group (``<source>-mm2`` or ``<target>.group.id``) on the target: members while MM2 runs.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import ConsumerGroupState
from confluent_kafka.admin import AdminClient

from mirrorspark.control.admin import TopicMissing, read_to_end
from mirrorspark.errors import OperationalError
from mirrorspark.formats import OffsetSync, RecordFormatError
from mirrorspark.partition import Partition

log = logging.getLogger(__name__)

SOURCE_CONNECTOR = "MirrorSourceConnector"


class TakeoverRefused(OperationalError):
    """MM2's state cannot be taken over as it is (the message says what was expected)."""


@dataclass
class ConnectOffsets:
    """MM2's committed source positions of one flow (last replicated offset per source partition)."""

    topic: str
    committed: dict[Partition, int] = field(default_factory=dict)
    records: int = 0
    skipped: int = 0  # records that are not MirrorSourceConnector offsets of this source (named in warnings)


def parse_source_offset(key: bytes | None, value: bytes | None,
                        source_alias: str) -> tuple[Partition, int | None] | None:
    """((topic, partition), last offset or None for a tombstone) of a MirrorSourceConnector record of
    ``source_alias``; None for records of the other connectors. Raises ValueError when malformed."""
    connector, partition_map = json.loads((key or b"").decode("utf-8"))
    if connector != SOURCE_CONNECTOR:
        return None
    if partition_map.get("cluster") != source_alias:
        raise ValueError(f"cluster {partition_map.get('cluster')!r}, not {source_alias!r}")
    tp = (str(partition_map["topic"]), int(partition_map["partition"]))
    if value is None:
        return tp, None
    return tp, int(json.loads(value.decode("utf-8"))["offset"])


def read_connect_offsets(conf: dict[str, Any], topic: str, source_alias: str) -> ConnectOffsets:
    """MM2's committed positions of ``source_alias`` in its Connect offsets ``topic``; raises TopicMissing."""
    found = ConnectOffsets(topic)
    for key, value, partition, offset, _ in read_to_end(conf, topic):
        found.records += 1
        try:
            parsed = parse_source_offset(key, value, source_alias)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            found.skipped += 1
            if found.skipped <= 5:
                log.warning("%s[%d] offset %d is not an MM2 source offset of %s and is skipped: %s", topic, partition,
                            offset, source_alias, exc)
            continue
        if parsed is None:
            continue
        tp, last = parsed
        if last is None:
            found.committed.pop(tp, None)
        else:
            found.committed[tp] = last
    return found


def read_offset_syncs(conf: dict[str, Any], topic: str) -> dict[Partition, list[tuple[int, int]]]:
    """Every (upstream, downstream) MM2 recorded per source partition, oldest first; {} without the topic."""
    out: dict[Partition, list[tuple[int, int]]] = {}
    try:
        for key, value, _, _, _ in read_to_end(conf, topic):
            try:
                sync = OffsetSync.from_record(key or b"", value or b"")
            except RecordFormatError:
                continue
            out.setdefault((sync.topic, sync.partition), []).append((sync.upstream, sync.downstream))
    except TopicMissing:
        return {}
    return out


def worker_group_state(admin: AdminClient, group: str) -> ConsumerGroupState:
    """The state of MM2's Connect worker group: STABLE or rebalancing while MM2 runs (DEAD when
    there is no such group). Listed, not described: a Connect group is not a consumer group to
    the describe call of Kafka 4."""
    listed = admin.list_consumer_groups(request_timeout=30).result()
    for found in listed.valid:
        if found.group_id == group:
            return found.state
    return ConsumerGroupState.DEAD
