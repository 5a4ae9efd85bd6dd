"""control.admin without brokers: the replication-factor check against a cluster's broker count."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from mirrorspark.control.admin import check_replication_factor
from mirrorspark.errors import ConfigError


class FakeAdmin:
    """Answers list_topics with ``brokers`` brokers, as AdminClient's metadata does."""

    def __init__(self, brokers: int) -> None:
        self.brokers = brokers

    def list_topics(self, timeout: float = 10.0) -> SimpleNamespace:
        return SimpleNamespace(brokers={i: object() for i in range(self.brokers)}, topics={})


def test_replication_factor_up_to_broker_count_passes():
    check_replication_factor(FakeAdmin(3), 3, "replication.factor", "cluster 'backup'")  # type: ignore[arg-type]
    check_replication_factor(FakeAdmin(3), 1, "replication.factor", "cluster 'backup'")  # type: ignore[arg-type]


def test_replication_factor_above_broker_count_names_key_and_cluster():
    with pytest.raises(ConfigError) as caught:
        check_replication_factor(FakeAdmin(1), 3, "primary->backup.replication.factor",  # type: ignore[arg-type]
                                 "target cluster 'backup'")
    assert str(caught.value) == ("primary->backup.replication.factor=3 but target cluster 'backup' has only 1 "
                                 "broker(s); set primary->backup.replication.factor to at most 1")
    assert caught.value.key == "primary->backup.replication.factor"
