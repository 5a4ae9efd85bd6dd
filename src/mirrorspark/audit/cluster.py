"""What the audit asks each cluster's admin API: log bounds, and the commits of checkpointed groups.

Only reads, each answering the question the job and the verdicts need; kept apart so the rest of
the audit takes plain dictionaries and can be checked without brokers.
"""
from __future__ import annotations

import logging
from collections.abc import Collection, Iterable

from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient

from mirrorspark.audit.plan import Bounds
from mirrorspark.control.admin import partition_offsets
from mirrorspark.errors import OperationalError
from mirrorspark.partition import Partition

log = logging.getLogger(__name__)


def log_bounds(admin: AdminClient, keys: Iterable[Partition], isolation: IsolationLevel) -> Bounds:
    """(log start, log end) of each partition that exists (end: the last stable offset when
    ``isolation`` is read_committed, as the flow reads)."""
    metadata = admin.list_topics(timeout=30).topics
    wanted = [TopicPartition(t, p) for t, p in sorted(set(keys))
              if t in metadata and metadata[t].error is None and p in metadata[t].partitions]
    if not wanted:
        return {}
    pairs = [(tp.topic, tp.partition) for tp in wanted]
    committed = isolation == IsolationLevel.READ_COMMITTED
    starts = partition_offsets(admin, pairs, earliest=True, timeout=30, read_committed=committed)
    ends = partition_offsets(admin, pairs, timeout=30, read_committed=committed)
    return {key: (starts[key], end) for key, end in ends.items() if key in starts}


def group_commits(admin: AdminClient, groups: Iterable[str], *, topics: Collection[str],
                  alias: str) -> dict[str, dict[Partition, int] | None]:
    """Each group's committed offsets on the source in ``topics``; None for a group whose offsets
    could not be read (its verdict then says so, rather than the whole audit failing)."""
    from mirrorspark.control.groups import RdkafkaGroups

    source = RdkafkaGroups(admin=admin, cluster=f"cluster {alias}")
    committed: dict[str, dict[Partition, int] | None] = {}
    for group in groups:
        try:
            committed[group] = {k: offset for k, (offset, _) in source.committed(group).items() if k[0] in topics}
        except OperationalError as exc:  # not answering, or refused
            log.warning("offsets of group %s on %s could not be read: %s", group, alias, exc)
            committed[group] = None
    return committed


def source_ends(admin: AdminClient, committed: dict[str, dict[Partition, int] | None], bounds: Bounds,
                isolation: IsolationLevel) -> dict[Partition, int]:
    """End offsets of the audited partitions and of the other partitions of the audited topics a
    group committed in (its lag counts all it reads there), asking the cluster only for those."""
    wanted = {key for offsets in committed.values() if offsets for key in offsets} - set(bounds)
    return {k: end for k, (_, end) in {**bounds, **log_bounds(admin, wanted, isolation)}.items()}
