"""Where mirrorspark finds the jars that scripts/setup.sh resolved and where it keeps state."""
from __future__ import annotations

import os
from pathlib import Path


class SetupMissing(RuntimeError):
    """A jar folder that scripts/setup.sh should have produced is absent."""


def project_root() -> Path:
    """The checkout root (src layout, editable install): two levels above this package."""
    return Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    """Jar cache; ``MIRRORSPARK_BUILD_DIR`` overrides it for non-editable installs."""
    return Path(os.environ.get("MIRRORSPARK_BUILD_DIR") or project_root() / "build")


def _jar_folder(name: str) -> Path:
    folder = build_dir() / name
    if not folder.is_dir() or not any(folder.glob("*.jar")):
        raise SetupMissing(
            f"{folder} holds no jars; run `make setup` (scripts/setup.sh) to resolve them from Maven Central"
        )
    return folder


def kafka_libs() -> Path:
    """Broker (and MM2/perf-tool) classpath folder."""
    return _jar_folder("kafka-libs")


def spark_jars() -> list[Path]:
    """Jars Spark needs for Kafka: the connector, its Kafka client, and our interceptor."""
    return sorted(_jar_folder("spark-kafka-jars").glob("*.jar")) + sorted(
        _jar_folder("mirrorspark-jvm").glob("*.jar")
    )


def default_state_dir() -> Path:
    """State (local clusters, Spark checkpoints); ``MIRRORSPARK_STATE_DIR`` overrides ./state."""
    return Path(os.environ.get("MIRRORSPARK_STATE_DIR") or Path.cwd() / "state")
