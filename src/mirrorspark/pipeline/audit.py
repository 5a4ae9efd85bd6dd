"""``mirrorspark audit``: source against target, record by record, over a flow's exact offset ranges.

MM2 cannot say whether its copy is complete: it keeps only sparse offset syncs. mirrorspark's
range log knows which target offset holds each replicated source offset, so the check is exact:
a source record no target record maps to is *missing*, a target record no run maps to is a
*duplicate* (a copy written twice, or a record written behind the replicator's back), and a
mapped pair whose key, value, headers or timestamp differ is *differing*.

It runs as one Spark batch job so big topics are fine: both clusters are read over the replicated
ranges by Spark's Kafka source, every record is hashed on the JVM (``xxhash64``), target offsets
are mapped to source offsets by a broadcast join with the run table, and source and target meet
in one shuffle join by source offset. Only one row per partition comes back to Python.

A flow that runs active/active on the same names writes into topics that also hold the target's own
records, skips the source records that came from its target, and marks its copies with their path
(``mirrorspark.path``): the audit compares its copies only (records with a path), leaves out the
source records it skips, and hashes headers without the path.
"""
from __future__ import annotations

import itertools
import json
import logging
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.control.admin import partition_offsets
from mirrorspark.errors import ConfigError, OperationalError
from mirrorspark.integrity import loss
from mirrorspark.integrity.failover_verdict import GroupVerdict, assess, read_checkpoints
from mirrorspark.offsets.range_log import RangeLog
from mirrorspark.offsets.ranges import OffsetRanges
from mirrorspark.pipeline.record_columns import PATH_HEADER
from mirrorspark.policy.topic_selection import TopicSelection
from mirrorspark.state.files import StateError, StateFiles

log = logging.getLogger(__name__)

Key = tuple[str, int]
Bounds = dict[Key, tuple[int, int]]  # (log start, log end) per partition that exists
CHECKSUM_MOD = 1 << 64


class AuditError(OperationalError):
    """The audit job could not run (a Spark or Kafka failure); the message says which side."""


@dataclass(frozen=True)
class PartitionRuns:
    """One source partition's runs ``(upstream, downstream, count, exact_gap_after)``, in source order."""

    source_topic: str
    remote_topic: str
    partition: int
    runs: tuple[tuple[int, int, int, bool], ...]

    @property
    def source_span(self) -> tuple[int, int]:
        """``[first, end)``: first run's upstream to last run's end."""
        return self.runs[0][0], self.runs[-1][0] + self.runs[-1][2]

    @property
    def target_span(self) -> tuple[int, int]:
        return min(d for _, d, _, _ in self.runs), max(d + n for _, d, n, _ in self.runs)

    def unknown_gaps(self) -> list[tuple[int, int, int, int]]:
        """``(source lo, source hi, target lo, target hi)`` between runs whose history was thinned:
        what lies there was probably copied, but which record went where is no longer known."""
        gaps = []
        for (u, d, n, exact), (u2, d2, _, _) in itertools.pairwise(self.runs):
            if not exact:
                gaps.append((u + n, u2, d + n, max(d + n, d2)))
        return gaps


@dataclass
class PartitionAudit:
    """What the comparison found in one partition (offsets are inclusive; None: nothing of the kind)."""

    source_topic: str
    remote_topic: str
    partition: int
    runs: int
    source_range: tuple[int, int]
    target_range: tuple[int, int]
    source_records: int = 0
    target_records: int = 0
    matched: int = 0
    missing: int = 0
    duplicated: int = 0
    differing: int = 0
    unverified: int = 0       # records in thinned gaps on either side: not judged
    source_removed: int = 0   # target records whose source record is gone (retention, compaction)
    first_missing: int | None = None      # source offset
    first_duplicated: int | None = None   # target offset
    first_differing: int | None = None    # source offset
    source_checksum: str = ""
    target_checksum: str = ""

    @property
    def problems(self) -> int:
        return self.missing + self.duplicated + self.differing

    def as_dict(self) -> dict:
        return {**asdict(self), "source_range": list(self.source_range), "target_range": list(self.target_range)}


