"""For the status page: per flow written here, the last checkpoint emitted and, per consumer group,
whether failing over now would be exact.

The verdict is ``integrity.failover_verdict.assess``, the one ``audit`` and ``failover`` give, fed
from the cheapest source that is still the truth:

- the flow's own memory for what it already knows: the source's end offsets and the flow's
  replicated positions (the lag probe's last round), the loss reports (the supervisor's log), the
  topic plan (remote -> source names);
- Kafka only for what the process does not keep: the checkpoints topic on the target, read as
  ``failover`` reads it (the records' timestamps say when each checkpoint was emitted; the checkpoint
  task's in-memory store has the values but not the times), and each group's commits on the source.

Those reads run in a daemon thread, at most every ``REFRESH_SECONDS`` per flow and only while someone
asks (a page request starts a refresh of a stale entry and answers with what is cached), each read
bounded by ``READ_TIMEOUT``: a page request never waits on a cluster, and a cluster that does not
answer shows as an error line on the page, never as a stuck request. The audit's record comparison
is not run (``problems=None``): the page says so instead of claiming a clean audit.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mirrorspark.errors import OperationalError
from mirrorspark.integrity.failover_verdict import assess as assess_group
from mirrorspark.integrity.failover_verdict import latest_checkpoints
from mirrorspark.offsets.checkpoint_store import read_compacted_topic
from mirrorspark.partition import Partition

if TYPE_CHECKING:
    from mirrorspark.pipeline.flow_assembly import AssembledFlow

log = logging.getLogger(__name__)

REFRESH_SECONDS = 30.0  # at most one round of reads per flow in this time
READ_TIMEOUT = 10.0  # seconds for reading the checkpoints topic
MAX_GROUPS = 50  # groups judged per flow; the rest are counted (``audit`` judges them all)


def readiness_of(parts: AssembledFlow, *, source_alias: str, interval: float,
                 timeout: float = READ_TIMEOUT, max_groups: int = MAX_GROUPS) -> dict[str, Any]:
    """One round of reads for one flow (blocking: called off the request path)."""
    task = parts.offsets.checkpoints
    if task is None:
        return {"enabled": False, "checked_at": time.time()}
    records = read_compacted_topic(task.target_conf, task.topic, timeout)
    stamped, _ = latest_checkpoints(task.topic, ((k, v, ts, p, o) for k, v, p, o, ts in records))
    source_of = {remote: source for source, remote in parts.query.remote_topics.plan.remote.items()}
    mine = [(c, ts) for c, ts in stamped if c.topic in source_of]
    groups = sorted({c.group for c, _ in mine})
    lags = list(parts.probe.latest)
    ends: dict[Partition, int] = {(lag.topic, lag.partition): lag.end_offset for lag in lags}
    replicated: dict[Partition, int] = {(lag.topic, lag.partition): lag.position for lag in lags}
    losses = list(parts.supervisor.loss.reports)
    verdicts = []
    readable = True
    for group in groups[:max_groups]:
        committed: Mapping[Partition, int] | None = None
        if readable:  # after one failure the source is taken as out of reach for this round
            try:
                committed = {key: offset for key, (offset, _) in task.source.committed(group).items()}
            except OperationalError as exc:  # the groups' client: not answering, or refused
                readable = False
                log.info("status page: the commits of group %s on %s could not be read: %s", group, source_alias, exc)
        verdict = assess_group(group, source_alias, [(c, ts) for c, ts in mine if c.group == group], source_of,
                               committed, ends, replicated, None, losses, interval)
        verdicts.append(verdict.as_dict())
    return {"enabled": True, "checked_at": time.time(), "topic": task.topic,
            "emitted_at": max((ts / 1000 for _, ts in mine), default=None), "groups": len(groups),
            "verdicts": verdicts, "not_judged": max(0, len(groups) - max_groups),
            "lag_measured_at": parts.probe.measured_at}


class ReadinessCache:
    """The last round per flow, refreshed in the background when older than ``every`` seconds."""

    def __init__(self, *, every: float = REFRESH_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.every = every
        self.clock = clock
        self._found: dict[str, tuple[float, dict[str, Any]]] = {}
        self._running: set[str] = set()
        self._lock = threading.Lock()

    def get(self, name: str, read: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
        """What is cached for ``name`` (None before the first round ends); starts ``read`` in a daemon
        thread when the entry is missing or stale and no round runs for it."""
        with self._lock:
            found = self._found.get(name)
            stale = found is None or self.clock() - found[0] >= self.every
            if stale and name not in self._running:
                self._running.add(name)
                threading.Thread(target=self._refresh, args=(name, read), name=f"mirrorspark-readiness-{name}",
                                 daemon=True).start()
        return None if found is None else found[1]

    def _refresh(self, name: str, read: Callable[[], dict[str, Any]]) -> None:
        try:
            result = read()
        except Exception as exc:  # noqa: BLE001 - shown on the page; a page error never stops a flow
            log.info("status page: reading the checkpoints of flow %s failed: %s", name, exc)
            result = {"enabled": True, "checked_at": time.time(), "error": f"{type(exc).__name__}: {exc}"}
        with self._lock:
            self._found[name] = (self.clock(), result)
            self._running.discard(name)

    def forget(self, names: set[str]) -> None:
        """Drop flows no longer written here (a takeover by another instance)."""
        with self._lock:
            for name in set(self._found) - names:
                del self._found[name]
