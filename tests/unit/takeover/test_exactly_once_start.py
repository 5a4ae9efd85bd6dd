"""An exactly-once start without state resumes from the progress committed with the records, but not
from progress that cannot be the source topic's now (past its end: the topic was made again)."""
from __future__ import annotations

from types import SimpleNamespace

from mirrorspark.takeover import lost_state


def test_progress_past_the_source_end_is_left_to_the_offset_syncs(monkeypatch):
    """The fault soak: soak-t1 re-created while no instance wrote it; the progress committed for the old topic
    (16782) was taken, the flow started past the new topic's end and reported copied records as lost."""
    ends = {("t", 0): 1717, ("t", 1): 900}
    monkeypatch.setattr(lost_state, "topic_ids", lambda admin, topics: {})
    monkeypatch.setattr(lost_state, "committed_progress",
                        lambda groups, flow, partitions, ids: {("A.t", 0): 16782, ("A.t", 1): 850})

    def partition_offsets(admin, keys, read_committed=False, earliest=False):
        if admin == "target":  # the remote partitions' stable ends: records beyond the held copies
            return {key: 20000 for key in keys}
        return {key: ends[key] for key in keys}

    monkeypatch.setattr(lost_state, "partition_offsets", partition_offsets)
    executed = []
    monkeypatch.setattr(lost_state, "execute", lambda flow, takeover, folder: executed.append(takeover))
    flow = SimpleNamespace(name="A->B", progress_group="__mirrorspark-progress-A->B")
    plan = SimpleNamespace(remote={"t": "A.t"})
    clients = SimpleNamespace(source="source", target="target", groups=None)
    held = {("t", 0): (0, 16782), ("t", 1): (0, 850)}
    started = lost_state._exactly_once_start(flow, held, plan, clients,  # type: ignore[arg-type]
                                             SimpleNamespace(uri=lambda: "state"))  # type: ignore[arg-type]
    assert started is False and executed == [], "the syncs decide: the remote holds copies the progress does not place"
