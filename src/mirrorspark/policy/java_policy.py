"""A ReplicationPolicy written in Java for MM2, asked through the plug-in JVM.

Every method the control plane uses maps to the Java method MM2 calls (the interface's defaults
included, so a policy that overrides only naming keeps MM2's internal-topic rules). A policy's
answer for a name never changes, so each is cached: the topic refresh asks for every topic again.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from mirrorspark.errors import OperationalError
from mirrorspark.plugins.java_host import java_message
from mirrorspark.policy.base import ReplicationPolicy

_CACHE = 65536


class JavaPolicyFailed(OperationalError):
    """The user's Java policy threw: the message names the key, the class, the method and the exception."""


class JavaReplicationPolicy(ReplicationPolicy):
    def __init__(self, java: Any, class_name: str, key: str = "replication.policy.class") -> None:
        self._java = java
        self.class_name = class_name
        self.key = key
        self._ask = lru_cache(maxsize=_CACHE)(self._call)

    def _call(self, method: str, *args: str) -> Any:
        from py4j.protocol import Py4JError

        from mirrorspark.plugins.java_host import own_errors

        own_errors()  # pyspark's exception hook off this JVM's answers

        try:
            return getattr(self._java, method)(*args)
        except Py4JError as exc:
            raise JavaPolicyFailed(f"{self.key}={self.class_name!r}: {method}{args} failed: "
                                   f"{java_message(exc)}") from None

    @property
    def separator(self) -> str:
        """MM2's built-in policies have one; a custom policy without it reads as the default's."""
        try:
            return str(self._ask("separator"))
        except JavaPolicyFailed:
            return "."

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        return str(self._ask("formatRemoteTopic", source_cluster_alias, topic))

    def topic_source(self, topic: str) -> str | None:
        found = self._ask("topicSource", topic)
        return None if found is None else str(found)

    def upstream_topic(self, topic: str) -> str | None:
        found = self._ask("upstreamTopic", topic)
        return None if found is None else str(found)

    def original_topic(self, topic: str) -> str:
        return str(self._ask("originalTopic", topic))

    def heartbeats_topic(self) -> str:
        return str(self._ask("heartbeatsTopic"))

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        return str(self._ask("offsetSyncsTopic", cluster_alias))

    def checkpoints_topic(self, cluster_alias: str) -> str:
        return str(self._ask("checkpointsTopic", cluster_alias))

    def is_heartbeats_topic(self, topic: str) -> bool:
        return bool(self._ask("isHeartbeatsTopic", topic))

    def is_checkpoints_topic(self, topic: str) -> bool:
        return bool(self._ask("isCheckpointsTopic", topic))

    def is_mm2_internal_topic(self, topic: str) -> bool:
        return bool(self._ask("isMM2InternalTopic", topic))

    def is_internal_topic(self, topic: str) -> bool:
        return bool(self._ask("isInternalTopic", topic))
