"""The JVM-side projection from a source Kafka row to the writer's columns (no Python per record).

The writer is mirrorspark's DataSource V2 sink (``jvm/mirrorspark/.../sink/MirrorSink.java``, see
docs/adr/0004-cluster-writer.md): it takes the renamed topic, the partition, key, value and headers
as they are, the source timestamp (epoch milliseconds) to set on the target record, and the source
offset to pair with the target offset in each send's callback.

Spark's built-in Kafka sink cannot set a timestamp nor report offsets; with it, the
``SourceTimestampInterceptor`` does both from two private headers (``interceptor_rows``). That path
stays for Spark's real-time trigger, which allows only the built-in sink (ADR 0004), and for the
writer benchmark.
"""
from __future__ import annotations

from collections.abc import Mapping
from itertools import chain

SINK_FORMAT = "io.mirrorspark.sink.MirrorSink"
TIMESTAMP_HEADER = "__mirrorspark.source.timestamp"
OFFSET_HEADER = "__mirrorspark.source.offset"
FLOW_SETTING = "mirrorspark.flow"  # interceptor producer setting naming the flow whose offsets are reported
INTERCEPTOR_CLASS = "io.mirrorspark.kafka.SourceTimestampInterceptor"


def _planned(df, remote_topics: Mapping[str, str]):
    """Rows of planned topics only, and the Column giving each its remote topic name."""
    from pyspark.sql import functions as F

    names = F.create_map(*chain.from_iterable((F.lit(s), F.lit(t)) for s, t in remote_topics.items()))
    return df.where(F.col("topic").isin(list(remote_topics))), F.element_at(names, F.col("topic"))


def to_target_rows(df, remote_topics: Mapping[str, str]):
    """The MirrorSink's columns: topic, partition, key, value, headers, timestamp (ms), offset."""
    from pyspark.sql import functions as F

    rows, remote = _planned(df, remote_topics)
    return rows.select(
        remote.alias("topic"),
        F.col("partition"),
        F.col("key"),
        F.col("value"),
        F.col("headers"),
        F.unix_millis(F.col("timestamp")).alias("timestamp"),
        F.col("offset"),
    )


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

    rows, remote = _planned(df, remote_topics)
    return rows.select(remote.alias("topic"), F.col("partition"), F.col("key"), F.col("value"),
                       target_headers().alias("headers"))


def interceptor_sink_options(options: Mapping[str, str]) -> dict[str, str]:
    """MirrorSink options turned into the built-in Kafka sink's, with the interceptor reporting."""
    out = {k: v for k, v in options.items() if k.startswith("kafka.")}
    out["kafka.interceptor.classes"] = INTERCEPTOR_CLASS
    if "flow" in options:
        out[f"kafka.{FLOW_SETTING}"] = options["flow"]
    return out
