"""mm2.properties files for the test clusters, and the trigger modes a test runs in."""
from __future__ import annotations

from pathlib import Path

import pytest


def write_config(path: Path, clusters: dict[str, str], extra: str) -> Path:
    path.write_text(
        "clusters = primary, backup\n"
        f"primary.bootstrap.servers = {clusters['primary']}\n"
        f"backup.bootstrap.servers = {clusters['backup']}\n"
        "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
        "offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n" + extra
    )
    return path


# The integration tests that must pass in either trigger mode take ``trigger`` from this mark.
TRIGGERS = pytest.mark.parametrize("trigger", ["microbatch", "realtime"])


def trigger_settings(trigger: str, slots: int = 3) -> str:
    """mm2.properties lines of a trigger mode: real-time mode needs a task slot per task (each a group of
    partitions) and short real-time batches (a topic added is read from the batch end after it is met).
    MM2's topic refresh interval stays: both modes meet a new topic within seconds without it."""
    if trigger == "microbatch":  # named, so the test means the same mode whatever the default
        return "mirrorspark.trigger = microbatch\n"
    return f"mirrorspark.trigger = realtime\nmirrorspark.realtime.batch.seconds = 5\nspark.master = local[{slots}]\n"


def cluster_config(path: Path, clusters: dict[str, str], master: str, state_uri: str, extra: str) -> Path:
    return write_config(path, clusters, f"spark.master = {master}\nmirrorspark.state.location = {state_uri}\n"
                                        "spark.executor.memory = 512m\n" + extra)
