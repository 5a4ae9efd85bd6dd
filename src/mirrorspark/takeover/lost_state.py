"""A flow started without its state while its remote topics already hold records.

A new host, a wiped disk, another state folder: Spark's checkpoint is gone but the target still
holds the copy. Starting from the source's beginning would copy every record a second time, and
nothing would say so. Instead the flow resumes from what the target holds, the way a takeover from
MM2 does (``positions.locate``): the flow's own offset syncs (MM2's format) say where a source
offset landed on the target, and the records after that sync are compared with the source one by
one, so the first start resumes just past the last record already there and the exact offset
mapping of those records is kept (a copy cut before its first sync is compared from both logs'
starts). Where that cannot be established (offset syncs off, no sync
whose record is still on the target, records that differ) the start is refused, naming the state
location and the remote partitions, until the user asks for a fresh copy (``run --fresh-copy``).

Heartbeat topics are left out: every replicator of the pair writes them, they carry no user data,
and copying them again misleads no consumer.
"""
from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import AdminClient

from mirrorspark.config.model import FlowConfig
from mirrorspark.control.admin import partition_offsets, topic_ids
from mirrorspark.control.groups import JavaGroups
from mirrorspark.control.remote_topics import TopicPlan
from mirrorspark.control.transactions import committed_progress
from mirrorspark.errors import ConfigError
from mirrorspark.integrity.batch_guard import DataLossStop
from mirrorspark.integrity.loss import LossLog
from mirrorspark.integrity.spark_offsets import SparkOffsetLog
from mirrorspark.partition import Partition
from mirrorspark.policy.topic_selection import TopicSelection
from mirrorspark.state.files import StateFiles
from mirrorspark.state.location import KEY as STATE_KEY
from mirrorspark.takeover.mm2_state import read_offset_syncs
from mirrorspark.takeover.plan import FILE as TAKEOVER_FILE
from mirrorspark.takeover.plan import FlowTakeover, execute
from mirrorspark.takeover.positions import NEW_GENERATION, PAST_LOG_START, PartitionTakeover, locate

log = logging.getLogger(__name__)

FRESH_COPY_FLAG = "--fresh-copy"
ANCHORED = ("offset sync", "log starts", PAST_LOG_START, NEW_GENERATION)  # how ``locate`` found the resume point


class StateLost(ConfigError):
    """No state for a flow whose remote topics hold records, and no exact way to resume from them."""


@dataclass(frozen=True)
class Clients:
    source: AdminClient
    source_conf: dict[str, Any]
    target: AdminClient
    target_conf: dict[str, Any]
    groups: JavaGroups  # the target's, through Kafka's Java clients


def has_no_state(folder: StateFiles) -> bool:
    """Nothing says where this flow stopped: no Spark offset log and no takeover positions."""
    spark_log = SparkOffsetLog(folder.child("checkpoint"))
    return spark_log.last_committed() is None and spark_log.pending() is None and folder.read(TAKEOVER_FILE) is None


def holding_records(selection: TopicSelection, plan: TopicPlan, target: AdminClient,
                    created: Collection[str] = ()) -> dict[Partition, tuple[int, int]]:
    """Source partitions whose remote partition holds records: (source topic, partition) -> target (start, end).
    Remote topics this start ``created`` are not asked (they are empty; a first start over thousands of
    just-created partitions would otherwise wait for their leaders to answer)."""
    keys = [(source, p) for source, remote in sorted(plan.remote.items())
            if not selection.policy.is_heartbeats_topic(source) and remote not in created
            for p in range(plan.partitions.get(source, 0))]
    remote_keys = [(plan.remote[t], p) for t, p in keys]
    starts = partition_offsets(target, remote_keys, earliest=True)
    ends = partition_offsets(target, remote_keys)
    out = {}
    for (topic, partition), remote_key in zip(keys, remote_keys, strict=True):
        start, end = starts.get(remote_key, 0), ends.get(remote_key, 0)
        if end > start:
            out[(topic, partition)] = (start, end)
    return out


