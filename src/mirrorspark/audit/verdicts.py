"""What the counts mean: each checkpointed consumer group's failover verdict, and the notes that
keep an empty count from being read as a clean one.

Pure functions of what the job and the cluster reads returned, so every verdict can be checked from
counts alone; the reasons themselves are ``integrity.failover_verdict``'s (``failover`` and
``audit`` give the same verdict for the same facts).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from mirrorspark.audit.plan import Bounds, PartitionRuns
from mirrorspark.audit.report import PROBLEMS, PartitionAudit
from mirrorspark.integrity.failover_verdict import GroupVerdict, Stamped, assess
from mirrorspark.integrity.loss import LossReport
from mirrorspark.partition import Partition


def checkpointed_groups(plans: Sequence[PartitionRuns], checkpoints: Sequence[Stamped]) -> list[str]:
    """The groups with a checkpoint for one of the audited remote topics, sorted."""
    remote = {p.remote_topic for p in plans}
    return sorted({c.group for c, _ in checkpoints if c.topic in remote})


def problems_by_topic(partitions: Sequence[PartitionAudit]) -> dict[str, dict[str, int]]:
    """Missing, duplicated and differing records per source topic: a group is judged on the topics it reads."""
    problems: dict[str, dict[str, int]] = {}
    for audit in partitions:
        found = problems.setdefault(audit.source_topic, dict.fromkeys(PROBLEMS, 0))
        for kind in found:
            found[kind] += getattr(audit, kind)
    return problems


def group_verdicts(*, source_alias: str, plans: Sequence[PartitionRuns], partitions: Sequence[PartitionAudit],
                   checkpoints: Sequence[Stamped], committed: Mapping[str, Mapping[Partition, int] | None],
                   ends: Mapping[Partition, int], losses: Sequence[LossReport], interval: float,
                   now: float | None = None) -> list[GroupVerdict]:
    """One verdict per group of ``committed`` (its offsets on the source, None: unreadable), in its
    order; ``ends`` are the source's end offsets, ``interval`` the flow's checkpoint interval."""
    source_of = {p.remote_topic: p.source_topic for p in plans}
    replicated = {(p.source_topic, p.partition): p.source_span[1] for p in plans}
    problems = problems_by_topic(partitions)
    return [assess(group, source_alias, [(c, ts) for c, ts in checkpoints if c.group == group], source_of,
                   offsets, ends, replicated, problems, losses, interval, now) for group, offsets in committed.items()]


def absent_partitions(plans: Sequence[PartitionRuns], *, source_alias: str, target_alias: str,
                      source_bounds: Bounds, target_bounds: Bounds) -> list[str]:
    """Partitions a side no longer has: said once, so an empty count is not taken for a clean one."""
    notes = []
    for plan in plans:
        if (plan.source_topic, plan.partition) not in source_bounds:
            notes.append(f"{plan.source_topic}[{plan.partition}] does not exist on {source_alias}")
        if (plan.remote_topic, plan.partition) not in target_bounds:
            notes.append(f"{plan.remote_topic}[{plan.partition}] does not exist on {target_alias}")
    return notes
