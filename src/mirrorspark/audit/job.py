"""The audit's Spark batch job: both clusters read over the replicated ranges, hashed, joined by
source offset, and counted per partition.

Everything heavy stays on the JVM (hashing, the broadcast join with the run table, the shuffle join);
one row per partition comes back and becomes a ``PartitionAudit``. pyspark is imported inside the
functions, so importing this module (or the CLI) does not start or load Spark.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from mirrorspark.audit.plan import Bounds, PartitionRuns, read_window
from mirrorspark.audit.report import COUNTS, PartitionAudit
from mirrorspark.errors import OperationalError
from mirrorspark.jvm_bridge import JvmError, spark_job
from mirrorspark.partition import Partition
from mirrorspark.pipeline.record_columns import PATH_HEADER

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

CHECKSUM_MOD = 1 << 64
_FIRSTS = ("first_missing", "first_duplicated", "first_differing")
_SIDE_SCHEMA = "st string, topic string, partition int, offset long, hash long"

T = TypeVar("T")


class Row(Protocol):
    """A row of the job's result by column name (Spark's ``Row``; a dict in tests)."""

    def __getitem__(self, name: str, /) -> Any: ...


class AuditError(OperationalError):
    """The audit job could not run (a Spark or Kafka failure); the message says which side."""


def spark_call(what: str, call: Callable[[], T]) -> T:
    """``call()``; a failure of the Spark job becomes one line naming what was being done."""
    try:
        return spark_job(what, call)
    except JvmError as exc:
        raise AuditError(str(exc)) from None


def kafka_read(spark: SparkSession, options: Mapping[str, str],
               windows: Mapping[Partition, tuple[int, int]]) -> DataFrame | None:
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


def record_hash(without_path: bool = False, schema_ids: Mapping[int, int] | None = None,
                schema_topics: list[str] | None = None) -> Column:
    """Key, value, headers and timestamp in one 64-bit hash (Spark's hashes skip nulls, so the null
    flags keep a null key with value ``x`` apart from key ``x`` with a null value); ``without_path``
    leaves the active/active path header out (a copy carries one more cluster in it).
    ``schema_ids``: a source record's key and value in the Confluent wire format, in ``schema_topics``,
    are hashed with the target registry's id for their schema, as the flow writes them (ADR 0028)."""
    from pyspark.sql import functions as F

    headers = F.filter("headers", lambda h: h["key"] != PATH_HEADER) if without_path else F.col("headers")
    key, value = F.col("key"), F.col("value")
    if schema_ids is not None:
        key, value = (with_target_ids(key, schema_ids, schema_topics or []),
                      with_target_ids(value, schema_ids, schema_topics or []))
    return F.xxhash64(key, value, headers, F.unix_millis(F.col("timestamp")),
                      F.col("key").isNull(), F.col("value").isNull())


def with_target_ids(data: Column, schema_ids: Mapping[int, int], topics: list[str]) -> Column:
    """``data`` with its wire-format schema id replaced through ``schema_ids`` (a 0 byte, the 4-byte id,
    the payload); as it is when not in the format, of another topic, or of an id the map lacks (the
    copy then differs, and the audit says so)."""
    from pyspark.sql import functions as F

    if not schema_ids or not topics:
        return data
    ids = F.create_map(*[F.lit(v) for pair in sorted(schema_ids.items()) for v in pair])
    source_id = F.conv(F.hex(F.substring(data, 2, 4)), 16, 10).cast("long")
    target_id = F.element_at(ids, source_id)
    framed = (F.length(data) >= 5) & (F.hex(F.substring(data, 1, 1)) == "00") \
        & F.col("topic").isin(topics) & target_id.isNotNull()
    rewritten = F.concat(F.substring(data, 1, 1), F.unhex(F.lpad(F.hex(target_id), 8, "0")),
                         F.substring(data, 6, 2_147_483_647))
    return F.when(framed, rewritten).otherwise(data)


def _path_names(alias: str) -> Column:
    """True for a record whose path header names cluster ``alias`` (it has been there)."""
    from pyspark.sql import functions as F

    return F.exists("headers", lambda h: (h["key"] == PATH_HEADER)
                    & F.array_contains(F.split(h["value"].cast("string"), ","), alias))


def _has_path() -> Column:
    from pyspark.sql import functions as F

    return F.coalesce(F.exists("headers", lambda h: h["key"] == PATH_HEADER), F.lit(False))


