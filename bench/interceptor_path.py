"""The writer path through Spark's built-in Kafka sink (what Spark's real-time trigger allows):
the Java ``SourceTimestampInterceptor`` turns two private headers back into the record timestamp
and pairs source with target offsets (docs/adr/0004-cluster-writer.md). Used by the benchmarks
that compare it with mirrorspark's sink (writer_bench.py, trigger_modes.py).
"""
from __future__ import annotations

from collections.abc import Mapping

from mirrorspark.pipeline.record_columns import planned

TIMESTAMP_HEADER = "__mirrorspark.source.timestamp"  # SourceTimestampInterceptor.TIMESTAMP_HEADER
OFFSET_HEADER = "__mirrorspark.source.offset"  # SourceTimestampInterceptor.OFFSET_HEADER
FLOW_SETTING = "mirrorspark.flow"  # producer setting naming the flow whose offsets are reported
INTERCEPTOR_CLASS = "io.mirrorspark.kafka.SourceTimestampInterceptor"


def target_headers():
    """The source headers followed by the interceptor's private timestamp and offset headers."""
    from pyspark.sql import functions as F

    private = F.array(
        F.struct(F.lit(TIMESTAMP_HEADER).alias("key"),
                 F.unix_millis(F.col("timestamp")).cast("string").cast("binary").alias("value")),
        F.struct(F.lit(OFFSET_HEADER).alias("key"), F.col("offset").cast("string").cast("binary").alias("value")),
    )
    return F.when(F.col("headers").isNull(), private).otherwise(F.concat(F.col("headers"), private))


def interceptor_rows(df, remote_topics: Mapping[str, str]):
    """Spark's Kafka sink columns, timestamp and offset carried for the interceptor."""
    from pyspark.sql import functions as F

    rows, remote = planned(df, remote_topics)
    return rows.select(remote.alias("topic"), F.col("partition"), F.col("key"), F.col("value"),
                       target_headers().alias("headers"))


def interceptor_sink_options(options: Mapping[str, str]) -> dict[str, str]:
    """mirrorspark sink options turned into the built-in Kafka sink's, with the interceptor reporting."""
    out = {k: v for k, v in options.items() if k.startswith("kafka.")}
    out["kafka.interceptor.classes"] = INTERCEPTOR_CLASS
    if "flow" in options:
        out[f"kafka.{FLOW_SETTING}"] = options["flow"]
    return out
