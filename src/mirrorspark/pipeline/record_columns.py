"""The JVM-side projection from a source Kafka row to the writer's columns (no Python per record).

The writer is mirrorspark's DataSource V2 sink (``jvm/mirrorspark/.../sink/MirrorSink.java``, see
docs/adr/0004-cluster-writer.md): it takes the renamed topic, the partition, key, value and headers
as they are, the source timestamp (epoch milliseconds) to set on the target record, and the source
offset to pair with the target offset in each send's callback.

Spark's built-in Kafka sink cannot set a timestamp nor report offsets; with it the Java
``SourceTimestampInterceptor`` does both from private headers. That path is the one Spark's
real-time trigger would use (ADR 0004); its projection lives with the benchmarks that measure it
(``bench/interceptor_path.py``).
"""
from __future__ import annotations

from collections.abc import Mapping
from itertools import chain

SINK_FORMAT = "io.mirrorspark.sink.MirrorSink"


def planned(df, remote_topics: Mapping[str, str]):
    """Rows of planned topics only, and the Column giving each its remote topic name."""
    from pyspark.sql import functions as F

    names = F.create_map(*chain.from_iterable((F.lit(s), F.lit(t)) for s, t in remote_topics.items()))
    return df.where(F.col("topic").isin(list(remote_topics))), F.element_at(names, F.col("topic"))


def to_target_rows(df, remote_topics: Mapping[str, str]):
    """The MirrorSink's columns: topic, partition, key, value, headers, timestamp (ms), offset."""
    from pyspark.sql import functions as F

    rows, remote = planned(df, remote_topics)
    return rows.select(
        remote.alias("topic"),
        F.col("partition"),
        F.col("key"),
        F.col("value"),
        F.col("headers"),
        F.unix_millis(F.col("timestamp")).alias("timestamp"),
        F.col("offset"),
    )
