"""One flow wired together before any data moves, each part complete when it is constructed.

MM2 spreads this over its connectors' ``start()`` methods; here it is one place that knows the order:
topics and their identity first (nothing may be read before a re-created topic is noticed), then offset
state, the control-plane tasks, the streaming query and its supervisor, and the lag probe. The runner
(``runner.py``) owns the process; this module owns a flow.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.config.values import compile_patterns
from mirrorspark.control.acl_sync import AclSync
from mirrorspark.control.admin import check_replication_factor, partition_offsets
from mirrorspark.control.clusters import Clusters, ClusterUnreachable
from mirrorspark.control.heartbeats import HeartbeatEmitter
from mirrorspark.control.remote_topics import RemoteNames, RemoteTopics
from mirrorspark.control.scheduler import HEARTBEATS, OFFSETS, TOPICS, GatedScheduler, Scheduler, flow_lane
from mirrorspark.control.topic_configs import TopicConfigs
from mirrorspark.control.transactions import check_transactions
from mirrorspark.coordination.claims import Claims, SharedOlderCopies
from mirrorspark.integrity.batch_guard import BatchGuard, Fenced
from mirrorspark.integrity.loss import LossLog
from mirrorspark.integrity.spark_offsets import SparkOffsetLog
from mirrorspark.integrity.topic_identity import TopicIdentity
from mirrorspark.integrity.write_marks import WriteMarks
from mirrorspark.metrics.flow_metrics import FlowMetrics
from mirrorspark.metrics.lag import IDLE_ROUNDS, LagProbe
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.offsets.flow_offsets import FlowOffsets
from mirrorspark.partition import Partition
from mirrorspark.pipeline.flow_query import FlowQuery
from mirrorspark.pipeline.query_start import QueryStart
from mirrorspark.pipeline.realtime import TOPIC_WATCH_SECONDS, SlotBook
from mirrorspark.pipeline.record_columns import PATH_HEADER
from mirrorspark.pipeline.supervision import FlowSupervisor, RestartRequests
from mirrorspark.policy import ReplicationPolicy
from mirrorspark.policy.topic_selection import TopicSelection
from mirrorspark.schemas.registry import RegistryError, registry_of
from mirrorspark.schemas.sync import SchemaSync
from mirrorspark.state import StateFiles
from mirrorspark.state.identity import check_state_identity
from mirrorspark.takeover.lost_state import Clients, resume_from_target
from mirrorspark.takeover.plan import load_positions, rewind_positions

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Shared:
    """What every flow of the process shares."""

    clusters: Clusters
    state: StateFiles
    scheduler: Scheduler
    metrics: MirrorMetrics
    remote_names: RemoteNames  # one source per remote topic, across every flow of the process
    ship_files: bool  # executors in other JVMs: client files shipped with the query
    lag_interval: float
    slots: SlotBook  # the Spark application's task slots, shared by the flows (real-time mode holds many)
    fresh_copy: bool = False  # run --fresh-copy: a flow without state copies again next to its remote topics


@dataclass(frozen=True, kw_only=True)
class FlowContext:
    """What one flow is built from: its settings and replication policy, the process's shared parts
    (clients, state, scheduler, metrics) and this instance's id; its state folder and scheduler lanes
    follow from them."""

    config: FlowConfig
    policy: ReplicationPolicy
    shared: Shared
    instance: str

    @property
    def folder(self) -> StateFiles:
        return self.shared.state.child(self.config.source.alias).child(self.config.target.alias)

    @property
    def lanes(self) -> list[str]:
        return flow_lanes(self.config)


@dataclass(frozen=True)
class AssembledFlow:
    """A flow ready to start: its query, the supervisor restarting it, its offsets and lag probe."""

    query: FlowQuery
    supervisor: FlowSupervisor
    offsets: FlowOffsets
    probe: LagProbe


def flow_lanes(flow: FlowConfig) -> list[str]:
    """The scheduler lanes of a flow's control tasks (cancelled when another instance takes it)."""
    return [flow_lane(flow.name, TOPICS), flow_lane(flow.name, OFFSETS)]