@dataclass
class AuditReport:
    flow: str
    state: str
    partitions: list[PartitionAudit]
    data_loss: list[loss.LossReport]
    groups: list[GroupVerdict]
    checkpoints_skipped: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(p.problems == 0 for p in self.partitions)

    def totals(self) -> dict[str, int]:
        keys = ("source_records", "target_records", "matched", "missing", "duplicated", "differing", "unverified",
                "source_removed")
        return {k: sum(getattr(p, k) for p in self.partitions) for k in keys}

    def as_dict(self) -> dict:
        return {"flow": self.flow, "state": self.state, "ok": self.ok, "totals": self.totals(),
                "partitions": [p.as_dict() for p in self.partitions],
                "data_loss": [asdict(r) for r in self.data_loss],
                "groups": [g.as_dict() for g in self.groups],
                "checkpoints_skipped": self.checkpoints_skipped, "seconds": round(self.seconds, 1),
                "notes": self.notes}


def find_flow(config: MirrorConfig, name: str) -> FlowConfig:
    """The flow ``A->B`` of ``config`` (enabled or not: its state may outlive the setting)."""
    for flow in config.flows:
        if flow.name == name.strip():
            return flow
    known = ", ".join(f.name for f in config.enabled_flows) or "none enabled"
    raise ConfigError(f"--flow {name!r} is not a flow of this configuration (flows are source->target between "
                      f"clusters {', '.join(config.clusters)}; enabled: {known})", "--flow")


def topic_pattern(value: str | None) -> re.Pattern | None:
    if value is None:
        return None
    try:
        return re.compile(value)
    except re.error as exc:
        raise ConfigError(f"--topics {value!r} is not a valid regular expression: {exc}", "--topics") from None


def select_partitions(ranges: OffsetRanges, selection: TopicSelection,
                      pattern: re.Pattern | None) -> list[PartitionRuns]:
    """The range log's partitions (``pattern`` fully matching the source or the remote topic name)."""
    out = []
    for topic, partition in ranges.partitions():
        rows = ranges.rows(topic, partition)
        remote = selection.remote_name(topic)
        if not rows or (pattern is not None and not (pattern.fullmatch(topic) or pattern.fullmatch(remote))):
            continue
        plan = PartitionRuns(topic, remote, partition, tuple(rows))
        _check_disjoint(plan)
        out.append(plan)
    return out


def _check_disjoint(plan: PartitionRuns) -> None:
    """Two runs claiming one target offset would make every count below wrong: refuse."""
    spans = sorted((d, d + n) for _, d, n, _ in plan.runs)
    for (_, end), (start, _) in itertools.pairwise(spans):
        if start < end:
            raise StateError(f"offset ranges of {plan.source_topic}[{plan.partition}] map two source offsets to "
                             f"target offset {start}: the range log is damaged, the audit cannot trust it")


def log_bounds(admin: AdminClient, keys: Iterable[Key], isolation: IsolationLevel) -> Bounds:
    """(log start, log end) of each partition that exists (end: the last stable offset when
    ``isolation`` is read_committed, as the flow reads)."""
    metadata = admin.list_topics(timeout=30).topics
    wanted = [TopicPartition(t, p) for t, p in sorted(set(keys))
              if t in metadata and metadata[t].error is None and p in metadata[t].partitions]
    if not wanted:
        return {}
    pairs = [(tp.topic, tp.partition) for tp in wanted]
    committed = isolation == IsolationLevel.READ_COMMITTED
    starts = partition_offsets(admin, pairs, earliest=True, timeout=30, read_committed=committed)
    ends = partition_offsets(admin, pairs, timeout=30, read_committed=committed)
    return {key: (starts[key], end) for key, end in ends.items() if key in starts}


def read_window(span: tuple[int, int], bounds: tuple[int, int] | None) -> tuple[int, int] | None:
    """The part of ``span`` the log still holds (None: the partition does not exist)."""
    if bounds is None:
        return None
    end = max(span[0], min(span[1], bounds[1]))
    return min(max(span[0], bounds[0]), end), end


