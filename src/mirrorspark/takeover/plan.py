"""``mirrorspark migrate from-mm2``: the takeover plan of each flow, and carrying it out.

The plan reads what MM2 left (``mm2_state``), refuses while MM2 still runs or when its remote
topics are not where mirrorspark's policy would write, and finds per source partition where the
first start resumes (``positions``). Carrying it out writes ``takeover.json`` in the flow's state
folder (read by the flow's first start, see ``pipeline.query_start``) and the exact offset mapping
of MM2's last records, so checkpoints translate them exactly too. Nothing is written on refusal.
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from confluent_kafka import ConsumerGroupState, TopicPartition
from confluent_kafka.admin import AdminClient

from mirrorspark.config.model import FlowConfig
from mirrorspark.control.admin import (
    TopicMissing,
    admin_client,
    consumer,
    partition_offsets,
    topic_ids,
    topic_partitions,
)
from mirrorspark.control.client_settings import admin_settings
from mirrorspark.formats import Heartbeat, RecordFormatError
from mirrorspark.offsets.range_log import RangeLog
from mirrorspark.partition import Partition
from mirrorspark.policy import policy_for_flow
from mirrorspark.policy.topic_selection import TopicSelection
from mirrorspark.state.files import StateFiles
from mirrorspark.takeover.mm2_state import (
    ConnectOffsets,
    TakeoverRefused,
    read_connect_offsets,
    read_offset_syncs,
    worker_group_state,
)
from mirrorspark.takeover.positions import PartitionTakeover, locate, starting_offsets

log = logging.getLogger(__name__)

FILE = "takeover.json"
_RUNNING = {ConsumerGroupState.STABLE, ConsumerGroupState.PREPARING_REBALANCING,
            ConsumerGroupState.COMPLETING_REBALANCING}


@dataclass
class FlowTakeover:
    flow: str
    offsets_topic: str
    partitions: list[PartitionTakeover] = field(default_factory=list)
    skipped_records: int = 0

    def as_dict(self) -> dict:
        rows = [p.as_dict() for p in self.partitions]
        known = [p.copied_twice for p in self.partitions]
        return {"flow": self.flow, "offsets_topic": self.offsets_topic, "skipped_records": self.skipped_records,
                "copied_twice": None if None in known else sum(known),
                "partitions": rows}


def offsets_topic(flow: FlowConfig) -> str:
    """MM2's Connect offsets topic of the flow's herder (dedicated mode), on the target."""
    return (flow.target.settings.get("offset.storage.topic") or f"mm2-offsets.{flow.source.alias}.internal").strip()


def worker_group(flow: FlowConfig) -> str:
    return (flow.target.settings.get("group.id") or f"{flow.source.alias}-mm2").strip()


def refuse_if_running(flow: FlowConfig, target: AdminClient, target_conf: dict[str, str], wait: float) -> None:
    """MM2 must be stopped: its Connect worker group has no members, and no heartbeat of the pair
    arrives on the target within ``wait`` seconds (nothing else replicates the pair either)."""
    group = worker_group(flow)
    state = worker_group_state(target, group)
    if state in _RUNNING:
        raise TakeoverRefused(f"MirrorMaker 2 still runs for {flow.name}: its Connect worker group {group!r} on "
                              f"{flow.target.alias!r} is {state.name}; stop MM2 first (all its processes)")
    beats = _heartbeats_during(target_conf, flow.source.alias, flow.target.alias, wait)
    if beats:
        raise TakeoverRefused(f"a replicator still runs for {flow.name}: {beats} heartbeat(s) {flow.source.alias}->"
                              f"{flow.target.alias} arrived on {flow.target.alias!r} in the last {wait:.0f} s; stop "
                              "MM2 (and any mirrorspark running this flow) first")


def _heartbeats_during(conf: dict[str, str], source: str, target: str, wait: float) -> int:
    topic = "heartbeats"
    reader = consumer({**conf, "group.id": "mirrorspark-takeover-reader", "enable.auto.commit": False})
    try:
        found = reader.list_topics(topic, timeout=15).topics.get(topic)
        if found is None or found.error is not None:
            return 0
        _, before = reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=15)
        time.sleep(wait)
        _, after = reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=15)
        if after <= before:
            return 0
        reader.assign([TopicPartition(topic, 0, before)])
        seen, read = 0, 0
        deadline = time.monotonic() + 30
        while read < after - before and time.monotonic() < deadline:
            msg = reader.poll(1.0)
            if msg is None or msg.error():
                continue
            read += 1
            try:
                beat = Heartbeat.from_record(msg.key() or b"", msg.value() or b"")
            except RecordFormatError:
                continue
            seen += beat.source == source and beat.target == target
        return seen
    finally:
        reader.close()


def plan_flow(flow: FlowConfig, running_wait: float = 3.0) -> FlowTakeover:
    """The takeover plan of one flow; raises TakeoverRefused (nothing written) when it cannot be done."""
    source_conf, target_conf = admin_settings(flow.source), admin_settings(flow.target)
    source, target = admin_client(source_conf), admin_client(target_conf)
    refuse_if_running(flow, target, target_conf, running_wait)
    topic = offsets_topic(flow)
    try:
        mm2: ConnectOffsets = read_connect_offsets(target_conf, topic, flow.source.alias)
    except TopicMissing as exc:
        raise TakeoverRefused(f"{exc} on cluster {flow.target.alias!r}: expected MM2's Connect offsets topic of flow "
                              f"{flow.name} (dedicated mode keeps {topic} on the target; set "
                              f"{flow.target.alias}.offset.storage.topic if MM2 used another name)") from None
    if not mm2.committed:
        raise TakeoverRefused(f"{topic} on {flow.target.alias!r} holds no MirrorSourceConnector offsets of "
                              f"{flow.source.alias!r} ({mm2.records} record(s), {mm2.skipped} unreadable): nothing to "
                              "take over from")
    policy = policy_for_flow(flow.settings, flow.source.alias, flow.where("replication.policy.class"))
    selection = TopicSelection(flow, policy)
    on_target = topic_partitions(target)
    on_source = topic_partitions(source)
    syncs = read_offset_syncs(source_conf if _syncs_on_source(flow) else target_conf,
                              policy.offset_syncs_topic(flow.target.alias if _syncs_on_source(flow)
                                                        else flow.source.alias))
    remote = {t: selection.remote_name(t) for t in sorted({t for t, _ in mm2.committed})}
    # Topics MM2 copied but never committed (stopped within offset.flush.interval.ms of starting them).
    for t in sorted({t for t, _ in syncs} - set(remote)):
        if selection.should_replicate(t) and selection.remote_name(t) in on_target:
            remote[t] = selection.remote_name(t)
    missing = {t: r for t, r in remote.items() if r not in on_target and any(k[0] == t for k in mm2.committed)}
    if missing:
        t, r = next(iter(sorted(missing.items())))
        hint = next((c for c in (t, f"{flow.source.alias}.{t}") if c in on_target and c != r), None)
        why = f"; MM2 wrote {hint!r}, so its policy differs" if hint else ""
        raise TakeoverRefused(f"MM2 replicated {t} but {r!r}, where mirrorspark's policy "
                              f"({flow.where('replication.policy.class')}) writes it, is not on {flow.target.alias!r}"
                              f"{why}: use the same replication.policy.class (and separator, topic.map) as MM2")
    gone = sorted(t for t in remote if t not in on_source)
    if gone:
        log.warning("flow %s: %s no longer exist(s) on %s; skipped", flow.name, ", ".join(gone), flow.source.alias)
    keys = [(t, p) for t in remote if t in on_source for p in range(on_source[t])]
    remote_keys = [(remote[t], p) for t, p in keys]
    t_start = partition_offsets(target, remote_keys, earliest=True)
    t_end = partition_offsets(target, remote_keys)
    s_start = partition_offsets(source, keys, earliest=True)
    out = FlowTakeover(flow.name, topic, skipped_records=mm2.skipped)
    # MM2's consumer reads uncommitted records unless told otherwise: compare what it copied.
    consumer_conf = {**source_conf, "isolation.level": "read_committed" if flow.reads_committed else "read_uncommitted"}
    for t, p in keys:
        r = remote[t]
        out.partitions.append(locate(consumer_conf, target_conf, t, p, r, mm2.committed.get((t, p)),
                                     syncs.get((t, p), []), t_start.get((r, p), 0), t_end.get((r, p), 0),
                                     s_start.get((t, p), 0)))
    return out


def _syncs_on_source(flow: FlowConfig) -> bool:
    return not flow.options.offset_syncs_on_target


def check_first_start(flow: FlowConfig, folder: StateFiles) -> None:
    """A takeover applies to a flow mirrorspark never ran (checked for every flow before any write)."""
    from mirrorspark.integrity.spark_offsets import SparkOffsetLog

    log_ = SparkOffsetLog(folder.child("checkpoint"))
    if log_.last_committed() is not None or log_.pending() is not None:
        raise TakeoverRefused(f"mirrorspark already replicated {flow.name} from {folder.uri()}: a takeover applies "
                              "to a flow's first start only (remove that folder to start the flow over)")


def execute(flow: FlowConfig, plan: FlowTakeover, folder: StateFiles) -> None:
    """Write the positions for the flow's first start and the mapping of MM2's last records."""
    from mirrorspark.state.identity import check_state_identity

    check_first_start(flow, folder)
    target = admin_client(admin_settings(flow.target))
    # The clusters' ids go with the positions: `run` against other clusters refuses this state.
    check_state_identity(folder, flow.name, flow.source.alias, flow.target.alias,
                         admin_client(admin_settings(flow.source)), target)
    ids = topic_ids(target, sorted({p.remote for p in plan.partitions}))
    if flow.options.emit_offset_syncs:
        starts = partition_offsets(target, [(p.remote, p.partition) for p in plan.partitions if p.remote in ids],
                                   earliest=True)
        seed_ranges(folder, plan, ids, starts)
    positions = {(p.topic, p.partition): p.resume for p in plan.partitions}
    folder.write(FILE, json.dumps({
        "flow": flow.name, "from": plan.offsets_topic, "created": datetime.now(UTC).isoformat(),
        "positions": starting_offsets(positions)}, indent=1))


def seed_ranges(folder: StateFiles, plan: FlowTakeover, ids: Mapping[str, str],
                starts: Mapping[Partition, int]) -> None:
    """The offset mapping a takeover starts from: the runs it found on the target (MM2's syncs, the records
    compared) after whatever the state folder's range log held. That log may be this instance's own from
    before another writer (MM2, or another instance while this one was fenced) copied on: the gap after
    each of its partitions' last run holds that writer's copies, not "no records", so it is marked
    unknown; a group committed inside it translates to one past the last known copy, never to the first
    record this start writes (the fault soak: a group 2,485 records ahead after an exactly-once takeover).
    A partition the log knows nothing of translates offsets before the takeover's first run to the
    remote partition's log start (``starts``, by remote topic and partition): the copies there are
    another writer's, and a group among them re-reads them rather than getting no checkpoint."""
    log_ = RangeLog(folder.child("offset-ranges"))
    ranges = log_.load()
    touched = set(ranges.partitions())
    for topic, partition in touched:
        ranges.break_after_last(topic, partition)
    for row in plan.partitions:
        if row.remote in ids:
            ranges.bind(row.topic, row.partition, f"{row.remote}@{ids[row.remote]}", 0)
            if (row.remote, row.partition) in starts:
                ranges.floor_unknown_history(row.topic, row.partition, starts[(row.remote, row.partition)])
        for run, continues in row.runs:
            ranges.add(row.topic, row.partition, [run], contiguous_with_previous=continues)
        touched.add((row.topic, row.partition))
    log_.save(ranges, sorted(touched))


