"""Heartbeats exactly as MM2 emits them.

Every ordered cluster pair ``x->y`` whose flow is enabled, or whose heartbeats are enabled
(``emit.heartbeats.enabled``, true by default, so by default every pair), writes
``Heartbeat(x, y, now)`` every ``emit.heartbeats.interval.seconds`` into y's compacted,
single-partition ``heartbeats`` topic. Flows replicate ``heartbeats`` whatever ``topics`` says,
so ``x.heartbeats`` appears on y's downstream clusters: that is how MirrorClient finds upstream
clusters and counts replication hops, and how an operator sees replication is alive.
"""
from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka.admin import AdminClient

from mirrorspark.config.model import FlowConfig
from mirrorspark.control.admin import ensure_compacted_topic, producer, send_all
from mirrorspark.formats import Heartbeat
from mirrorspark.policy import ReplicationPolicy

log = logging.getLogger(__name__)


class HeartbeatEmitter:
    """The heartbeat side of one ordered pair (MM2's MirrorHeartbeatTask)."""

    def __init__(self, *, flow: FlowConfig, policy: ReplicationPolicy, target: AdminClient,
                 target_conf: dict[str, Any], replication_factor: int) -> None:
        self.flow = flow
        self.topic = policy.heartbeats_topic()
        self.target = target
        self.replication_factor = replication_factor
        self._producer = producer({**target_conf, "acks": "all"})

    def start(self) -> None:
        if ensure_compacted_topic(self.target, self.topic, self.replication_factor):
            log.info("pair %s: created %s on %s", self.flow.name, self.topic, self.flow.target.alias)

    def beat(self) -> None:
        now = int(time.time() * 1000)
        heartbeat = Heartbeat(self.flow.source.alias, self.flow.target.alias, now)
        send_all(self._producer, self.topic, [(heartbeat.key_bytes(), heartbeat.value_bytes())],
                 f"heartbeat {self.flow.name}", timestamp=now)
