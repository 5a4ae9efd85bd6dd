"""The checkpoint store forgets groups that vanished."""
from __future__ import annotations

from mirrorspark.formats import Checkpoint
from mirrorspark.offsets.checkpoint_store import CheckpointStore


def test_checkpoint_store_forgets_groups_that_vanished():
    store = CheckpointStore()
    for group in ("alive", "gone"):
        store.put(Checkpoint(group, "A.t", 0, 5, 5))
    assert store.retain({"alive", "new"}) == 1
    assert store.groups() == {"alive"}