def kafka_read(spark, options: Mapping[str, str], windows: Mapping[Key, tuple[int, int]]):
    """A batch DataFrame of exactly ``windows`` ([start, end) per partition), or None when empty."""
    windows = {k: w for k, w in windows.items() if w[1] > w[0]}
    if not windows:
        return None
    topics: dict[str, dict[str, tuple[int, int]]] = {}
    for (topic, partition), window in windows.items():
        topics.setdefault(topic, {})[str(partition)] = window
    reader = spark.read.format("kafka")
    for key, value in options.items():
        reader = reader.option(key, value)
    return (reader.option("assign", json.dumps({t: sorted(int(p) for p in ps) for t, ps in topics.items()}))
            .option("startingOffsets", json.dumps({t: {p: w[0] for p, w in ps.items()} for t, ps in topics.items()}))
            .option("endingOffsets", json.dumps({t: {p: w[1] for p, w in ps.items()} for t, ps in topics.items()}))
            .load())


def record_hash(without_path: bool = False):
    """Key, value, headers and timestamp in one 64-bit hash (Spark's hashes skip nulls, so the null
    flags keep a null key with value ``x`` apart from key ``x`` with a null value); ``without_path``
    leaves the active/active path header out (a copy carries one more cluster in it)."""
    from pyspark.sql import functions as F

    headers = F.filter("headers", lambda h: h["key"] != PATH_HEADER) if without_path else F.col("headers")
    return F.xxhash64(F.col("key"), F.col("value"), headers, F.unix_millis(F.col("timestamp")),
                      F.col("key").isNull(), F.col("value").isNull())


def _path_names(alias: str):
    """True for a record whose path header names cluster ``alias`` (it has been there)."""
    from pyspark.sql import functions as F

    return F.exists("headers", lambda h: (h["key"] == PATH_HEADER)
                    & F.array_contains(F.split(h["value"].cast("string"), ","), alias))


def _has_path():
    from pyspark.sql import functions as F

    return F.coalesce(F.exists("headers", lambda h: h["key"] == PATH_HEADER), F.lit(False))


def compare(spark, plans: list[PartitionRuns], source_options: Mapping[str, str], target_options: Mapping[str, str],
            source_bounds: Bounds, target_bounds: Bounds, same_names: str | None = None) -> list[PartitionAudit]:
    """Run the comparison job; one PartitionAudit per plan, in plan order. ``same_names``: the target's
    alias of a flow that runs active/active on the same names."""
    from pyspark.sql import functions as F

    source_windows = {(p.source_topic, p.partition): w for p in plans
                      if (w := read_window(p.source_span, source_bounds.get((p.source_topic, p.partition))))}
    target_windows = {(p.remote_topic, p.partition): w for p in plans
                      if (w := read_window(p.target_span, target_bounds.get((p.remote_topic, p.partition))))}
    pairs = sorted({(p.remote_topic, p.source_topic) for p in plans})
    source_of = F.create_map(*[F.lit(name) for pair in pairs for name in pair])

    source_df, target_df = kafka_read(spark, source_options, source_windows), kafka_read(spark, target_options,
                                                                                         target_windows)
    if same_names is not None:
        source_df = None if source_df is None else source_df.where(~F.coalesce(_path_names(same_names), F.lit(False)))
        target_df = None if target_df is None else target_df.where(_has_path())
    marked = same_names is not None
    source = _side(source_df, spark, F.col("topic"), marked)
    source = _flag_unknown(spark, source, plans, side=0).select(
        F.col("st").alias("s_topic"), F.col("partition").alias("s_part"), F.col("offset").alias("s_off"),
        F.col("hash").alias("s_hash"), F.col("unknown").alias("s_unknown"))
    target = _map_to_source(spark, _side(target_df, spark, F.element_at(source_of, F.col("topic")), marked), plans)
    target = _flag_unknown(spark, target, plans, side=1)
    joined = source.join(target, (source["s_topic"] == target["st"]) & (source["s_part"] == target["partition"])
                         & (source["s_off"] == target["upstream"]), "full_outer")
    rows = _aggregate(joined).collect()
    found = {(r["topic"], r["partition"]): r for r in rows}
    return [_result(plan, found.get((plan.source_topic, plan.partition))) for plan in plans]


