"""Where mirrorspark finds its jars and keeps state, in a source checkout and in an installed wheel.

A checkout has everything under build/ from scripts/setup.sh (Maven) and always uses it. An installed
wheel has no build/: its own jar is package data (``jars/mirrorspark-jvm.jar``, put there by
``make dist``), Spark's Kafka connector is resolved by Spark itself (``spark.jars.packages``, cached in
Spark's Ivy cache), and the Kafka jars for ``mirrorspark local`` are fetched into a per-user cache on
first use (kafka_jars.py).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from mirrorspark.errors import OperationalError

PACKAGED_JAR = Path(__file__).with_name("jars") / "mirrorspark-jvm.jar"
PACKAGED_CLIENTS_JAR = Path(__file__).with_name("jars") / "mirrorspark-clients.jar"
# What the connector needs beyond pyspark's own jars: the same four jars scripts/setup.sh copies
# (connector, token provider, kafka-clients, commons-pool2). Its other dependencies are already in
# pyspark/jars (hadoop-client-* alone would add 50 MB of duplicates), so Ivy is told to leave them out.
CONNECTOR_ARTIFACT = "org.apache.spark:spark-sql-kafka-0-10_2.13"
# MM2's transforms, at the connector's kafka-clients version (jvm/spark-kafka.pom.xml pins the same).
CONNECT_TRANSFORMS = "org.apache.kafka:connect-transforms:3.9.2"
CONNECTOR_EXCLUDES = (
    "org.apache.hadoop:hadoop-client-runtime", "org.apache.hadoop:hadoop-client-api",
    "org.scala-lang:scala-library", "org.scala-lang.modules:scala-parallel-collections_2.13",
    "org.apache.spark:spark-tags_2.13", "com.google.code.findbugs:jsr305",
    "at.yawk.lz4:lz4-java", "org.lz4:lz4-java", "org.xerial.snappy:snappy-java", "org.slf4j:slf4j-api",
    "com.github.luben:zstd-jni",
    "javax.ws.rs:javax.ws.rs-api",  # connect-api's REST extension API: not used by transformations
)


class SetupMissing(OperationalError):
    """A jar that setup (checkout) or the wheel (install) should have provided is absent."""


@dataclass(frozen=True)
class SparkJars:
    """What Spark needs for Kafka: local jars for ``spark.jars``, and Maven coordinates (with excludes)
    for ``spark.jars.packages`` when no local copy of the connector exists."""

    jars: tuple[Path, ...]
    packages: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()


def project_root() -> Path:
    """The checkout root (src layout, editable install): two levels above this package."""
    return Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    """Jar folder of a checkout; ``MIRRORSPARK_BUILD_DIR`` overrides it (may not exist in a wheel)."""
    return Path(os.environ.get("MIRRORSPARK_BUILD_DIR") or project_root() / "build")


def _local_jars(name: str) -> list[Path]:
    folder = build_dir() / name
    return sorted(folder.glob("*.jar")) if folder.is_dir() else []


def _jar_folder(name: str) -> Path:
    folder = build_dir() / name
    if not _local_jars(name):
        raise SetupMissing(
            f"{folder} holds no jars; run `make setup` (scripts/setup.sh) to resolve them from Maven Central"
        )
    return folder


def mirrorspark_jar() -> Path:
    """mirrorspark's own JVM code: the checkout's fresh build first, else the copy inside the wheel."""
    return _own_jar("mirrorspark-jvm", PACKAGED_JAR)


def clients_jar() -> Path:
    """The client JVM's code for a newer Kafka client than Spark's (share groups): built or packaged."""
    return _own_jar("mirrorspark-clients", PACKAGED_CLIENTS_JAR)


def _own_jar(folder: str, packaged: Path) -> Path:
    built = _local_jars(folder)
    if built:
        return built[0]
    if packaged.is_file():
        return packaged
    raise SetupMissing(
        f"mirrorspark's jar is missing: neither {build_dir() / folder} (a checkout: run `make setup`) "
        f"nor {packaged} (an install: use a wheel built by `make dist`) exists"
    )


def kafka_libs() -> Path:
    """Broker (and MM2/perf-tool) classpath folder: the checkout's build/kafka-libs, else the per-user
    cache, filled from Maven Central on first use."""
    if _local_jars("kafka-libs"):
        return build_dir() / "kafka-libs"
    from mirrorspark import kafka_jars

    try:
        return kafka_jars.ensure()
    except kafka_jars.KafkaJarsUnavailable as exc:
        raise SetupMissing(str(exc)) from None


def schema_registry_jar() -> Path:
    """The local schema registry's runnable jar (Apicurio Registry, ``make setup`` in a checkout)."""
    found = sorted((build_dir() / "schema-registry").glob("*-runner.jar"))
    if not found:
        raise SetupMissing(f"the local schema registry is missing: {build_dir() / 'schema-registry'} holds no "
                           "*-runner.jar (a checkout: run `make setup`)")
    return found[-1]


def spark_jars() -> list[Path]:
    """Local jars only (checkout): the connector, its Kafka client, and mirrorspark's jar; for tools that
    build a plain JVM classpath (bench/)."""
    return [*sorted(_jar_folder("spark-kafka-jars").glob("*.jar")), mirrorspark_jar()]


def spark_dependencies() -> SparkJars:
    """The connector from build/spark-kafka-jars when present (development, CI), else by coordinates
    for Spark's own resolver, at the installed pyspark's version (they must match)."""
    local = _local_jars("spark-kafka-jars")
    if local:
        return SparkJars((*local, mirrorspark_jar()))
    try:
        spark_version = version("pyspark")
    except PackageNotFoundError:
        raise SetupMissing("pyspark is not installed; `pip install mirrorspark` installs it") from None
    return SparkJars((mirrorspark_jar(),), (f"{CONNECTOR_ARTIFACT}:{spark_version}", CONNECT_TRANSFORMS),
                     CONNECTOR_EXCLUDES)


def default_state_dir() -> Path:
    """State (flows' checkpoints and offsets, local clusters): ``MIRRORSPARK_STATE_DIR``, else the
    per-user state folder (``$XDG_STATE_HOME/mirrorspark``, ``~/.local/state/mirrorspark``). Never the
    working directory: a restart from another folder must find the same state, or it copies again."""
    chosen = os.environ.get("MIRRORSPARK_STATE_DIR")
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).expanduser() / "mirrorspark"
