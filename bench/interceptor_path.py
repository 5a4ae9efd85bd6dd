"""The writer path through Spark's built-in Kafka sink (what Spark's real-time trigger allows):
the Java ``SourceTimestampInterceptor`` turns two private headers back into the record timestamp
and pairs source with target offsets (docs/adr/0004-cluster-writer.md). Used by the benchmarks
that compare it with mirrorspark's sink (writer_bench.py, trigger_modes.py). The interceptor is
bench code (bench/jvm), not in mirrorspark's jar: ``bench_jar()`` compiles it for ``spark.jars``.
"""
from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from mirrorspark import paths
from mirrorspark.pipeline.record_columns import planned

ROOT = Path(__file__).resolve().parents[1]

TIMESTAMP_HEADER = "__mirrorspark.source.timestamp"  # SourceTimestampInterceptor.TIMESTAMP_HEADER
OFFSET_HEADER = "__mirrorspark.source.offset"  # SourceTimestampInterceptor.OFFSET_HEADER
FLOW_SETTING = "mirrorspark.flow"  # producer setting naming the flow whose offsets are reported
INTERCEPTOR_CLASS = "io.mirrorspark.bench.SourceTimestampInterceptor"  # bench/jvm, in bench_jar()


def bench_jar() -> Path:
    """bench/jvm (the interceptor and writer_bench.py's RunsToTopic) compiled against the product's jars
    into build/bench-jvm/mirrorspark-bench.jar, to be given to Spark in ``spark.jars``."""
    import pyspark

    out = ROOT / "build" / "bench-jvm"
    classes = out / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    spark_jars = Path(pyspark.__file__).parent / "jars"
    cp = ":".join([*map(str, paths.spark_jars()), f"{spark_jars}/*"])
    subprocess.run(["javac", "--release", "17", "-nowarn", "-cp", cp, "-d", str(classes),
                    *map(str, sorted((ROOT / "bench" / "jvm").glob("*.java")))], check=True)
    jar = out / "mirrorspark-bench.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    return jar


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
