"""A real Spark standalone cluster for the whole test session (imported by conftest.py)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from mirrorspark.local.spark_cluster import LocalSpark


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
