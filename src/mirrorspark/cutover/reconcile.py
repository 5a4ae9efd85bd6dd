"""``reconcile``: after an unplanned failover from A to B, the records A took that never reached B.

When A fails, the records it acknowledged after the last one the flow A->B copied exist only on A.
Consumers moved to B meanwhile, and producers write there. When A comes back, resuming A->B would
append those old records to B's remote topic behind everything written since, and nobody would be
told. Cluster Linking's truncate-and-restore throws them away and reports a count. Here they are
copied, in order, into a side topic on B and on A (``<remote topic>.diverged.internal`` and
``<topic>.diverged.internal``: names ending ``.internal``, which no flow replicates, and which the
replication policy never gives a copied topic), each record with its origin in a header, and the flow
A->B then skips them: Spark's positions move past them and the offset mapping marks the gap, so a
group that fails back from B to A resumes after them (A level with B) instead of reading them as new.

Per source partition the tail starts after the last record on B: the flow's offset mapping says where
its copy ends, and the records on B after that point (written by a batch that never reported them)
are compared one by one with A's next records. Nothing is truncated or deleted anywhere.

The copy is resumable: each side partition's last record names the source offset it came from, so a
run killed half-way continues after it; the flow is moved only when both copies are complete.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from mirrorspark.control.admin import consumer, producer, watermarks
from mirrorspark.errors import OperationalError
from mirrorspark.partition import OffsetRun
from mirrorspark.takeover.positions import Record, read_from, same

SIDE_SUFFIX = ".diverged.internal"
ORIGIN = "mirrorspark.diverged.from"  # header: "<source alias>/<topic>/<partition>/<offset>"
SIDE_CONFIG = {"retention.ms": "-1", "retention.bytes": "-1"}  # kept until a person deletes them


class ReconcileRefused(OperationalError):
    """What reconcile found cannot be moved aside safely (said why); nothing was changed."""


def side_topic(name: str) -> str:
    return name + SIDE_SUFFIX


@dataclass(kw_only=True)
class Tail:
    """One source partition: the copy on the target ends at ``copy_end`` (source) / ``target_end``
    (target); the source records from ``copy_end`` to ``end`` never reached the target."""

    topic: str
    partition: int
    remote: str
    copy_end: int
    target_end: int
    end: int
    copied: list[OffsetRun] = field(default_factory=list)  # found on the target past the offset mapping
    records: int = 0       # source records in the tail (filled by the copy)
    gone: int = 0          # offsets of the tail below the source's log start (retention): lost, reported
    first: int | None = None
    last: int | None = None

    def as_dict(self) -> dict[str, Any]:
        row = asdict(self)
        row["copied"] = [[r.upstream, r.downstream, r.count] for r in self.copied]
        return row


def pair_runs(pairs: Sequence[tuple[int, int]]) -> list[OffsetRun]:
    """(source offset, target offset) pairs in order, as runs where both advance one by one."""
    runs: list[OffsetRun] = []
    for upstream, downstream in pairs:
        last = runs[-1] if runs else None
        if last is not None and last.upstream_end == upstream and last.downstream_end == downstream:
            runs[-1] = OffsetRun(last.upstream, last.downstream, last.count + 1)
        else:
            runs.append(OffsetRun(upstream, downstream, 1))
    return runs


def ends(conf: dict[str, Any], topic: str, partition: int, timeout: float = 30.0) -> tuple[int, int]:
    reader = consumer({**conf, "group.id": "mirrorspark-reconcile", "enable.auto.commit": False})
    try:
        return watermarks(reader, TopicPartition(topic, partition), deadline=time.monotonic() + timeout)
    except KafkaException as exc:
        raise ReconcileRefused(f"the ends of {topic}[{partition}] cannot be read: {exc.args[0].str()}") from None
    finally:
        reader.close()


def find_tail(*, source_conf: dict[str, Any], target_conf: dict[str, Any], topic: str, partition: int, remote: str,
              copy_end: int, target_end: int) -> Tail:
    """The partition's tail: ``copy_end``/``target_end`` from the flow's offset mapping, moved past
    the records on the target after them that are, one by one, the source's next records."""
    source_low, source_high = ends(source_conf, topic, partition)
    _, target_high = ends(target_conf, remote, partition)
    tail = Tail(topic=topic, partition=partition, remote=remote, copy_end=copy_end, target_end=target_end,
                end=max(source_high, copy_end), gone=max(0, min(source_low, source_high) - copy_end))
    extra = target_high - target_end
    if extra <= 0:
        return tail
    on_target = read_from(target_conf, remote, partition, target_end, extra)
    on_source = read_from(source_conf, topic, partition, copy_end, len(on_target))
    pairs = []
    for ours, theirs in zip(on_source, on_target, strict=False):
        if not same(ours, theirs):
            break
        pairs.append((ours[0], theirs[0]))
    if len(pairs) != len(on_target):
        at = on_target[len(pairs)][0] if len(pairs) < len(on_target) else target_high
        raise ReconcileRefused(
            f"{remote}[{partition}] holds records after the flow's copy (target offset {at} on) that are not "
            f"{topic}[{partition}]'s next records: another writer wrote into the remote topic, or the source topic "
            "was re-created; nothing was moved")
    tail.copied = pair_runs(pairs)
    tail.copy_end, tail.target_end = pairs[-1][0] + 1, pairs[-1][1] + 1
    tail.end = max(tail.end, tail.copy_end)
    tail.gone = max(0, min(source_low, source_high) - tail.copy_end)
    return tail