_SIDE_SCHEMA = "st string, topic string, partition int, offset long, hash long"


def _side(df, spark, source_topic, without_path: bool = False):
    """(source topic, topic, partition, offset, hash) of one cluster's records (empty when nothing is read)."""

    if df is None:
        return spark.createDataFrame([], _SIDE_SCHEMA)
    return df.select(source_topic.alias("st"), "topic", "partition", "offset",
                     record_hash(without_path).alias("hash"))


def _map_to_source(spark, target, plans: list[PartitionRuns]):
    """Each target record's source offset through the runs (null: no run covers it); a broadcast
    join on the offset range, the run table being small (at most max-runs rows per partition)."""
    from pyspark.sql import functions as F

    runs = spark.createDataFrame(
        [(p.remote_topic, p.partition, u, d, n) for p in plans for u, d, n, _ in p.runs],
        "r_topic string, r_part int, r_up long, r_down long, r_count long")
    offset = target["offset"]  # by name: DataFrame.offset is a method
    on = ((target["topic"] == runs["r_topic"]) & (target["partition"] == runs["r_part"]) & (offset >= runs["r_down"])
          & (offset < runs["r_down"] + runs["r_count"]))
    return target.join(F.broadcast(runs), on, "left").select(
        "st", "topic", "partition", "offset", "hash",
        (F.col("r_up") + (F.col("offset") - F.col("r_down"))).alias("upstream"))


def _flag_unknown(spark, df, plans: list[PartitionRuns], side: int):
    """Adds ``unknown``: the offset lies in a thinned gap (side 0: source offsets, 1: target)."""
    from pyspark.sql import functions as F

    gaps = [(p.source_topic, p.partition, g[2 * side], g[2 * side + 1]) for p in plans for g in p.unknown_gaps()]
    if not gaps:
        return df.withColumn("unknown", F.lit(False))
    table = spark.createDataFrame(gaps, "g_topic string, g_part int, g_lo long, g_hi long")
    on = ((df["st"] == table["g_topic"]) & (df["partition"] == table["g_part"]) & (df["offset"] >= table["g_lo"])
          & (df["offset"] < table["g_hi"]))
    return df.join(F.broadcast(table), on, "left").withColumn("unknown", F.col("g_lo").isNotNull()) \
        .drop("g_topic", "g_part", "g_lo", "g_hi")


def _aggregate(joined):
    """Counts, first offsets and checksums per source partition."""
    from pyspark.sql import functions as F

    s, t = F.col("s_off").isNotNull(), F.col("offset").isNotNull()
    mapped = F.col("upstream").isNotNull()
    kinds = {
        "matched": s & t & (F.col("s_hash") == F.col("hash")),
        "differing": s & t & (F.col("s_hash") != F.col("hash")),
        "missing": s & ~t & ~F.col("s_unknown"),
        "duplicated": t & ~mapped & ~F.col("unknown"),
        "unverified": (s & ~t & F.col("s_unknown")) | (t & ~mapped & F.col("unknown")),
        "source_removed": t & mapped & ~s,
    }

    def count(condition):
        return F.sum(F.when(condition, 1).otherwise(0))

    return joined.groupBy(F.coalesce("s_topic", "st").alias("topic"),
                          F.coalesce("s_part", "partition").alias("partition")).agg(
        F.count("s_off").alias("source_records"), F.count("offset").alias("target_records"),
        *[count(condition).alias(name) for name, condition in kinds.items()],
        F.min(F.when(kinds["missing"], F.col("s_off"))).alias("first_missing"),
        F.min(F.when(kinds["duplicated"], F.col("offset"))).alias("first_duplicated"),
        F.min(F.when(kinds["differing"], F.col("s_off"))).alias("first_differing"),
        # Sums of the hashes: order-free, and unlike XOR a duplicate does not cancel its twin.
        F.sum(F.col("s_hash").cast("decimal(20,0)")).alias("source_sum"),
        F.sum(F.col("hash").cast("decimal(20,0)")).alias("target_sum"))


