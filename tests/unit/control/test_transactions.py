"""Exactly-once's target check without a broker: when a cluster's brokers cannot keep the
transaction log, the reason names the setting and the numbers."""
from __future__ import annotations

from mirrorspark.control.transactions import transaction_log_problem


def test_a_replication_factor_above_the_broker_count_is_named():
    problem = transaction_log_problem(1, 3, 2)
    assert "transaction.state.log.replication.factor is 3" in problem and "1 broker(s)" in problem


def test_a_min_isr_above_the_replication_factor_is_named():
    assert "transaction.state.log.min.isr (3)" in transaction_log_problem(3, 2, 3)


def test_settings_the_brokers_can_keep_pass():
    assert transaction_log_problem(3, 3, 2) == ""
    assert transaction_log_problem(1, 1, 1) == ""
    assert transaction_log_problem(1, None, None) == ""
