"""What the writer is handed: a Kafka source's rows as they come, and each topic's remote name.

The writer is mirrorspark's DataSource V2 sink (``jvm/mirrorspark/.../sink/MirrorSink.java``, see
docs/adr/0004-cluster-writer.md): it takes the partition, key, value and headers as they are, the
source timestamp to set on the target record, and the source offset to pair with the target offset
in each send's callback. The rename to the remote topic happens in the sink too (option
``remoteTopics``), once per run of rows of one topic: a Spark projection would look each row's topic
up in generated code (ADR 0019).

Spark's built-in Kafka sink cannot set a timestamp nor report offsets; with it the Java
``SourceTimestampInterceptor`` does both from private headers. That path is the one Spark's
real-time trigger would use (ADR 0004); its projection and the interceptor live with the benchmarks
that measure it (``bench/interceptor_path.py``, ``bench/jvm``).
"""
from __future__ import annotations

from collections.abc import Mapping
from itertools import chain

SINK_FORMAT = "io.mirrorspark.sink.MirrorSink"
# Active/active on the same names: the clusters a copied record has been in (io.mirrorspark.sink.Provenance).
PATH_HEADER = "mirrorspark.path"


def planned(df, remote_topics: Mapping[str, str]):
    """Rows of planned topics only, and the Column giving each its remote topic name."""
    from pyspark.sql import functions as F

    names = F.create_map(*chain.from_iterable((F.lit(s), F.lit(t)) for s, t in remote_topics.items()))
    return df.where(F.col("topic").isin(list(remote_topics))), F.element_at(names, F.col("topic"))


def remote_topics_option(remote_topics: Mapping[str, str]) -> str:
    """The sink's ``remoteTopics`` option: a line ``source<TAB>remote`` per planned topic (Kafka's topic
    names hold neither); rows of other topics are not copied."""
    return "\n".join(f"{source}\t{remote}" for source, remote in sorted(remote_topics.items()))
