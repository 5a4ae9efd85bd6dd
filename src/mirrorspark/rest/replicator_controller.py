"""The REST API's view of a running ``Replicator``: state, figures and lag per flow, and control."""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from fastapi import HTTPException

from mirrorspark.config.keys import redact
from mirrorspark.rest.controller import UnknownFlow

if TYPE_CHECKING:
    from mirrorspark.pipeline.runner import Replicator


class ReplicatorController:
    def __init__(self, replicator: "Replicator") -> None:
        self.replicator = replicator
        self._lock = threading.Lock()  # one control action at a time

    def _find(self, name: str):
        for flow in self.replicator.flows:
            if flow.flow.name == name:
                return flow
        known = ", ".join(f.flow.name for f in self.replicator.flows)
        raise UnknownFlow(f"no flow {name!r} in this process (flows: {known})")

    def _summary(self, flow, detail: bool) -> dict[str, Any]:
        probe = self.replicator.lag_probes.get(flow.flow.name)
        lags = probe.latest if probe is not None else []
        figures = flow.metrics.snapshot() if flow.metrics is not None else {}
        supervisor = self.replicator.supervisors.get(flow.flow.name)
        out: dict[str, Any] = {
            "name": flow.flow.name,
            "source": flow.flow.source.alias,
            "target": flow.flow.target.alias,
            "state": supervisor.state() if supervisor else flow.state(),
            "error": supervisor.reason() if supervisor else flow.error(),
            "restart_attempts": supervisor.attempts if supervisor else 0,
            "restarts": supervisor.restarts if supervisor else 0,
            "records_lost": supervisor.loss.total() if supervisor else 0,
            "records_replicated": figures.get("records", 0),
            "bytes_replicated": figures.get("bytes", 0),
            "records_recopied": figures.get("recopied", 0),
            "batches_written": figures.get("batches_written", 0),
            "last_batch_time": figures.get("last_batch_time"),
            "lag_offsets": sum(lag.offsets for lag in lags),
            "lag_seconds": max((lag.seconds for lag in lags), default=0.0),
            "lag_measured_at": probe.measured_at if probe is not None else None,
            "topics": sorted(flow.remote_topics.plan.remote.items()) if detail else len(flow.remote_topics.plan.remote),
        }
        if detail:
            out["partitions"] = figures.get("partitions", [])
            out["lag"] = [lag.__dict__ for lag in lags]
            out["last_batch_durations_ms"] = flow.batch_durations() if flow.query is not None else {}
            out["last_batch_python_ms"] = dict(flow.batch_phases_ms)
            out["executors"] = sorted(flow.executors)  # Spark executors whose tasks wrote records
            out["data_loss"] = [r.__dict__ for r in supervisor.loss.reports[-50:]] if supervisor else []
        return out

    def flows(self) -> list[dict[str, Any]]:
        return [self._summary(flow, detail=False) for flow in self.replicator.flows]

    def flow(self, name: str) -> dict[str, Any]:
        return self._summary(self._find(name), detail=True)

    def _act(self, name: str, action: str) -> dict[str, Any]:
        flow = self._find(name)
        spark = self.replicator.spark
        if spark is None:
            raise HTTPException(409, "the replicator is not running yet (or is stopping); try again shortly")
        with self._lock:
            if action == "pause":
                flow.pause()
            elif action == "resume":
                if not flow.paused:
                    raise HTTPException(409, f"flow {name} is not paused (state {flow.state()})")
                flow.resume(spark)
            else:
                supervisor = self.replicator.supervisors.get(name)
                supervisor.manual_restart(spark) if supervisor else flow.restart(spark)
        supervisor = self.replicator.supervisors.get(name)
        return {"flow": name, "state": supervisor.state() if supervisor else flow.state()}

    def pause(self, name: str) -> dict[str, Any]:
        return self._act(name, "pause")

    def resume(self, name: str) -> dict[str, Any]:
        return self._act(name, "resume")

    def restart(self, name: str) -> dict[str, Any]:
        return self._act(name, "restart")

    def translate(self, group: str, source: str, target: str) -> list[dict[str, Any]]:
        from mirrorspark.client import MirrorClient

        conf = self.replicator.cluster_conf(target)
        if conf is None or source not in self.replicator.config.clusters:
            known = ", ".join(self.replicator.config.clusters)
            raise HTTPException(400, f"source and target must be cluster aliases of this process ({known})")
        offsets = MirrorClient(conf).remote_consumer_offsets(group, source)
        return [{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(offsets.items())]

    def config(self) -> dict[str, Any]:
        config = self.replicator.config
        return {
            "clusters": {alias: redact(c.settings) for alias, c in config.clusters.items()},
            "flows": {f.name: redact(f.settings) for f in config.enabled_flows},
            "top_level": redact(config.top_level),
            "generated_at": time.time(),
        }