def _fullmatch(patterns: tuple[str, ...], where: str) -> Callable[[str], object] | None:
    pattern = compile_patterns(patterns, where)
    return None if pattern is None else pattern.fullmatch


def _schema_topics(policy: ReplicationPolicy, chosen: Callable[[str], object] | None) -> Callable[[str], bool]:
    """Source topics whose records are in the wire format: MM2's heartbeats never (their own format
    starts with a 0 byte too), internal topics never, the others as ``mirrorspark.schemas.topics`` says."""
    return lambda topic: not policy.is_heartbeats_topic(topic) and not policy.is_internal_topic(topic) \
        and (chosen is None or bool(chosen(topic)))


def assemble_flow(context: FlowContext, *, writing: Callable[[], bool] | None = None,
                  unbroken: Callable[[], bool] | None = None,
                  lease: tuple[str, str] | None = None) -> AssembledFlow:
    """Check and wire one enabled flow; raises a family error, before anything is copied, on bad input.
    ``writing``: whether this process still holds the flow's lease (None: no lease); batches and
    control tasks check it before they write. ``unbroken``: the lease has not been lost since now,
    checked (without waiting for a confirmation) before a query restart reads this state.
    ``lease``: the lease's group and the writer its confirmations name, by which executors in JVMs
    of their own read the lease."""
    flow, shared = context.config, context.shared
    options = flow.options
    selection = TopicSelection(flow, context.policy)
    if flow.same_names:
        log.info("flow %s runs active/active on the same topic names: each record it copies carries the clusters "
                 "it has been in (header %s), and records that have been in %s are not copied back", flow.name,
                 PATH_HEADER, flow.target.alias)
    (source, source_conf), (target, target_conf) = (shared.clusters.admin(flow.source),
                                                    shared.clusters.admin(flow.target))
    if flow.exactly_once:
        check_transactions(flow, target, target_conf)  # before any topic is created or record copied
    configs = TopicConfigs(flow=flow, source=source, target=target)

    def drop_unsent(topics: list[str]) -> None:
        """Remote topics deleted on the target are made again by the restart: what the stopped query's
        producers in this JVM still retry for them is dropped first, or it would land in the new topics
        ahead of their refill, which copies those records again (the twelfth soak run: 3 records a
        partition copied twice). Executors in JVMs of their own are not reached (ADR 0022)."""
        jvm = shared.clusters.driver_jvm()
        if jvm is None:
            return
        closed = jvm.fences().drop_unsent(flow.name)
        if closed:
            log.info("flow %s: %d producer(s) closed before %s is made again: what they still held for the "
                     "deleted topic is copied by its refill instead", flow.name, closed, ", ".join(topics))

    remote = RemoteTopics(flow=flow, selection=selection, source=source, target=target,
                          target_refresh_seconds=options.refresh_topics_interval, configs=configs,
                          names=shared.remote_names, before_recreate=drop_unsent)
    remote.check_replication_factor()
    folder = context.folder
    check_state_identity(folder, flow.name, flow.source.alias, flow.target.alias, source, target)
    if options.refresh_topics:
        remote.refresh(force_target_check=True)
    else:
        remote.freeze_topics()
    # Before the offset state is loaded: a flow without state resumes from what the target holds.
    clients = Clients(source=source, source_conf=source_conf, target=target, target_conf=target_conf,
                      groups=shared.clusters.groups(flow.target))
    resume_from_target(flow, selection, remote.plan, clients, folder, shared.fresh_copy, remote.created)
    offsets = FlowOffsets(flow=flow, selection=selection, source=source, target=target, source_conf=source_conf,
                          target_conf=target_conf, state=folder, source_of=remote.source_of, metrics=shared.metrics,
                          group_clients=(shared.clusters.groups(flow.source), shared.clusters.groups(flow.target)))
    offsets.check_replication_factors()
    checkpoint = folder.child("checkpoint")
    marks = WriteMarks(folder)
    # A loss is counted in the log of the source topic's generation (its id as the identity check
    # knows it): the identity is made next, and reports come from batches and checks that follow.
    loss = LossLog(folder, flow.name, source_id=lambda topic: identity.source_ids.get(topic))
    # Where the query's first batch starts (after a takeover, or a start without state): one dict, read
    # by the query's start and its batches, moved by the identity check when a topic is re-created.
    takeover = load_positions(folder)
    identity = TopicIdentity(files=folder, flow_name=flow.name, source=source, target=target, loss=loss, marks=marks,
                             spark_log=SparkOffsetLog(checkpoint), mapping=offsets, takeover=takeover,
                             rewind_takeover=lambda topic, starts: rewind_positions(folder, takeover, topic, starts),
                             shared=None if lease is None else SharedOlderCopies(Claims(target, target_conf),
                                                                                 flow=flow.name, group=lease[0]))
    figures = FlowMetrics(shared.metrics, flow.source.alias, flow.target.alias,
                          connectors=("MirrorSourceConnector",) + (("MirrorCheckpointConnector",)
                                                                  if flow.options.emit_checkpoints else ()))
    restarts = RestartRequests()  # asked by the control tasks below, acted on by the supervisor

    # Real-time mode: a re-created source topic is handled after the batch writing it is recorded
    # (``after_realtime_batch``), not by the checks beside a batch that is still writing.
    handles_sources = not flow.options.realtime

    def check_identity(full: bool = False) -> dict[str, str]:
        """The identity check (the checkpoint round's is not ``full``); returns the remote topics'
        ids it read (the checkpoint round uses them)."""
        if identity.check(remote.plan.remote, remote.plan.partitions, full, sources=handles_sources):
            restarts.ask("a source topic was re-created")
        return dict(identity.remote_ids)

    suspected: dict[Partition, int] = {}  # given up by the last batch, its topic's id unchanged

    def after_realtime_batch(given_up: dict[Partition, int]) -> None:
        """After each recorded real-time batch: a re-plan the topic refresh found (topics added or gone),
        its source topics' ids (one request), and the partitions its tasks gave up (their end went behind
        what was read). A re-created topic is read again from its start; a partition that went back with
        its topic unchanged was truncated, and is reported."""
        planned = remote.plan
        if (reason := query.replan_reason(planned)) is not None:
            restarts.ask(reason)
        if not given_up and not identity.source_changed(sorted(planned.remote)):
            return
        if identity.check(planned.remote, planned.partitions, full=False):
            restarts.ask("a source topic was re-created")
        kept = {k: at for k, at in given_up.items() if k[0] in planned.remote and k[0] not in identity.rewinds}
        ends = partition_offsets(source, sorted(kept)) if kept else {}
        behind = {k: (ends[k], at) for k, at in kept.items() if k in ends and ends[k] < at}
        # Truncated only when given up at the same offset by two batches in a row, its topic's id the same
        # both times: a re-created topic's new id may not have reached the broker that answered yet.
        back = {k: gap for k, gap in behind.items() if suspected.get(k) == gap[1]}
        suspected.clear()
        suspected.update({k: at for k, (_, at) in behind.items() if k not in back})
        if back:
            identity.source_truncated(back)
            restarts.ask("a source partition went back (truncated)")

    restarted_for: set[str] = set()  # remote topics gone that a restart was asked for already

    def refresh_topics() -> None:
        plan = remote.refresh(force_target_check=True, recreate=False)  # beside a running batch: see ``refresh``
        check_identity(full=True)
        if remote.gone - restarted_for:
            restarts.ask(f"remote topic(s) {', '.join(sorted(remote.gone - restarted_for))} deleted on the target")
        restarted_for.clear()
        restarted_for.update(remote.gone)
        figures.forget_topics(set(plan.remote.values()), set(plan.remote))
        # Real-time mode re-plans after the batch in flight is recorded (``after_realtime_batch``): a restart
        # now would cut it off unrecorded, and a topic deleted meanwhile would count its copies as lost.
        if handles_sources and (reason := query.replan_reason(plan)) is not None:
            restarts.ask(reason)

    identity.check(remote.plan.remote, remote.plan.partitions)  # before the query reads anything
    scheduler = GatedScheduler(shared.scheduler, writing) if writing is not None else shared.scheduler
    interval = options.refresh_topics_interval
    topics_lane, offsets_lane = flow_lane(flow.name, TOPICS), flow_lane(flow.name, OFFSETS)
    scheduler.every(f"flow {flow.name}: topic refresh", interval, refresh_topics, initial_delay=interval,
                    lane=topics_lane)
    if flow.options.realtime:
        # Micro-batches meet a new topic or partition within seconds: their source lists the topics itself.
        # A real-time query reads a fixed assignment and re-plans at a batch end, so its topics are listed
        # once a batch (what changed is created on the target; the next batch end restarts the query).
        watch = max(TOPIC_WATCH_SECONDS, options.realtime_batch)
        scheduler.every(f"flow {flow.name}: topic watch", watch, lambda: remote.refresh(recreate=False),
                        initial_delay=watch, lane=topics_lane)
    scheduler.every(f"flow {flow.name}: topic config sync", options.topic_configs_interval,
                    lambda: configs.sync(remote.plan.remote), lane=topics_lane)
    acls = AclSync(flow_name=flow.name, source=source, target=target)
    scheduler.every(f"flow {flow.name}: ACL sync", options.topic_acls_interval,
                    lambda: acls.sync(remote.plan.remote), lane=topics_lane)
    schemas = None
    if options.schemas:
        schemas = SchemaSync(flow=flow.name, source=registry_of(alias=flow.source.alias, settings=flow.source.settings),
                             target=registry_of(alias=flow.target.alias, settings=flow.target.settings),
                             remote=lambda: remote.plan.remote,
                             subjects=_fullmatch(options.schema_subjects,
                                                 flow.where("mirrorspark.schemas.subjects")),
                             topics=_schema_topics(context.policy, _fullmatch(options.schema_topics,
                                                                              flow.where("mirrorspark.schemas.topics"))),
                             keep_ids=options.schemas_keep_ids)
        try:
            schemas.run()  # before the first batch: its records' ids are in the map
        except RegistryError as exc:  # not fatal: a batch meeting an id not copied yet waits for the registry
            log.warning("flow %s: schema sync could not run yet (records whose schema it has not copied wait for "
                        "it): %s", flow.name, exc)
        scheduler.every(f"flow {flow.name}: schema sync", options.schemas_interval, schemas.run, lane=topics_lane)
    offsets.start()
    offsets.schedule(scheduler, check_identity)
    loss.listeners.append(lambda report: figures.records_lost(report.topic, report.partition, report.records))
    guard = BatchGuard(flow_name=flow.name, marks=marks, loss=loss,
                       source_starts=lambda parts: partition_offsets(source, parts, earliest=True),
                       target_ends=lambda parts: partition_offsets(target, parts),
                       fail_on_loss=flow.fails_on_data_loss, rewinds_pending=identity.rewinds_pending,
                       writing=writing, identity=identity)

    def before_start() -> None:
        if unbroken is not None and not unbroken():  # the flow is taken again first (``Flow._lease_unbroken``)
            raise Fenced(f"flow {flow.name}: the query is not restarted: this process no longer holds the flow's lease "
                         "it took the flow with (lost and held again since); the flow is taken again first")
        plan = remote.refresh(force_target_check=True)  # a remote topic deleted meanwhile is re-created
        identity.check(plan.remote, plan.partitions)  # ... and its offset mapping bound to the new one
        identity.apply_rewinds()

    start = QueryStart(flow=flow, selection=selection, remote_topics=remote,
                       takeover=takeover)  # where MM2 stopped, or the target's copies end
    query = FlowQuery(flow=flow, start=start, checkpoint=checkpoint, guard=guard, slots=shared.slots,
                      on_written=offsets.on_written if offsets.enabled else None, metrics=figures,
                      ship_files=shared.ship_files, before_start=before_start,
                      lease=lease, schemas=schemas,
                      after_realtime_batch=after_realtime_batch if flow.options.realtime else None)
    supervisor = FlowSupervisor(query=query, loss=loss, metrics=shared.metrics, requests=restarts)
    probe = LagProbe(metrics=shared.metrics, flow_name=flow.name, source=flow.source.alias, target=flow.target.alias,
                     admin=source, source_conf=source_conf, read_committed=flow.reads_committed,
                     planned_topics=lambda: list(remote.plan.remote), positions=query.committed_positions,
                     on_ends=identity.note_source_ends,
                     held=selection.heartbeats_pattern() if flow.options.heartbeats_hold > 0 else None,
                     idle_interval=IDLE_ROUNDS * shared.lag_interval, on_round=supervisor.source_round)

    scheduler.every(f"flow {flow.name}: lag", shared.lag_interval, probe.safe_run, lane=offsets_lane)

    def watch_source_ids() -> None:
        """A re-created source topic is seen within a lag interval, not at the next checkpoint round."""
        if identity.source_changed(sorted(remote.plan.remote)):
            check_identity()
    if handles_sources:
        scheduler.every(f"flow {flow.name}: source topic ids", shared.lag_interval, watch_source_ids,
                        initial_delay=shared.lag_interval, lane=offsets_lane)
    return AssembledFlow(query, supervisor, offsets, probe)


