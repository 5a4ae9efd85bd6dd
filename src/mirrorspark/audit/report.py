"""What an audit found: counts per partition, the group verdicts, and the JSON ``--json`` prints.

The model is built complete by the job and the run, and only read afterwards (the CLI renders it,
``--json`` dumps ``as_dict``); its field order is the JSON's key order, which scripts read.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from mirrorspark.integrity.failover_verdict import GroupVerdict
from mirrorspark.integrity.loss import LossReport

COUNTS = ("source_records", "target_records", "matched", "missing", "duplicated", "differing", "unverified",
          "source_removed")
PROBLEMS = ("missing", "duplicated", "differing")


@dataclass(frozen=True, kw_only=True)
class PartitionAudit:
    """What the comparison found in one partition (offsets are inclusive; None: nothing of the kind)."""

    source_topic: str
    remote_topic: str
    partition: int
    runs: int
    source_range: tuple[int, int]
    target_range: tuple[int, int]
    source_records: int = 0
    target_records: int = 0
    matched: int = 0
    missing: int = 0
    duplicated: int = 0
    differing: int = 0
    unverified: int = 0       # records in thinned gaps on either side: not judged
    source_removed: int = 0   # target records whose source record is gone (retention, compaction)
    first_missing: int | None = None      # source offset
    first_duplicated: int | None = None   # target offset
    first_differing: int | None = None    # source offset
    source_checksum: str = ""
    target_checksum: str = ""

    @property
    def problems(self) -> int:
        """Records judged wrong; unverified and source-removed ones are not (nothing says they are)."""
        return sum(getattr(self, kind) for kind in PROBLEMS)

    def as_dict(self) -> dict:
        return {**asdict(self), "source_range": list(self.source_range), "target_range": list(self.target_range)}


@dataclass(frozen=True, kw_only=True)
class AuditReport:
    """The whole audit of one flow; ``ok`` decides the exit code."""

    flow: str
    state: str
    partitions: list[PartitionAudit]
    data_loss: list[LossReport]
    groups: list[GroupVerdict]
    checkpoints_skipped: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(p.problems == 0 for p in self.partitions)

    def totals(self) -> dict[str, int]:
        return {k: sum(getattr(p, k) for p in self.partitions) for k in COUNTS}

    def as_dict(self) -> dict:
        return {"flow": self.flow, "state": self.state, "ok": self.ok, "totals": self.totals(),
                "partitions": [p.as_dict() for p in self.partitions],
                "data_loss": [asdict(r) for r in self.data_loss],
                "groups": [g.as_dict() for g in self.groups],
                "checkpoints_skipped": self.checkpoints_skipped, "seconds": round(self.seconds, 1),
                "notes": self.notes}
