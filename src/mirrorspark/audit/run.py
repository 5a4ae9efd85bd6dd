"""``mirrorspark audit`` from start to end: the input checked, the plan read from the state location,
both clusters' bounds, the Spark job, the checkpoints, then the verdicts.

The order matters: bad input raises ConfigError before Spark starts (unless the state location is a
URI, which Spark's JVM reads), and Spark is stopped whatever happens.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from mirrorspark.audit import cluster, job, settings, verdicts
from mirrorspark.audit.plan import PartitionRuns
from mirrorspark.audit.report import AuditReport
from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.integrity import loss
from mirrorspark.integrity.failover_verdict import read_checkpoints
from mirrorspark.offsets import moved_aside
from mirrorspark.offsets.range_log import RangeLog
from mirrorspark.policy.topic_selection import TopicSelection


def _schema_ids(flow: FlowConfig, selection: TopicSelection, plans: list[PartitionRuns]
                ) -> tuple[dict[int, int] | None, list[str] | None]:
    """A flow that rewrites schema ids (ADR 0028): the ids the target registry holds for the source's
    schemas, and the source topics whose records were rewritten; (None, None) otherwise."""
    if not flow.options.schemas:
        return None, None
    from mirrorspark.config.values import compile_patterns
    from mirrorspark.schemas.registry import registry_of
    from mirrorspark.schemas.sync import SchemaSync

    remote = {p.source_topic: p.remote_topic for p in plans}
    chosen = compile_patterns(flow.options.schema_topics, flow.where("mirrorspark.schemas.topics"))
    policy = selection.policy
    topics = sorted(t for t in remote if not policy.is_heartbeats_topic(t) and not policy.is_internal_topic(t)
                    and (chosen is None or chosen.fullmatch(t)))
    sync = SchemaSync(flow=flow.name, source=registry_of(alias=flow.source.alias, settings=flow.source.settings),
                      target=registry_of(alias=flow.target.alias, settings=flow.target.settings),
                      remote=lambda: remote)
    return sync.copied_map(), topics


def run_audit(config: MirrorConfig, flow_name: str, topics: str | None, state_dir: Path) -> AuditReport:
    """Everything ``mirrorspark audit`` does; bad input raises ConfigError before Spark starts
    (unless the state location is a URI, which Spark's JVM reads)."""
    from mirrorspark.control.client_settings import admin_settings
    from mirrorspark.control.clusters import reach
    from mirrorspark.pipeline.executors import files_to_ship, is_local
    from mirrorspark.pipeline.query_options import source_options
    from mirrorspark.pipeline.spark_session import SPARK_DEFAULTS, build_session, check_master
    from mirrorspark.policy import policy_for_flow
    from mirrorspark.state.location import StateLocation

    started = time.monotonic()
    flow = settings.find_flow(config, flow_name)
    pattern = settings.topic_pattern(topics)
    settings.check_auditable(flow)
    selection = TopicSelection(flow, policy_for_flow(flow.settings, flow.source.alias))
    location = StateLocation.parse(config.driver.state_location, state_dir)
    master = config.spark.get("spark.master", SPARK_DEFAULTS["spark.master"])
    ship = not is_local(master)
    reading_target = settings.target_reader(flow)
    spark = None

    def start_spark():
        if ship:
            check_master(master)
        return build_session({"spark.app.name": f"mirrorspark audit {flow.name}", **config.spark},
                             files_to_ship([flow, reading_target]) if ship else ())

    try:
        if location.needs_spark:
            spark = start_spark()
        folder = location.open(spark).child(flow.source.alias).child(flow.target.alias)
        plans = settings.plans_for(RangeLog(folder.child("offset-ranges")).load(), flow=flow, selection=selection,
                                   pattern=pattern, topics=topics, folder_uri=folder.uri(),
                                   where=location.describe())
        aside = moved_aside.load(folder)
        plans = [replace(p, aside=tuple(aside.get((p.source_topic, p.partition), ()))) for p in plans]
        source_admin = reach(flow.source, admin_settings(flow.source))
        target_admin = reach(flow.target, admin_settings(flow.target))
        level = settings.source_isolation(flow)
        source_bounds = cluster.log_bounds(source_admin, [(p.source_topic, p.partition) for p in plans], level)
        target_bounds = cluster.log_bounds(target_admin, [(p.remote_topic, p.partition) for p in plans],
                                           settings.target_isolation(flow))
        session = spark = spark or start_spark()
        source_opts = settings.batch_options(source_options(flow, "", ship))
        target_opts = settings.batch_options(source_options(reading_target, "", ship))
        schema_ids, schema_topics = _schema_ids(flow, selection, plans)
        partitions = job.spark_call("comparing source and target", lambda: job.compare(
            session, plans, source_options=source_opts, target_options=target_opts, source_bounds=source_bounds,
            target_bounds=target_bounds, same_names=flow.target.alias if flow.same_names else None,
            schema_ids=schema_ids, schema_topics=schema_topics))
        checkpoints_topic = selection.policy.checkpoints_topic(flow.source.alias)
        checkpoints, skipped = job.spark_call(f"reading {checkpoints_topic} on {flow.target.alias}",
                                              lambda: read_checkpoints(session, target_opts, target_admin,
                                                                       checkpoints_topic))
        audited = {p.source_topic for p in plans}
        losses = [r for r in loss.load(folder) if r.topic in audited]
        committed = cluster.group_commits(source_admin, verdicts.checkpointed_groups(plans, checkpoints),
                                          topics=audited, alias=flow.source.alias)
        groups = verdicts.group_verdicts(
            source_alias=flow.source.alias, plans=plans, partitions=partitions, checkpoints=checkpoints,
            committed=committed, ends=cluster.source_ends(source_admin, committed, source_bounds, level),
            losses=losses, interval=flow.options.checkpoints_interval)
        notes = [f"{p.source_topic}[{p.partition}] offsets {lo}..{hi - 1} were moved aside by `mirrorspark "
                 f"reconcile` (kept in side topics, not compared)" for p in plans for lo, hi in p.aside]
        notes += verdicts.absent_partitions(plans, source_alias=flow.source.alias, target_alias=flow.target.alias,
                                           source_bounds=source_bounds, target_bounds=target_bounds)
        return AuditReport(flow=flow.name, state=folder.uri(), partitions=partitions, data_loss=losses,
                           groups=groups, checkpoints_skipped=skipped, notes=notes,
                           seconds=time.monotonic() - started)
    finally:
        if spark is not None:
            spark.stop()
