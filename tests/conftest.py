"""The fixtures: real local Kafka clusters and a Spark standalone cluster for the whole test session, a
unique topic suffix per test. Helpers that tests call are in tests/helpers/."""
from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import pytest

from mirrorspark.local import ClusterSpec, LocalClusters
from mirrorspark.local.security import SecurityOptions
from mirrorspark.local.spark_cluster import LocalSpark


@pytest.fixture(scope="session")
def clusters(tmp_path_factory) -> Iterator[dict[str, str]]:
    """``{"primary": .., "backup": .., "third": ..}`` bootstrap addresses, started once per session
    (the third cluster serves the chain topology). primary and backup run StandardAuthorizer (ANONYMOUS
    is a super user there) so ACL sync is tested; third has no authorizer."""
    local = LocalClusters(tmp_path_factory.mktemp("clusters"))
    with_acls = SecurityOptions(authorizer=True)
    started = local.up([ClusterSpec("primary", security=with_acls), ClusterSpec("backup", security=with_acls),
                        ClusterSpec("third")])
    try:
        yield {c.name: c.bootstrap for c in started}
    finally:
        local.down(purge=True)


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory) -> Iterator[str]:
    """The master URL (``spark://127.0.0.1:PORT``) of 2 workers x 1 core x 1g, started once per session
    and stopped (its folder purged) at the end."""
    local = LocalSpark(tmp_path_factory.mktemp("spark"))
    master = local.up(workers=2, cores=1, memory="1g")
    try:
        yield master
    finally:
        local.down(purge=True)


@pytest.fixture
def unique() -> str:
    """A short unique suffix for topic names, so tests share the clusters safely."""
    return uuid.uuid4().hex[:8]


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A command run in-process (CliRunner) installs a stderr handler bound to the runner's stream,
    which is closed after it; later tests in the same worker would log into it. Each test gets the
    root logger back as it found it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
