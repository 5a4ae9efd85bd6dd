"""The JVM-side projection from a source Kafka row to a target Kafka row.

Keeps key, value, headers and partition as they are, renames the topic through the flow's plan,
and carries the source timestamp and offset in private headers: the producer interceptor
(jvm/interceptor, ``SourceTimestampInterceptor``) turns the first back into the record timestamp
and pairs the second with the target offset it is acknowledged at (exact offset syncs). Neither
header reaches the target.
"""
from __future__ import annotations

from collections.abc import Mapping
from itertools import chain

TIMESTAMP_HEADER = "__mirrorspark.source.timestamp"
OFFSET_HEADER = "__mirrorspark.source.offset"
FLOW_SETTING = "mirrorspark.flow"  # producer setting naming the flow whose offsets are reported
INTERCEPTOR_CLASS = "io.mirrorspark.kafka.SourceTimestampInterceptor"


def target_headers():
    """The source headers followed by the private timestamp and offset headers (a Column)."""
    from pyspark.sql import functions as F

    private = F.array(
        F.struct(F.lit(TIMESTAMP_HEADER).alias("key"),
                 F.unix_millis(F.col("timestamp")).cast("string").cast("binary").alias("value")),
        F.struct(F.lit(OFFSET_HEADER).alias("key"), F.col("offset").cast("string").cast("binary").alias("value")),
    )
    return F.when(F.col("headers").isNull(), private).otherwise(F.concat(F.col("headers"), private))


def to_target_rows(df, remote_topics: Mapping[str, str]):
    """Select only planned topics and map each row to the sink's columns (no Python per record)."""
    from pyspark.sql import functions as F

    names = F.create_map(*chain.from_iterable((F.lit(s), F.lit(t)) for s, t in remote_topics.items()))
    return df.where(F.col("topic").isin(list(remote_topics))).select(
        F.element_at(names, F.col("topic")).alias("topic"),
        F.col("partition"),
        F.col("key"),
        F.col("value"),
        target_headers().alias("headers"),
    )