def assemble_heartbeats(config: MirrorConfig, policies: dict[str, ReplicationPolicy], shared: Shared,
                        writing: Callable[[str], bool] = lambda _flow: True,
                        restart: bool = False) -> list[HeartbeatEmitter]:
    """MM2's herder pairs: every pair with its flow or its heartbeats enabled beats into its target,
    on a scheduler lane of its target's own (slow admin tasks, or a target cluster out of reach, never
    delay the other targets' beats). A pair whose flow another
    instance writes beats there, not here (``writing``), as one MM2 worker of a group does.
    At a ``restart`` (a flow of the process has state), a target that does not answer is an outage,
    not a wrong address: its pair starts beating when it answers, and the process starts."""
    emitters = []
    for flow in config.flows:
        if not flow.heartbeats.emit:
            continue
        if not (flow.source.settings.get("bootstrap.servers") and flow.target.settings.get("bootstrap.servers")):
            log.warning("pair %s: no heartbeats, a cluster of the pair has no bootstrap.servers", flow.name)
            continue
        lane = f"{HEARTBEATS} {flow.target.alias}"
        try:
            emitter = _heartbeat_emitter(flow, policies[flow.name], shared)
        except ClusterUnreachable as exc:
            if not restart:
                raise
            log.warning("pair %s: no heartbeats until cluster %r answers (a restart during an outage): %s", flow.name,
                        flow.target.alias, exc)
            shared.scheduler.every(f"pair {flow.name}: heartbeats", flow.heartbeats.interval,
                                   _beat_once_reached(flow, policies[flow.name], shared, writing), lane=lane)
            continue
        emitters.append(emitter)
        shared.scheduler.every(f"pair {flow.name}: heartbeats", flow.heartbeats.interval,
                               _beat_while(emitter, flow.name, writing), lane=lane)
    return emitters