def _checksum(total) -> str:
    return f"{int(total or 0) % CHECKSUM_MOD:016x}"


def _result(plan: PartitionRuns, row) -> PartitionAudit:
    (s0, s1), (t0, t1) = plan.source_span, plan.target_span
    audit = PartitionAudit(plan.source_topic, plan.remote_topic, plan.partition, len(plan.runs),
                           (s0, s1 - 1), (t0, t1 - 1), source_checksum=_checksum(0), target_checksum=_checksum(0))
    if row is None:
        return audit
    for name in ("source_records", "target_records", "matched", "missing", "duplicated", "differing", "unverified",
                 "source_removed", "first_missing", "first_duplicated", "first_differing"):
        setattr(audit, name, row[name])
    audit.source_checksum, audit.target_checksum = _checksum(row["source_sum"]), _checksum(row["target_sum"])
    return audit


def target_reader(flow: FlowConfig) -> FlowConfig:
    """The flow with the target in the source's role: the remote topics are read with the target
    cluster's consumer-side settings (connection, then ``T.consumer.*``) exactly as the source is."""
    return replace(flow, source=flow.target, flow_settings={})


def isolation(flow: FlowConfig) -> IsolationLevel:
    return IsolationLevel.READ_COMMITTED if flow.reads_committed else IsolationLevel.READ_UNCOMMITTED


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
    flow = find_flow(config, flow_name)
    pattern = topic_pattern(topics)
    if not flow.options.emit_offset_syncs:
        key = flow.where("emit.offset-syncs.enabled")
        raise ConfigError(f"{key} = false: flow {flow.name} keeps no offset ranges, so there is nothing exact to "
                          "audit against", key)
    selection = TopicSelection(flow, policy_for_flow(flow.settings, flow.source.alias))
    location = StateLocation.parse(config.driver.state_location, state_dir)
    master = config.spark.get("spark.master", SPARK_DEFAULTS["spark.master"])
    ship = not is_local(master)
    reading_target = target_reader(flow)
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
        plans = _plans(folder, flow, selection, pattern, topics, location.describe())
        source_admin = reach(flow.source, admin_settings(flow.source))
        target_admin = reach(flow.target, admin_settings(flow.target))
        level = isolation(flow)
        source_bounds = log_bounds(source_admin, [(p.source_topic, p.partition) for p in plans], level)
        # Exactly-once: what a read_committed consumer of the target sees (aborted copies are not copies).
        target_bounds = log_bounds(target_admin, [(p.remote_topic, p.partition) for p in plans],
                                   IsolationLevel.READ_COMMITTED if flow.exactly_once else
                                   IsolationLevel.READ_UNCOMMITTED)
        spark = spark or start_spark()
        source_opts = _batch_options(source_options(flow, "", ship))
        target_opts = _batch_options(source_options(reading_target, "", ship))
        partitions = _spark_call("comparing source and target", compare, spark, plans, source_opts, target_opts,
                                 source_bounds, target_bounds, flow.target.alias if flow.same_names else None)
        checkpoints_topic = selection.policy.checkpoints_topic(flow.source.alias)
        checkpoints, skipped = _spark_call(f"reading {checkpoints_topic} on {flow.target.alias}", read_checkpoints,
                                           spark, target_opts, target_admin, checkpoints_topic)
        losses = [r for r in loss.load(folder) if r.topic in {p.source_topic for p in plans}]
        groups = _verdicts(flow, plans, partitions, checkpoints, losses, source_admin, source_bounds, level)
        report = AuditReport(flow.name, folder.uri(), partitions, losses, groups, skipped)
        report.notes = _notes(flow, plans, source_bounds, target_bounds)
        report.seconds = time.monotonic() - started
        return report
    finally:
        if spark is not None:
            spark.stop()


