"""The REST API's view of the running flows: state, figures and lag per flow, and control.

It implements ``rest.controller.Controller`` for the runner. It lives beside the runner because it
asks the pipeline's ``Flow`` objects (their state, parts and controls); the REST package knows only
the protocol, so ``rest/`` never imports ``pipeline/``, and the runner is seen here through
``RunningFlows``, not imported.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from mirrorspark.config.redaction import Redactor, current
from mirrorspark.errors import ConfigError, Conflict
from mirrorspark.partition import OffsetRun, Partition
from mirrorspark.pipeline.failover_readiness import ReadinessCache, readiness_of
from mirrorspark.rest.controller import UnknownFlow

if TYPE_CHECKING:
    from mirrorspark.client import MirrorClient
    from mirrorspark.config.model import MirrorConfig
    from mirrorspark.pipeline.flow import Flow, Standby
    from mirrorspark.pipeline.flow_assembly import AssembledFlow

TRANSLATE_TTL = 5.0  # seconds a translation is served from memory instead of re-reading checkpoints


class TranslationCache:
    """One ``MirrorClient`` per target cluster, and translations kept ``ttl`` seconds per
    (source, target) pair and group: each uncached call reads a whole checkpoints topic."""

    def __init__(self, make_client: Any, ttl: float = TRANSLATE_TTL) -> None:
        self._make_client = make_client
        self.ttl = ttl
        self._clients: dict[tuple[str, str], MirrorClient] = {}
        self._found: dict[tuple[str, str], dict[str, tuple[float, dict[Partition, int]]]] = {}
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def offsets(self, group: str, source: str, target: str) -> dict[Partition, int]:
        pair = (source, target)
        with self._guard:
            lock = self._locks.setdefault(pair, threading.Lock())
        with lock:  # concurrent calls for one pair share one read
            now = time.monotonic()
            entries = self._found.setdefault(pair, {})
            for stale in [g for g, (at, _) in entries.items() if now - at > self.ttl]:
                del entries[stale]
            if group not in entries:
                client = self._clients.get(pair)
                if client is None:
                    client = self._clients[pair] = self._make_client(source, target)
                entries[group] = (now, client.remote_consumer_offsets(group, source))
            return entries[group][1]


class RunningFlows(Protocol):
    """What the controller reads of the process (the runner's ``Replicator``): its flows by name."""

    config: MirrorConfig
    spark: Any
    flows: dict[str, Flow]

    def cluster_conf(self, alias: str) -> dict[str, str] | None: ...


class ReplicatorController:
    def __init__(self, replicator: RunningFlows, *,
                 promotions: Callable[[str], dict[str, Any] | None] | None = None) -> None:
        """``promotions``: a flow's ``mirrorspark promote`` under way, from the journals it keeps in this
        process's state dir, so REST, ``status`` and the status page show a cutover's step."""
        self.replicator = replicator
        self.promotions = promotions
        self._lock = threading.Lock()  # one control action at a time
        self._translations = TranslationCache(self._client)
        self._readiness = ReadinessCache()

    def _find(self, name: str) -> Flow:
        """The flow this process writes; a standby or an unknown name is refused, saying why."""
        flow = self.replicator.flows.get(name)
        if flow is not None and flow.parts is not None:
            return flow
        standby = flow.standby() if flow is not None else None
        if standby is not None and standby.failure is not None:
            raise Conflict(f"flow {name!r} is not running in this process yet: starting it failed and is retried "
                           f"({standby.failure})")
        if standby is not None:
            raise Conflict(f"flow {name!r} is a standby in this process: another instance writes it (lease group "
                           f"{standby.group}); ask that instance, or stop it and this one takes over")
        known = ", ".join(self.replicator.flows)
        raise UnknownFlow(f"no flow {name!r} in this process (flows: {known})")

    @staticmethod
    def _summary(flow: Flow, parts: AssembledFlow, detail: bool) -> dict[str, Any]:
        query, supervisor, probe = parts.query, parts.supervisor, parts.probe
        lags = probe.latest
        figures = query.metrics.snapshot() if query.metrics is not None else {}
        plan = query.remote_topics.plan
        out: dict[str, Any] = {
            "name": flow.name,
            "source": flow.config.source.alias,
            "target": flow.config.target.alias,
            "role": "writer",
            "state": supervisor.state(),
            "healthy": supervisor.healthy(),
            "error": supervisor.reason(),
            "restart_attempts": supervisor.attempts,
            "restarts": supervisor.restarts,
            "records_lost": supervisor.loss.total(),
            "records_replicated": figures.get("records", 0),
            "bytes_replicated": figures.get("bytes", 0),
            "records_recopied": figures.get("recopied", 0),
            "batches_written": figures.get("batches_written", 0),
            "last_batch_time": figures.get("last_batch_time"),
            "lag_offsets": sum(lag.offsets for lag in lags),
            "lag_seconds": max((lag.seconds for lag in lags), default=0.0),
            "lag_measured_at": probe.measured_at,
            "topics": sorted(plan.remote.items()) if detail else len(plan.remote),
        }
        if detail:
            out["partitions"] = figures.get("partitions", [])
            out["lag"] = [lag.__dict__ for lag in lags]
            out["last_batch_durations_ms"] = query.batch_durations() if query.query is not None else {}
            out["last_batch_python_ms"] = dict(query.batch_phases_ms)
            out["executors"] = sorted(query.executors)  # Spark executors whose tasks wrote records
            out["data_loss"] = [r.__dict__ for r in supervisor.loss.reports[-50:]]
        return out

    def promotion(self, name: str) -> dict[str, Any] | None:
        """The step of a ``promote`` of flow ``name`` under way, or None."""
        return None if self.promotions is None else self.promotions(name)

    def _view(self, flow: Flow, detail: bool) -> dict[str, Any] | None:
        """The flow as REST shows it (read once: a flow may be taken or left meanwhile)."""
        parts = flow.parts
        view: dict[str, Any] | None
        if parts is not None:
            view = self._summary(flow, parts, detail)
        else:
            standby = flow.standby()
            view = self._standby_summary(standby) if standby is not None else None
        if view is not None:
            view["promotion"] = self.promotion(flow.name)
        return view

    @staticmethod
    def _standby_summary(standby: Standby) -> dict[str, Any]:
        role, state = "standby", "standby"
        error = "another instance writes this flow; this one takes over when it stops or stops answering"
        if standby.failure is not None:  # this process should write it: starting it failed, retried
            first = time.time() if standby.failing_since is None else standby.failing_since
            since = datetime.fromtimestamp(first, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            role, state = "writer", "degraded"
            error = f"retrying since {since} ({standby.attempts} attempts to start it; nothing is skipped): " \
                    f"{standby.failure}"
        return {"name": standby.flow.name, "source": standby.flow.source.alias, "target": standby.flow.target.alias,
                "role": role, "state": state, "healthy": standby.failure is None,
                "standby_since": standby.since, "lease_group": standby.group,
                "error": error,
                "restart_attempts": 0, "restarts": 0, "records_lost": 0, "records_replicated": 0,
                "bytes_replicated": 0, "records_recopied": 0, "batches_written": 0, "last_batch_time": None,
                "lag_offsets": 0, "lag_seconds": 0.0, "lag_measured_at": None, "topics": 0}

    def flows(self) -> list[dict[str, Any]]:
        """The flows written here first, then the standbys (each in the configuration's order)."""
        views = [(flow.parts is None, self._view(flow, detail=False)) for flow in list(self.replicator.flows.values())]
        return [view for _, view in sorted(views, key=lambda pair: pair[0]) if view is not None]

    def flow(self, name: str) -> dict[str, Any]:
        flow = self.replicator.flows.get(name)
        view = self._view(flow, detail=True) if flow is not None else None
        if view is None:
            raise UnknownFlow(f"no flow {name!r} in this process (flows: {', '.join(self.replicator.flows)})")
        return view

    def status(self) -> list[dict[str, Any]]:
        """``flows()`` plus, per flow, its lag per source topic and (written here) its last checkpoint
        and per-group failover verdicts. Only memory is read on the caller's thread: the verdicts come
        from ``ReadinessCache``, refreshed in the background (``failover_readiness``), so the page never
        waits on a cluster; until the first round ends they are None."""
        out = []
        written = set()
        for flow in list(self.replicator.flows.values()):
            parts = flow.parts  # read once: a flow may be taken or left meanwhile
            if parts is None:
                standby = flow.standby()
                if standby is not None:
                    out.append((True, {**self._standby_summary(standby), "writing": False, "lag_topics": [],
                                       "checkpoints": None, "promotion": self.promotion(flow.name)}))
                continue
            written.add(flow.name)
            view = self._summary(flow, parts, detail=False)
            topics: dict[str, dict[str, Any]] = {}
            for lag in parts.probe.latest:
                row = topics.setdefault(lag.topic, {"topic": lag.topic, "records": 0, "seconds": 0.0})
                row["records"] += lag.offsets
                row["seconds"] = max(row["seconds"], lag.seconds)
            view["writing"], view["lag_topics"] = True, [topics[t] for t in sorted(topics)]
            view["promotion"] = self.promotion(flow.name)
            view["checkpoints"] = self._readiness.get(flow.name, self._reads_of(flow, parts))
            out.append((False, view))
        self._readiness.forget(written)
        return [view for _, view in sorted(out, key=lambda pair: pair[0])]

    @staticmethod
    def _reads_of(flow: Flow, parts: AssembledFlow) -> Callable[[], dict[str, Any]]:
        def read() -> dict[str, Any]:
            return readiness_of(parts, source_alias=flow.config.source.alias,
                                interval=flow.config.options.checkpoints_interval)
        return read

    def _act(self, name: str, action: str) -> dict[str, Any]:
        flow = self._find(name)
        spark = self.replicator.spark
        if spark is None:
            raise Conflict("the replicator is not running yet (or is stopping); try again shortly")
        with self._lock:
            if action == "pause":
                flow.pause()
            elif action == "resume":
                flow.resume(spark)  # Conflict when it is not paused
            else:
                flow.restart(spark)
        return {"flow": name, "state": flow.state()}

    def pause(self, name: str) -> dict[str, Any]:
        return self._act(name, "pause")

    def resume(self, name: str) -> dict[str, Any]:
        return self._act(name, "resume")

    def restart(self, name: str) -> dict[str, Any]:
        return self._act(name, "restart")

    def copy_ends(self, name: str) -> list[dict[str, Any]]:
        return self._find(name).copied_ends()

    def translate_positions(self, name: str, positions: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
        return self._find(name).translate_positions(positions)

    def move_aside(self, name: str, moves: list[tuple[str, int, list[OffsetRun], int]]) -> list[dict[str, Any]]:
        flow = self._find(name)
        with self._lock:
            return flow.move_aside(moves)

    def _client(self, source: str, target: str) -> MirrorClient:
        from mirrorspark.client import MirrorClient
        from mirrorspark.policy import policy_for_flow

        conf = self.replicator.cluster_conf(target)
        assert conf is not None
        flows = [f for f in self.replicator.config.enabled_flows
                 if (f.source.alias, f.target.alias) == (source, target)]
        policy = policy_for_flow(flows[0].settings, source) if flows else None
        return MirrorClient(conf, policy, java_style=False)  # cluster_conf is already librdkafka's

    def translate(self, group: str, source: str, target: str) -> list[dict[str, Any]]:
        if self.replicator.cluster_conf(target) is None or source not in self.replicator.config.clusters:
            known = ", ".join(self.replicator.config.clusters)
            raise ConfigError(f"source and target must be cluster aliases of this process ({known})")
        offsets = self._translations.offsets(group, source, target)
        return [{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(offsets.items())]

    def config(self) -> dict[str, Any]:
        """The resolved configuration, through one redactor knowing every secret value of it, so a
        password repeated in e.g. ``spark.driver.extraJavaOptions`` is hidden as well."""
        config = self.replicator.config
        redactor = Redactor(current().exact | config.secret_values())
        return {
            "clusters": {alias: redactor.settings(c.settings) for alias, c in config.clusters.items()},
            "flows": {f.name: redactor.settings(f.settings) for f in config.enabled_flows},
            "top_level": redactor.settings(config.top_level),
            "generated_at": time.time(),
        }
