"""The checkpoint round's topic identity check runs only when the round has something to protect."""
from __future__ import annotations

from mirrorspark.config import parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.offsets.checkpoint_task import CheckpointTask
from mirrorspark.offsets.group_filter import GroupFilter
from mirrorspark.policy import policy_for_flow
from mirrorspark.policy.topic_selection import TopicSelection

FLOW = parse_config(parse_properties("clusters = a, b\na.bootstrap.servers = localhost:9\n"
                                     "b.bootstrap.servers = localhost:9\na->b.enabled = true\n")).enabled_flows[0]


def task(groups: list[str], resets: set) -> CheckpointTask:
    """A flow's checkpoint task whose cluster reads answer from memory (no broker)."""
    selection = TopicSelection(FLOW, policy_for_flow(FLOW.settings, "a"))
    t = CheckpointTask(flow_name="a->b", target_alias="b", selection=selection,
                       groups=GroupFilter(FLOW.options, None), source=None, target=None,  # type: ignore[arg-type]
                       target_conf={}, translate=lambda topic, partition, offset: None, replication_factor=1,
                       resets=(lambda: set(resets), lambda done: None))
    t._producer = object()  # type: ignore[assignment]  # send_all is replaced where a round writes
    t.source_groups = lambda: list(groups)  # type: ignore[method-assign]
    t.checkpoints = lambda group, resets=frozenset(): []  # type: ignore[method-assign]
    t._replacements = lambda resets, written: []  # type: ignore[method-assign]
    t._bound = lambda topic: None  # type: ignore[method-assign]
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