def ensure_side_topic(admin: AdminClient, name: str, partitions: int, replication_factor: int,
                      timeout: float = 30.0) -> None:
    """The side topic, with the source topic's partitions and no retention; an existing one must have
    at least as many partitions (records keep their partition)."""
    found = admin.list_topics(timeout=timeout).topics.get(name)
    if found is not None:
        if len(found.partitions) < partitions:
            raise ReconcileRefused(f"{name} exists with {len(found.partitions)} partition(s), fewer than the "
                                   f"{partitions} its records come from")
        return
    future = admin.create_topics([NewTopic(name, partitions, replication_factor, config=SIDE_CONFIG)])[name]
    try:
        future.result(timeout=timeout)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise ReconcileRefused(f"{name} cannot be created: {exc.args[0].str()}") from None


def last_origin(conf: dict[str, Any], side: str, partition: int, source_alias: str, topic: str) -> int | None:
    """The source offset the side partition's last record came from (None: empty, or not from there)."""
    low, high = ends(conf, side, partition)
    if high <= low:
        return None
    found = read_from(conf, side, partition, high - 1, 1)
    if not found:
        return None
    for key, value in found[-1][3]:
        if key == ORIGIN and value is not None:
            alias, origin_topic, origin_partition, offset = value.decode().rsplit("/", 3)
            if (alias, origin_topic, origin_partition) == (source_alias, topic, str(partition)):
                return int(offset)
    return None


def read_tail(conf: dict[str, Any], tail: Tail, timeout: float) -> list[Record]:
    """The tail's source records, in order (offsets below ``end``)."""
    start = tail.copy_end + tail.gone
    if tail.end <= start:
        return []
    found = read_from(conf, tail.topic, tail.partition, start, tail.end - start, timeout=timeout)
    return [record for record in found if record[0] < tail.end]


def copy_aside(*, records: Sequence[Record], tail: Tail, conf: dict[str, Any], side: str, source_alias: str,
               timeout: float = 120.0) -> int:
    """Append the tail's records the side partition does not hold yet; returns how many were written."""
    done = last_origin(conf, side, tail.partition, source_alias, tail.topic)
    todo = [r for r in records if done is None or r[0] > done]
    if not todo:
        return 0
    out = producer({**conf, "enable.idempotence": True, "acks": "all", "linger.ms": 20})
    failures: list[str] = []

    def report(err, _msg) -> None:
        if err is not None:
            failures.append(err.str())

    origin = f"{source_alias}/{tail.topic}/{tail.partition}/"
    for offset, key, value, headers, timestamp in todo:
        extra = {"timestamp": timestamp} if timestamp is not None else {}
        while True:
            try:
                out.produce(side, value, key, partition=tail.partition, on_delivery=report,
                            headers=[*headers, (ORIGIN, (origin + str(offset)).encode())], **extra)
                break
            except BufferError:
                out.poll(0.5)
    left = out.flush(timeout)
    if left or failures:
        raise ReconcileRefused(f"copying {len(todo)} record(s) of {tail.topic}[{tail.partition}] into {side} failed: "
                               f"{failures[0] if failures else f'{left} not acknowledged in {timeout:.0f} s'}; run "
                               "the command again: it continues after the last record written")
    return len(todo)


def topic_pattern(topics: str | None) -> Callable[[str], bool]:
    if topics is None:
        return lambda _: True
    try:
        compiled = re.compile(topics)
    except re.error as exc:
        from mirrorspark.errors import ConfigError
        raise ConfigError(f"--topics is not a valid regex: {exc}", "--topics") from None
    return lambda name: compiled.fullmatch(name) is not None


def stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%S")
