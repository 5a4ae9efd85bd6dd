"""Exactly-once's target check without a broker: when a cluster's brokers cannot keep the
transaction log, the reason names the setting and the numbers; a takeover's read of the committed
progress fences an open transaction before it reads, and never takes one for no progress."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from mirrorspark.control import transactions
from mirrorspark.control.transactions import committed_progress, transaction_log_problem
from mirrorspark.errors import OperationalError


def test_a_replication_factor_above_the_broker_count_is_named():
    problem = transaction_log_problem(1, 3, 2)
    assert "transaction.state.log.replication.factor is 3" in problem and "1 broker(s)" in problem


def test_a_min_isr_above_the_replication_factor_is_named():
    assert "transaction.state.log.min.isr (3)" in transaction_log_problem(3, 2, 3)


def test_settings_the_brokers_can_keep_pass():
    assert transaction_log_problem(3, 3, 2) == ""
    assert transaction_log_problem(1, 1, 1) == ""
    assert transaction_log_problem(1, None, None) == ""


class _Groups:
    """The target's groups as the takeover reads them: each answer in turn, and the fences asked for."""

    def __init__(self, answers: list[tuple[dict, list]]) -> None:
        self.answers, self.fenced = answers, []

    def committed_stable(self, group, partitions):
        assert group == "__mirrorspark-progress-a->b"
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def fence(self, ids):
        self.fenced.append(list(ids))

    def fence_open(self, prefix):
        self.fenced.append(f"open under {prefix}")
        return [f"{prefix}0"]


def _flow():
    return SimpleNamespace(name="a->b", progress_group="__mirrorspark-progress-a->b",
                           transactional_id_prefix="mirrorspark-a->b-",
                           task_transactional_id_prefix="mirrorspark-a->b-#task-")


def test_an_open_transaction_is_fenced_once_and_its_progress_read_after():
    groups = _Groups([({("a.t", 0): (5, "")}, [("a.t", 1)]),
                      ({("a.t", 0): (5, ""), ("a.t", 1): (9, "")}, [])])
    found = committed_progress(groups, _flow(), [("a.t", 0), ("a.t", 1)])  # type: ignore[arg-type]
    assert found == {("a.t", 0): 5, ("a.t", 1): 9}
    assert groups.fenced == ["open under mirrorspark-a->b-#task-", ["mirrorspark-a->b-a.t-1"]]


def test_a_transaction_still_open_after_its_fence_is_an_error_never_no_progress(monkeypatch):
    monkeypatch.setattr(transactions, "TIMEOUT_S", 0.0)
    groups = _Groups([({}, [("a.t", 1)])])
    with pytest.raises(OperationalError, match=r"still open on the target for a\.t\[1\]"):
        committed_progress(groups, _flow(), [("a.t", 1)])  # type: ignore[arg-type]
    assert groups.fenced == ["open under mirrorspark-a->b-#task-", ["mirrorspark-a->b-a.t-1"]]


def test_progress_committed_for_another_topic_id_is_left_out():
    ids = {"a.t": ("S1" + "a" * 20, "R1" + "b" * 20)}
    old = f"ms2;{'S0' + 'a' * 20}|{'R1' + 'b' * 20};0:0:5"
    groups = _Groups([({("a.t", 0): (7, old), ("a.t", 1): (3, "")}, [])])
    assert committed_progress(groups, _flow(), [("a.t", 0), ("a.t", 1)], ids) == {("a.t", 1): 3}  # type: ignore[arg-type]