def _heartbeat_emitter(flow: FlowConfig, policy: ReplicationPolicy, shared: Shared) -> HeartbeatEmitter:
    """The pair's emitter, its heartbeats topic created; raises ClusterUnreachable, or ConfigError."""
    target, target_conf = shared.clusters.admin(flow.target)
    rf_key = "heartbeats.topic.replication.factor"
    rf = flow.heartbeats.replication_factor
    check_replication_factor(target, rf, flow.where(rf_key), f"cluster {flow.target.alias!r}")
    emitter = HeartbeatEmitter(flow=flow, policy=policy, target=target, target_conf=target_conf, replication_factor=rf)
    emitter.start()
    return emitter


def _beat_once_reached(flow: FlowConfig, policy: ReplicationPolicy, shared: Shared,
                       writing: Callable[[str], bool]) -> Callable[[], None]:
    """A pair whose target did not answer at start: each beat first tries to make its emitter (a
    failure is the scheduler's to log and retry at the next interval)."""
    made: list[HeartbeatEmitter] = []

    def beat() -> None:
        if not made:
            made.append(_heartbeat_emitter(flow, policy, shared))
            log.info("pair %s: cluster %r answers: heartbeats start", flow.name, flow.target.alias)
        if writing(flow.name):
            made[0].beat()
    return beat


def _beat_while(emitter: HeartbeatEmitter, flow: str, writing: Callable[[str], bool]) -> Callable[[], None]:
    def beat() -> None:
        if writing(flow):
            emitter.beat()
    return beat