def _plans(folder: StateFiles, flow: FlowConfig, selection: TopicSelection, pattern: re.Pattern | None,
           topics: str | None, where: str) -> list[PartitionRuns]:
    ranges = RangeLog(folder.child("offset-ranges")).load()
    if not ranges.partitions():
        raise ConfigError(f"no offset ranges for flow {flow.name} in {folder.uri()}/offset-ranges: nothing has been "
                          f"replicated with this state location ({where}); pass the --state-dir `mirrorspark run` "
                          "used, or check mirrorspark.state.location", "mirrorspark.state.location")
    plans = select_partitions(ranges, selection, pattern)
    if not plans:
        names = sorted({t for t, _ in ranges.partitions()})
        raise ConfigError(f"--topics {topics!r} matches none of the {len(names)} replicated topic(s) of flow "
                          f"{flow.name} ({', '.join(names[:10])}{', ...' if len(names) > 10 else ''})", "--topics")
    return plans


def _batch_options(streaming: dict[str, str]) -> dict[str, str]:
    """Of the flow's streaming source options, what a batch read over explicit offsets keeps: the
    Kafka client's settings and headers (subscription, start and limits per trigger are the streaming
    query's own). An audit reports what is missing, whatever mirrorspark.data.loss says."""
    kept = {k: v for k, v in streaming.items() if k.startswith("kafka.") or k == "includeHeaders"}
    return {**kept, "failOnDataLoss": "false"}


def _spark_call(what: str, call, *args):
    """``call(*args)``; a failure of the Spark job becomes one line naming what was being done."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        return call(*args)
    except (Py4JError, PySparkException) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise AuditError(f"{what} failed: {first[:500]}") from None


def _verdicts(flow: FlowConfig, plans: list[PartitionRuns], partitions: list[PartitionAudit], checkpoints, losses,
              source_admin: AdminClient, source_bounds: Bounds, level: IsolationLevel) -> list[GroupVerdict]:
    """Committed offsets and end offsets on the source of every group with checkpoints, then the verdicts."""
    from mirrorspark.offsets.group_sync import committed_offsets

    source_of = {p.remote_topic: p.source_topic for p in plans}
    groups = sorted({c.group for c, _ in checkpoints if c.topic in source_of})
    audited = {p.source_topic for p in plans}
    committed: dict[str, dict[tuple[str, int], int] | None] = {}  # None: the group's offsets could not be read
    for group in groups:
        try:
            committed[group] = {k: v for k, v in committed_offsets(source_admin, group).items() if k[0] in audited}
        except KafkaException as exc:
            log.warning("offsets of group %s on %s could not be read: %s", group, flow.source.alias, exc)
            committed[group] = None
    wanted = {key for offsets in committed.values() if offsets for key in offsets} - set(source_bounds)
    ends = {k: end for k, (_, end) in {**source_bounds, **log_bounds(source_admin, wanted, level)}.items()}
    replicated = {(p.source_topic, p.partition): p.source_span[1] for p in plans}
    problems: dict[str, dict[str, int]] = {}
    for audit in partitions:
        found = problems.setdefault(audit.source_topic, {"missing": 0, "duplicated": 0, "differing": 0})
        for kind in found:
            found[kind] += getattr(audit, kind)
    interval = flow.options.checkpoints_interval
    return [assess(group, flow.source.alias, [(c, ts) for c, ts in checkpoints if c.group == group], source_of,
                   committed[group], ends, replicated, problems, losses, interval) for group in groups]


def _notes(flow: FlowConfig, plans: list[PartitionRuns], source_bounds: Bounds, target_bounds: Bounds) -> list[str]:
    """Partitions a side no longer has: said once, so an empty count is not taken for a clean one."""
    notes = []
    for plan in plans:
        if (plan.source_topic, plan.partition) not in source_bounds:
            notes.append(f"{plan.source_topic}[{plan.partition}] does not exist on {flow.source.alias}")
        if (plan.remote_topic, plan.partition) not in target_bounds:
            notes.append(f"{plan.remote_topic}[{plan.partition}] does not exist on {flow.target.alias}")
    return notes