def resume_from_target(flow: FlowConfig, selection: TopicSelection, plan: TopicPlan, clients: Clients,
                       folder: StateFiles, fresh_copy: bool, created: Collection[str] = ()) -> None:
    """On a start without state: write the takeover positions that resume after what the target
    holds, or refuse (StateLost); with ``fresh_copy`` copy again, saying how much the target holds."""
    if not has_no_state(folder):
        return
    held = holding_records(selection, plan, clients.target, created)
    if not held:
        return  # a true first start
    records = sum(end - start for start, end in held.values())
    where = folder.uri()
    if fresh_copy:
        log.warning("flow %s: no state in %s and its remote topics already hold %d record(s): %s copies every "
                    "source record again, next to them", flow.name, where, records, FRESH_COPY_FLAG)
        return
    if flow.exactly_once and _exactly_once_start(flow, held, plan, clients, folder):
        return
    if not flow.options.emit_offset_syncs:
        _refuse(flow, where, held, "emit.offset-syncs.enabled = false, so no offset sync says what was copied")
    on_target = flow.options.offset_syncs_on_target
    sync_topic = selection.policy.offset_syncs_topic(flow.source.alias if on_target else flow.target.alias)
    syncs = read_offset_syncs(clients.target_conf if on_target else clients.source_conf, sync_topic)
    if flow.same_names:
        _same_names_start(flow, where, held, {k: v for k, v in syncs.items() if k in held}, sync_topic)
        return
    source_starts = partition_offsets(clients.source, sorted(held), earliest=True)
    source_ends = partition_offsets(clients.source, sorted(held))  # an end below a sync: a re-created topic
    reader_conf = {**clients.source_conf,
                   "isolation.level": "read_committed" if flow.reads_committed else "read_uncommitted"}
    takeover = FlowTakeover(flow.name, f"the target (no state in {where})")
    for (topic, partition), (start, end) in sorted(held.items()):
        takeover.partitions.append(locate(reader_conf, clients.target_conf, topic, partition, plan.remote[topic], None,
                                          syncs.get((topic, partition), []), start, end,
                                          source_starts.get((topic, partition), 0),
                                          source_ends.get((topic, partition))))
    unanchored = {(p.topic, p.partition): held[(p.topic, p.partition)] for p in takeover.partitions
                  if not p.method.startswith(ANCHORED)}
    if unanchored:
        _refuse(flow, where, unanchored, f"no offset sync in {sync_topic} anchors their last records (or the records "
                                         "after it differ from the source's)")
    gone = [row for row in takeover.partitions if row.lost]
    if gone and flow.fails_on_data_loss:
        where = ", ".join(f"{r.topic}[{r.partition}]" for r in gone)
        raise DataLossStop(f"flow {flow.name}: {sum(r.lost for r in gone)} source record(s) were removed (retention) "
                           "while no instance wrote the flow, before they were copied, and mirrorspark.data.loss = "
                           f"fail: the flow is not started past them ({where})")
    ids = topic_ids(clients.source, sorted({row.topic for row in gone})) if gone else {}
    loss = LossLog(folder, flow.name, source_id=ids.get)
    for row in gone:  # reported before the positions are written: a kill -9 between cannot hide it
        loss.report(row.topic, row.partition, row.resume - row.lost, row.resume - 1,
                    "removed from the source (retention) while no instance wrote the flow, before they were "
                    "copied (at most this many: fewer when the source's offsets have gaps)" if
                    not row.method.startswith(NEW_GENERATION) else
                    "removed from the re-created source topic (retention) before they were copied (at most this many)")
    execute(flow, takeover, folder)
    for row in takeover.partitions:
        if row.method.startswith(NEW_GENERATION):
            log.warning("flow %s: %s[%d]: %s: the copies of the old topic stay on the target, the new topic's records "
                        "are copied from source offset %d", flow.name, row.topic, row.partition, row.method, row.resume)
    log.warning("flow %s: no state in %s, but its remote topics hold %d record(s): it resumes after the last record "
                "already on the target in each of %d partition(s) (an offset sync, or both logs' starts, or the "
                "source's start where retention ran past the copy, and a record-by-record comparison), copying none "
                "of them again", flow.name, where, records, len(takeover.partitions))


