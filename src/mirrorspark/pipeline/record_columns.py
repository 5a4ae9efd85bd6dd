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
from typing import Any

SINK_FORMAT = "io.mirrorspark.sink.MirrorSink"
# Active/active on the same names: the clusters a copied record has been in (io.mirrorspark.sink.Provenance).
PATH_HEADER = "mirrorspark.path"


def planned(df, remote_topics: Mapping[str, str]):
    """Rows of planned topics only, and the Column giving each its remote topic name."""
    from pyspark.sql import functions as F

    names = F.create_map(*chain.from_iterable((F.lit(s), F.lit(t)) for s, t in remote_topics.items()))
    return df.where(F.col("topic").isin(list(remote_topics))), F.element_at(names, F.col("topic"))


def _target_columns(remote_topics: Mapping[str, str]) -> tuple[Any, list[Any]]:
    """The filter and the columns of ``to_target_rows``: hundreds of Py4J calls for a plan of many topics."""
    from pyspark.sql import functions as F

    names = F.create_map(*chain.from_iterable((F.lit(s), F.lit(t)) for s, t in remote_topics.items()))
    columns = [F.element_at(names, F.col("topic")).alias("topic"), F.col("partition"), F.col("key"), F.col("value"),
               F.col("headers"), F.unix_millis(F.col("timestamp")).alias("timestamp"), F.col("offset")]
    return F.col("topic").isin(list(remote_topics)), columns


class TargetRows:
    """``to_target_rows`` for one flow, its Column expressions built once per topic plan, not once per
    batch (a plan of 300 topics took ~600 Py4J round trips in every batch)."""

    def __init__(self) -> None:
        self._key: tuple[tuple[str, str], ...] | None = None
        self._columns: tuple[Any, list[Any]] = (None, [])

    def __call__(self, df, remote_topics: Mapping[str, str]):
        key = tuple(sorted(remote_topics.items()))
        if key != self._key:
            self._columns, self._key = _target_columns(remote_topics), key
        where, columns = self._columns
        return df.where(where).select(*columns)


def to_target_rows(df, remote_topics: Mapping[str, str]):
    """The MirrorSink's columns: topic, partition, key, value, headers, timestamp (ms), offset."""
    return TargetRows()(df, remote_topics)
