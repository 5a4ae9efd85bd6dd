"""Topic configurations of remote topics, with MM2's rules (DefaultConfigPropertyFilter,
MirrorSourceConnector.targetConfig): read-only, sensitive and static-broker entries and
``config.properties.exclude`` matches are never copied; a source entry left at its default is
DELETEd on the target (reverting to the target's default) unless ``use.defaults.from=source``."""
from __future__ import annotations

import logging

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from mirrorspark.config.model import FlowConfig
from mirrorspark.config.values import compile_patterns
from mirrorspark.plugins.loading import java_filter

log = logging.getLogger(__name__)

KAFKA_DEFAULT_MESSAGE_BYTES = 1048588  # the broker's message.max.bytes default (1 MiB + batch overhead)


class TopicConfigs:
    """Reads source topic configs and applies them to remote topics for one flow."""

    def __init__(self, *, flow: FlowConfig, source: AdminClient, target: AdminClient) -> None:
        self.flow = flow
        self.source = source
        self.target = target
        options = flow.options
        self._exclude = compile_patterns(options.config_exclude, options.config_exclude_key)
        self._custom = java_filter(flow.settings, "config.property.filter.class",
                                   flow.where("config.property.filter.class"))  # decides alone, as in MM2
        self.defaults_from_source = options.defaults_from_source
        self._message_bytes: dict[str, int] = {}  # source topic -> its max.message.bytes, as last described

    def replicable(self, entry: ConfigEntry) -> bool:
        return not (entry.is_read_only or entry.is_sensitive
                    or entry.source == ConfigSource.STATIC_BROKER_CONFIG.value
                    or (self._custom is not None and not self._custom(entry.name))
                    or (self._custom is None and self._exclude is not None and self._exclude.fullmatch(entry.name)))

    def describe(self, topics: list[str]) -> dict[str, dict[str, ConfigEntry]]:
        if not topics:
            return {}
        futures = self.source.describe_configs([ConfigResource("TOPIC", t) for t in topics])
        out: dict[str, dict[str, ConfigEntry]] = {}
        for resource, future in futures.items():
            try:
                out[resource.name] = future.result(timeout=60)
            except KafkaException as exc:
                log.warning("flow %s: cannot describe configs of %s: %s", self.flow.name, resource.name, exc)
                self._message_bytes.setdefault(resource.name, KAFKA_DEFAULT_MESSAGE_BYTES)  # the next sync retries
                continue
            entry = out[resource.name].get("max.message.bytes")
            if entry is not None and entry.value is not None and str(entry.value).isdigit():
                self._message_bytes[resource.name] = int(entry.value)
        return out

    def largest_message(self, topics: list[str]) -> int:
        """The largest max.message.bytes among ``topics`` on the source (topics not described yet
        are described now): a record that large must go through the target producer."""
        unknown = [t for t in topics if t not in self._message_bytes]
        if unknown:
            self.describe(unknown)
        return max((self._message_bytes.get(t, KAFKA_DEFAULT_MESSAGE_BYTES) for t in topics),
                   default=KAFKA_DEFAULT_MESSAGE_BYTES)

    def for_creation(self, entries: dict[str, ConfigEntry]) -> dict[str, str]:
        """Configs a new remote topic is created with: non-default ones (defaults too with
        use.defaults.from=source)."""
        return {name: e.value for name, e in entries.items()
                if self.replicable(e) and e.value is not None
                and (not e.is_default or self.defaults_from_source)}

    def sync(self, remote_names: dict[str, str]) -> int:
        """One incremental alter per remote topic; returns how many topics were altered."""
        described = self.describe(sorted(remote_names))
        resources = []
        for topic, entries in described.items():
            ops = []
            for name, entry in entries.items():
                if not self.replicable(entry):
                    continue
                if entry.is_default and not self.defaults_from_source:
                    ops.append(ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE))
                elif entry.value is not None:
                    ops.append(ConfigEntry(name, entry.value, incremental_operation=AlterConfigOpType.SET))
            if ops:
                resources.append(ConfigResource("TOPIC", remote_names[topic], incremental_configs=ops))
        if not resources:
            return 0
        altered = 0
        for resource, future in self.target.incremental_alter_configs(resources).items():
            try:
                future.result(timeout=60)
                altered += 1
            except KafkaException as exc:
                log.warning("flow %s: cannot sync configs of %s: %s", self.flow.name, resource.name, exc)
        return altered
