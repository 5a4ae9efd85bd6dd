"""A takeover into a state folder that still holds this instance's range log from before another
writer copied on: translation inside the other writer's copies stays behind them (the fault soak)."""
from __future__ import annotations

from mirrorspark.offsets.range_log import RangeLog
from mirrorspark.offsets.ranges import OffsetRanges
from mirrorspark.partition import OffsetRun
from mirrorspark.state.files import LocalFiles
from mirrorspark.takeover.plan import FlowTakeover, seed_ranges
from mirrorspark.takeover.positions import PartitionTakeover


def test_a_group_inside_another_writers_copies_translates_behind_them_not_to_this_starts_first_record(tmp_path):
    folder = LocalFiles(tmp_path)
    log_ = RangeLog(folder.child("offset-ranges"))
    own = OffsetRanges()
    own.bind("t", 0, "src.t@id1", 0)
    own.add("t", 0, [OffsetRun(0, 0, 100)])  # this instance copied 0..99 to 0..99, then was fenced
    log_.save(own, [("t", 0)])
    # The other writer copied 100..199 to 100..259 (exactly-once: commit markers in between) and was
    # killed; this instance takes over from the committed progress: it resumes at 200, target end 260.
    plan = FlowTakeover("src->dst", "the target's committed progress")
    plan.partitions.append(PartitionTakeover("t", 0, "src.t", None, 260, 200, "exactly-once progress"))
    seed_ranges(folder, plan, {"src.t": "id1"}, {("src.t", 0): 0})
    ranges = RangeLog(folder.child("offset-ranges")).load()
    ranges.add("t", 0, [OffsetRun(200, 261, 50)], contiguous_with_previous=True)  # its first batch
    assert ranges.translate("t", 0, 50) == 50, "its own copies: exact"
    # Source offset 150 was copied somewhere in 100..259 by the other writer: one past the last known
    # copy (100) re-reads some, never skips; before, it translated to 261, past all of them.
    assert ranges.translate("t", 0, 150) == 100
    assert ranges.translate("t", 0, 210) == 271


def test_a_partition_the_log_knows_nothing_of_translates_before_the_takeover_to_the_remote_log_start(tmp_path):
    """No range log (another instance wrote everything so far): a group committed among its copies gets a
    checkpoint at the remote partition's log start (re-read, none skipped), not none at all (the soak:
    ``translates to None``; a consumer failed over there starts at its reset policy, latest by default)."""
    folder = LocalFiles(tmp_path)
    plan = FlowTakeover("src->dst", "the target's committed progress")
    plan.partitions.append(PartitionTakeover("t", 0, "src.t", None, 260, 200, "exactly-once progress"))
    plan.partitions.append(PartitionTakeover("t", 1, "src.t", None, 0, 0, "exactly-once progress"))
    seed_ranges(folder, plan, {"src.t": "id1"}, {("src.t", 0): 40, ("src.t", 1): 0})
    ranges = RangeLog(folder.child("offset-ranges")).load()
    ranges.add("t", 0, [OffsetRun(200, 261, 50)], contiguous_with_previous=True)
    assert ranges.translate("t", 0, 150) == 40 and ranges.translate("t", 0, 210) == 271
    # A floor is kept across saves and loads, and a takeover never moves one already set.
    seed_ranges(folder, plan, {"src.t": "id1"}, {("src.t", 0): 90, ("src.t", 1): 0})
    assert RangeLog(folder.child("offset-ranges")).load().translate("t", 0, 150) == 40