def load_positions(folder: StateFiles) -> dict[Partition, int]:
    """The takeover positions of a flow (empty without a takeover)."""
    text = folder.read(FILE)
    if not text:
        return {}
    try:
        body = json.loads(text)
        return {(t, int(p)): int(o) for t, parts in body["positions"].items() for p, o in parts.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise TakeoverRefused(f"{folder.uri()}/{FILE} is damaged ({exc}); run `mirrorspark migrate from-mm2 "
                              "--execute` again or remove the file") from None


def rewind_positions(folder: StateFiles, positions: dict[Partition, int], topic: str,
                     starts: Mapping[int, int]) -> bool:
    """``topic`` was deleted and re-created before the flow committed its first batch: its takeover
    positions are the old topic's offsets. Like a committed checkpoint (``SparkOffsetLog.rewind``), they
    move to the new topic's log start, in ``positions`` (the running query's) and in the file, so that
    the next start reads the new topic from there and does not take it for the old one gone back.
    Returns False when the topic has no takeover position."""
    keys = [key for key in positions if key[0] == topic]
    if not keys:
        return False
    for key in keys:
        positions[key] = starts.get(key[1], 0)
    text = folder.read(FILE)
    body = json.loads(text) if text else {}
    body["positions"] = starting_offsets(positions)
    folder.write(FILE, json.dumps(body, indent=1))
    return True

