"""The checkpoint round's topic identity check runs only when the round has something to protect."""
from __future__ import annotations

from mirrorspark.offsets.checkpoint_store import CheckpointStore
from mirrorspark.offsets.checkpoint_task import CheckpointTask


def task(groups: list[str], resets: set) -> CheckpointTask:
    t = CheckpointTask.__new__(CheckpointTask)
    t.flow_name, t.metrics, t.store, t.topic = "a->b", None, CheckpointStore(), "a.checkpoints.internal"
    t._producer = object()
    t.pending_resets, t.resets_done = (lambda: set(resets)), (lambda done: None)
    t.source_groups = lambda: list(groups)  # type: ignore[method-assign]
    t.checkpoints = lambda group, resets=frozenset(): []  # type: ignore[method-assign]
    t._replacements = lambda resets, written: []  # type: ignore[method-assign]
    t._bound = lambda topic: None  # type: ignore[method-assign]
    t.selection = type("S", (), {"remote_name": staticmethod(lambda topic: "a." + topic)})()
    return t


def test_a_round_without_groups_or_pending_replacements_skips_the_identity_check():
    calls: list[int] = []
    task([], set()).run_once(lambda: calls.append(1) or {})
    assert calls == []


def test_a_round_with_a_group_or_a_pending_replacement_checks_first_and_keeps_the_ids(monkeypatch):
    import mirrorspark.offsets.checkpoint_task as module
    monkeypatch.setattr(module, "send_all", lambda *a, **k: None)
    for groups, resets in ((["g"], set()), ([], {("t", 0)})):
        calls: list[int] = []
        t = task(groups, resets)
        t.run_once(lambda calls=calls: calls.append(1) or {"a.t": "id1"})
        assert calls == [1]
        assert t._remote_ids == {"a.t": "id1"}