def _exactly_once_start(flow: FlowConfig, held: dict[Partition, tuple[int, int]], plan: TopicPlan,
                        clients: Clients, folder: StateFiles) -> bool:
    """Exactly-once: the progress committed with the records says exactly where each partition stops
    (records of open or aborted transactions are not copies). False when a partition holding records has
    none (copied before exactly-once was turned on): the offset syncs decide then."""
    remote = {(plan.remote[t], p): (t, p) for t, p in held}
    sources = sorted({t for t, _ in held})
    source_ids = topic_ids(clients.source, sources)
    remote_ids = topic_ids(clients.target, sorted({plan.remote[t] for t in sources}))
    ids = {plan.remote[t]: (source_ids.get(t, ""), remote_ids.get(plan.remote[t], "")) for t in sources}
    committed = committed_progress(clients.groups, flow, sorted(remote), ids)
    # Progress past the source partition's end is another topic's (re-created since, its ids not in the
    # progress's metadata): the offset syncs and a comparison of the records decide for it.
    ends = partition_offsets(clients.source, sorted({remote[key] for key in committed}))
    committed = {key: position for key, position in committed.items() if position <= ends.get(remote[key], position)}
    missing = sorted(set(remote) - set(committed))
    if missing:  # no progress: only records of transactions never committed, or copies made before exactly-once
        stable = partition_offsets(clients.target, missing, read_committed=True)
        if any(stable.get(key, 0) > held[remote[key]][0] for key in missing):
            return False
    if not committed:
        log.info("flow %s: its remote topics hold only records of transactions never committed: a first start",
                 flow.name)
        return True
    takeover = FlowTakeover(flow.name, f"the target's committed progress ({flow.progress_group})")
    for (topic, partition), position in sorted(committed.items()):
        source = remote[(topic, partition)]
        takeover.partitions.append(PartitionTakeover(source[0], source[1], topic, None, held[source][1], position,
                                                     "exactly-once progress"))
    execute(flow, takeover, folder)
    log.warning("flow %s: no state in %s, but its remote topics hold records: it resumes after the last record "
                "committed on the target in each of %d partition(s), from the progress committed with them "
                "(group %s), copying none of them again", flow.name, folder.uri(), len(held), flow.progress_group)
    return True


def _same_names_start(flow: FlowConfig, where: str, held: dict[Partition, tuple[int, int]],
                      syncs: dict, sync_topic: str) -> None:
    """Active/active on the same names: the remote topics are also the target's own topics, so records
    there are expected. With no offset sync of this flow for them it never wrote there: a first start.
    Otherwise its copies sit among the target's own records and cannot be compared one by one."""
    if not syncs:
        log.info("flow %s: its remote topics are the target's own topics (active/active on the same names) and "
                 "hold %d record(s) of the target; no offset sync in %s says this flow wrote any: a first start",
                 flow.name, sum(end - start for start, end in held.values()), sync_topic)
        return
    _refuse(flow, where, {k: held[k] for k in syncs}, f"offset syncs in {sync_topic} say this flow wrote there, and "
            "its copies sit among the target's own records (active/active on the same names), so the last one cannot "
            "be found by comparing records; restore the state folder")


def _refuse(flow: FlowConfig, where: str, held: dict[Partition, tuple[int, int]], why: str) -> None:
    shown = ", ".join(f"{t}[{p}] ({end - start} record(s))" for (t, p), (start, end) in sorted(held.items())[:4])
    more = f" and {len(held) - 4} more partition(s)" if len(held) > 4 else ""
    raise StateLost(
        f"flow {flow.name}: no state in {where}, but its remote topics already hold records for {shown}{more}, and "
        f"where the copy stopped cannot be established: {why}. Starting would copy them all again. Point "
        f"{STATE_KEY} (or --state-dir, MIRRORSPARK_STATE_DIR) at the state of the earlier run, or start with "
        f"{FRESH_COPY_FLAG} to copy everything again next to what the target holds", STATE_KEY)
