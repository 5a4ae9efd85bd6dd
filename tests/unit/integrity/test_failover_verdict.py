"""The failover verdict of a group, and the checkpoints it is read from."""
from __future__ import annotations

import pytest

from mirrorspark.formats import Checkpoint
from mirrorspark.integrity.failover_verdict import assess, latest_checkpoints


def verdict(committed, checkpointed: dict[int, int], ends: dict[int, int], replicated: dict[int, int]):
    """The verdict of group ``g`` on source topic ``t`` (remote ``primary.t``); checkpoints 30 s old."""
    stamped = [(Checkpoint("g", "primary.t", p, up, up), 1_000_000) for p, up in checkpointed.items()]
    return assess("g", "primary", stamped, {"primary.t": "t"}, committed, {("t", p): e for p, e in ends.items()},
                  {("t", p): r for p, r in replicated.items()}, {}, [], 60.0, now=1_030.0)


def test_verdict_safe_when_checkpoints_match_and_everything_unconsumed_is_replicated():
    found = verdict({("t", 0): 10}, {0: 10}, {0: 20}, {0: 20})
    assert found.safe and [r.text for r in found.reasons] == [
        "checkpoints: 1 partition(s), newest 30 s old (emitted every 60 s), matching the group's commits on primary",
        "lag on primary: 10 record(s) not consumed yet, all of them replicated",
        "data loss: none reported for its topics",
        "audit: no missing, duplicated or differing records in its topics"]


def test_verdict_names_stale_checkpoints_and_records_not_replicated_yet():
    found = verdict({("t", 0): 15, ("t", 1): 5, ("t", 2): 3}, {0: 10, 1: 8}, {0: 20, 1: 10, 2: 3}, {0: 18, 1: 10})
    assert not found.safe
    assert [(r.ok, r.text) for r in found.reasons[:2]] == [
        (False, "checkpoints: 2 partition(s), newest 30 s old (emitted every 60 s); 5 record(s) consumed on primary "
                "after the checkpoints would be read again; the checkpoints are 3 record(s) ahead of the group's "
                "commits (those would be skipped); no checkpoint yet for t[2], where the group has consumed records"),
        (False, "lag on primary: 10 record(s) not consumed yet, 2 of them not replicated yet (they would be left "
                "behind)")]
    unreadable = verdict(None, {0: 10}, {0: 20}, {0: 20})
    assert [r.ok for r in unreadable.reasons] == [False, False, True, True]


def test_malformed_checkpoint_records_are_skipped_with_a_warning(caplog):
    older, newer = Checkpoint("g", "primary.t", 0, 5, 5), Checkpoint("g", "primary.t", 0, 9, 9)
    records = [(older.key_bytes(), older.value_bytes(), 1000, 0, 0), (b"junk", b"\x00\x07", 2000, 0, 1),
               (None, None, 3000, 0, 2), (newer.key_bytes(), newer.value_bytes(), 4000, 0, 3)]
    found, skipped = latest_checkpoints("primary.checkpoints.internal", records)
    assert found == [(newer, 4000)] and skipped == 2
    assert "primary.checkpoints.internal[0] offset 1 is not a checkpoint" in caplog.text


def test_failover_refuses_where_records_the_group_has_not_read_were_lost():
    """After a remote topic was refilled from a source that had lost its first records to retention,
    a group positioned in that range would skip them: the plan says how many, --execute refuses
    (before any client is built) unless the user allows it."""
    from mirrorspark.client.failover import FailoverPlan, PartitionPlan, RecordsLost, _lost_unread, execute_failover
    from mirrorspark.integrity.loss import LossReport

    reports = [LossReport("a->b", "t", 0, 0, 299, 300, "gone", 0.0)]
    behind = PartitionPlan("a.t", 0, "t", 200, 0, end=2700, source_committed=200)
    past = PartitionPlan("a.t", 0, "t", 900, 600, end=2700, source_committed=900)
    other = PartitionPlan("a.t", 1, "t", 200, 200, end=2700, source_committed=200)
    assert [_lost_unread(reports, row) for row in (behind, past, other)] == [300, 0, 0]
    assert _lost_unread(None, behind) is None  # state not readable here: unknown, not zero
    behind.lost = 300
    plan = FailoverPlan("g", "a", "b", "EMPTY", [behind], True)
    with pytest.raises(RecordsLost, match=r"t\[0\]: 300.*--allow-loss"):
        execute_failover(None, plan)  # type: ignore[arg-type]