def compare(spark: SparkSession, plans: list[PartitionRuns], *, source_options: Mapping[str, str],
            target_options: Mapping[str, str], source_bounds: Bounds, target_bounds: Bounds,
            same_names: str | None = None, schema_ids: Mapping[int, int] | None = None,
            schema_topics: list[str] | None = None) -> list[PartitionAudit]:
    """Run the comparison job; one PartitionAudit per plan, in plan order. ``same_names``: the target's
    alias of a flow that runs active/active on the same names; ``schema_ids``/``schema_topics``: the
    flow rewrites schema ids (source records are compared as written, see ``record_hash``)."""
    from pyspark.sql import functions as F

    source_windows = {(p.source_topic, p.partition): w for p in plans
                      if (w := read_window(p.source_span, source_bounds.get((p.source_topic, p.partition))))}
    target_windows = {(p.remote_topic, p.partition): w for p in plans
                      if (w := read_window(p.target_span, target_bounds.get((p.remote_topic, p.partition))))}
    pairs = sorted({(p.remote_topic, p.source_topic) for p in plans})
    source_of = F.create_map(*[F.lit(name) for pair in pairs for name in pair])

    source_df, target_df = kafka_read(spark, source_options, source_windows), kafka_read(spark, target_options,
                                                                                         target_windows)
    aside = [(p.source_topic, p.partition, lo, hi) for p in plans for lo, hi in p.aside]
    if aside and source_df is not None:  # moved into side topics by reconcile: not expected on the target
        moved = F.lit(False)
        for topic, partition, lo, hi in aside:
            moved = moved | ((F.col("topic") == topic) & (F.col("partition") == partition)
                             & (F.col("offset") >= lo) & (F.col("offset") < hi))
        source_df = source_df.where(~moved)
    if same_names is not None:
        source_df = None if source_df is None else source_df.where(~F.coalesce(_path_names(same_names), F.lit(False)))
        target_df = None if target_df is None else target_df.where(_has_path())
    marked = same_names is not None
    source = _side(source_df, spark, F.col("topic"), marked, schema_ids, schema_topics)
    source = _flag_unknown(spark, source, plans, side=0).select(
        F.col("st").alias("s_topic"), F.col("partition").alias("s_part"), F.col("offset").alias("s_off"),
        F.col("hash").alias("s_hash"), F.col("unknown").alias("s_unknown"))
    target = _map_to_source(spark, _side(target_df, spark, F.element_at(source_of, F.col("topic")), marked), plans)
    target = _flag_unknown(spark, target, plans, side=1)
    joined = source.join(target, (source["s_topic"] == target["st"]) & (source["s_part"] == target["partition"])
                         & (source["s_off"] == target["upstream"]), "full_outer")
    rows = _aggregate(joined).collect()
    found = {(r["topic"], r["partition"]): r for r in rows}
    return [partition_result(plan, found.get((plan.source_topic, plan.partition))) for plan in plans]


def _side(df: DataFrame | None, spark: SparkSession, source_topic: Column, without_path: bool = False,
          schema_ids: Mapping[int, int] | None = None, schema_topics: list[str] | None = None) -> DataFrame:
    """(source topic, topic, partition, offset, hash) of one cluster's records (empty when nothing is read)."""

    if df is None:
        return spark.createDataFrame([], _SIDE_SCHEMA)
    return df.select(source_topic.alias("st"), "topic", "partition", "offset",
                     record_hash(without_path, schema_ids, schema_topics).alias("hash"))


def _map_to_source(spark: SparkSession, target: DataFrame, plans: list[PartitionRuns]) -> DataFrame:
    """Each target record's source offset through the runs (null: no run covers it); a broadcast
    join on the offset range, the run table being small (at most max-runs rows per partition)."""
    from pyspark.sql import functions as F

    runs = spark.createDataFrame(
        [(p.remote_topic, p.partition, r.run.upstream, r.run.downstream, r.run.count) for p in plans for r in p.runs],
        "r_topic string, r_part int, r_up long, r_down long, r_count long")
    offset = target["offset"]  # by name: DataFrame.offset is a method
    on = ((target["topic"] == runs["r_topic"]) & (target["partition"] == runs["r_part"]) & (offset >= runs["r_down"])
          & (offset < runs["r_down"] + runs["r_count"]))
    return target.join(F.broadcast(runs), on, "left").select(
        "st", "topic", "partition", "offset", "hash",
        (F.col("r_up") + (F.col("offset") - F.col("r_down"))).alias("upstream"))


def _flag_unknown(spark: SparkSession, df: DataFrame, plans: list[PartitionRuns], side: int) -> DataFrame:
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


def _aggregate(joined: DataFrame) -> DataFrame:
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

    def count(condition: Column) -> Column:
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


def checksum(total: Any) -> str:
    """A sum of signed 64-bit hashes (a decimal from Spark, None when nothing was read) as 16 hex digits."""
    return f"{int(total or 0) % CHECKSUM_MOD:016x}"


def partition_result(plan: PartitionRuns, row: Row | None) -> PartitionAudit:
    """The job's row for ``plan``'s partition as a PartitionAudit (no row: nothing was read on either
    side); ranges are shown inclusive."""
    (s0, s1), (t0, t1) = plan.source_span, plan.target_span
    found: dict[str, Any] = {}
    sums: tuple[Any, Any] = (0, 0)
    if row is not None:
        found = {name: row[name] for name in (*COUNTS, *_FIRSTS)}
        sums = (row["source_sum"], row["target_sum"])
    return PartitionAudit(source_topic=plan.source_topic, remote_topic=plan.remote_topic, partition=plan.partition,
                          runs=len(plan.runs), source_range=(s0, s1 - 1), target_range=(t0, t1 - 1),
                          source_checksum=checksum(sums[0]), target_checksum=checksum(sums[1]), **found)
