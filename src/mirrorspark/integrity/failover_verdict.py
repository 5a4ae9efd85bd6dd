"""Is a consumer group safe to fail over from a flow's source to its target? One verdict per group
with checkpoints for the flow, every reason in one line, so an operator in a DR drill sees why.

A group is safe when: its checkpoints cover what it consumed and match its commits (behind, it
reads records again; ahead, it skips some); what it has not consumed yet is already on the target;
no data loss was reported for its topics; and the audit found nothing missing, duplicated or
differing there. The checkpoints' age is shown: an old checkpoint of an idle group is still exact,
so age alone decides nothing, but next to a mismatch it says whether checkpoints still flow.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient

from mirrorspark.formats import Checkpoint
from mirrorspark.integrity.loss import LossReport
from mirrorspark.offsets.checkpoint_store import decode_checkpoints
from mirrorspark.partition import Partition

log = logging.getLogger(__name__)

Stamped = tuple[Checkpoint, int]  # a checkpoint and its record's timestamp (ms): when it was emitted


@dataclass(frozen=True)
class Reason:
    ok: bool
    text: str
    kind: str = ""  # checkpoints, lag, loss or audit: what a cutover, which drains the lag, looks at


@dataclass(frozen=True)
class GroupVerdict:
    group: str
    reasons: tuple[Reason, ...]

    @property
    def safe(self) -> bool:
        return all(r.ok for r in self.reasons)

    def as_dict(self) -> dict:
        return {"group": self.group, "safe": self.safe,
                "reasons": [{"ok": r.ok, "text": r.text} for r in self.reasons]}


def read_checkpoints(spark, options: Mapping[str, str], admin: AdminClient, topic: str) -> tuple[list[Stamped], int]:
    """The newest checkpoint per (group, topic, partition) in ``topic`` with its timestamp, read in
    one Spark batch; records that are not MM2 checkpoints are skipped with a warning. Returns them
    and the number skipped."""
    from pyspark.sql import functions as F

    metadata = admin.list_topics(timeout=30).topics
    if topic not in metadata or metadata[topic].error is not None:
        return [], 0
    reader = spark.read.format("kafka")
    for key, value in options.items():
        reader = reader.option(key, value)
    rows = (reader.option("subscribe", topic).option("startingOffsets", "earliest").option("endingOffsets", "latest")
            .load().select("key", "value", F.unix_millis("timestamp").alias("ts"), "partition", "offset")
            .orderBy("partition", "offset").collect())
    return latest_checkpoints(topic, [(r["key"], r["value"], r["ts"], r["partition"], r["offset"]) for r in rows])


def latest_checkpoints(topic: str, records: Iterable[tuple[bytes | None, bytes | None, int, int, int]]
                       ) -> tuple[list[Stamped], int]:
    """The newest checkpoint per key of ``records`` (key, value, timestamp ms, partition, offset; in
    offset order), skipping with a warning what is not an MM2 checkpoint; and how many were skipped."""
    found, skipped = decode_checkpoints(topic, ((k, v, p, o, ts) for k, v, ts, p, o in records))
    latest = {(c.group, c.topic, c.partition): (c, ts) for c, ts in found}
    return list(latest.values()), skipped


def assess(group: str, source_alias: str, checkpoints: Sequence[Stamped], source_of: Mapping[str, str],
           committed: Mapping[Partition, int] | None, ends: Mapping[Partition, int],
           replicated: Mapping[Partition, int], problems: Mapping[str, Mapping[str, int]] | None,
           losses: Sequence[LossReport], interval: float,
           now: float | None = None) -> GroupVerdict:
    """The verdict for ``group``: ``checkpoints`` are its own (remote topics, ``source_of`` maps them
    back), ``committed`` its offsets on the source (None: unreadable), ``ends`` the source's end
    offsets, ``replicated`` the end of the replicated range per source partition, ``problems`` the
    audit's counts per source topic (None: no audit ran, as on the status page, and nothing is said
    about the records themselves)."""
    by_source = {(source_of[c.topic], c.partition): (c, ts) for c, ts in checkpoints if c.topic in source_of}
    reads = {t for t, _ in by_source} | {t for t, _ in committed or {}}
    now = time.time() if now is None else now
    return GroupVerdict(group, (
        _checkpoint_reason(source_alias, by_source, committed, interval, now),
        _lag_reason(source_alias, committed, ends, replicated),
        _loss_reason([r for r in losses if r.topic in reads]),
        *(() if problems is None else (_audit_reason(reads, problems),)),
    ))


def _names(keys: Sequence[Partition]) -> str:
    shown = ", ".join(f"{t}[{p}]" for t, p in keys[:3])
    return shown + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")


def _checkpoint_reason(source: str, by_source: Mapping[Partition, Stamped], committed: Mapping[Partition, int] | None,
                       interval: float, now: float) -> Reason:
    newest = max((ts for _, ts in by_source.values()), default=None)
    text = f"checkpoints: {len(by_source)} partition(s)"
    if newest is not None:
        text += f", newest {max(0.0, now - newest / 1000):.0f} s old (emitted every {interval:g} s)"
    if committed is None:
        return Reason(False, f"{text}; the group's commits on {source} could not be read to compare",
                      kind="checkpoints")
    pairs = [(committed[k], c.upstream) for k, (c, _) in by_source.items() if k in committed]
    behind = sum(max(0, mine - ckpt) for mine, ckpt in pairs)
    ahead = sum(max(0, ckpt - mine) for mine, ckpt in pairs)
    uncovered = sorted(k for k, offset in committed.items() if k not in by_source and offset > 0)
    if not (behind or ahead or uncovered):
        return Reason(True, f"{text}, matching the group's commits on {source}", kind="checkpoints")
    if behind:
        text += f"; {behind} record(s) consumed on {source} after the checkpoints would be read again"
    if ahead:
        text += f"; the checkpoints are {ahead} record(s) ahead of the group's commits (those would be skipped)"
    if uncovered:
        text += f"; no checkpoint yet for {_names(uncovered)}, where the group has consumed records"
    return Reason(False, text, kind="checkpoints")


def _lag_reason(source: str, committed: Mapping[Partition, int] | None, ends: Mapping[Partition, int],
                replicated: Mapping[Partition, int]) -> Reason:
    if committed is None:
        return Reason(False, f"lag on {source}: unknown (the group's commits could not be read)", kind="lag")
    lag = sum(max(0, ends[k] - offset) for k, offset in committed.items() if k in ends)
    behind = sum(max(0, ends[k] - max(offset, replicated.get(k, 0))) for k, offset in committed.items() if k in ends)
    text = f"lag on {source}: {lag} record(s) not consumed yet"
    if behind:
        return Reason(False, f"{text}, {behind} of them not replicated yet (they would be left behind)",
                      kind="lag")
    return Reason(True, f"{text}, all of them replicated" if lag else text, kind="lag")


def _loss_reason(reports: Sequence[LossReport]) -> Reason:
    if not reports:
        return Reason(True, "data loss: none reported for its topics", kind="loss")
    last = max(reports, key=lambda r: r.time)
    return Reason(False, f"data loss: {sum(r.records for r in reports)} record(s) of its topics were never "
                         f"replicated ({len(reports)} report(s); latest {last.topic}[{last.partition}] offsets "
                         f"{last.first}..{last.last}: {last.reason})", kind="loss")


def _audit_reason(reads: set[str], problems: Mapping[str, Mapping[str, int]]) -> Reason:
    kinds = ("missing", "duplicated", "differing")
    totals = {k: sum(problems.get(t, {}).get(k, 0) for t in reads) for k in kinds}
    if not any(totals.values()):
        return Reason(True, "audit: no missing, duplicated or differing records in its topics", kind="audit")
    return Reason(False, "audit: " + ", ".join(f"{totals[k]} {k}" for k in kinds) + " record(s) in its topics",
                  kind="audit")
