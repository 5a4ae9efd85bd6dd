"""Resolved configuration objects: what a cluster and a flow mean after MM2's precedence rules."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from mirrorspark.config.errors import ConfigError

# MM2's client connection keys (MirrorClientConfig.CLIENT_CONFIG_DEF): these flow from the
# cluster (or top) level into every client talking to that cluster.
_CONNECTION_KEY = re.compile(r"^(bootstrap\.servers|security\.protocol|ssl\..+|sasl\..+|client\.dns\.lookup)$")



def default(key: str) -> str:
    """The declared default of ``key`` (config/keys.py is the one place defaults live)."""
    from mirrorspark.config.keys import BY_NAME

    return BY_NAME[key].default or ""


def parse_bool(value: str, where: str) -> bool:
    """MM2 BOOLEAN: true or false, case-insensitive; anything else names the key."""
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise ConfigError(f"{where} must be true or false, got {value!r}", where)
    return lowered == "true"


def is_connection_key(key: str) -> bool:
    return bool(_CONNECTION_KEY.match(key))


def split_list(value: str) -> list[str]:
    """MM2 LIST values: comma separated, trimmed, empty items dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]


@dataclass(frozen=True)
class ClusterConfig:
    """A cluster alias with its ``A.*`` settings (prefix stripped) and top-level connection defaults."""

    alias: str
    settings: Mapping[str, str]
    top_level_connection: Mapping[str, str] = field(default_factory=dict)

    @property
    def bootstrap_servers(self) -> str:
        value = self.settings.get("bootstrap.servers") or self.top_level_connection.get("bootstrap.servers")
        if not value:
            raise ConfigError(f"{self.alias}.bootstrap.servers is required", f"{self.alias}.bootstrap.servers")
        return value

    def connection(self) -> dict[str, str]:
        """Connection settings: cluster level over top level."""
        props = dict(self.top_level_connection)
        props.update({k: v for k, v in self.settings.items() if is_connection_key(k)})
        return props

    def role_overrides(self, role: str) -> dict[str, str]:
        """``A.<role>.*`` overrides (role is consumer, producer or admin)."""
        prefix = f"{role}."
        return {k[len(prefix):]: v for k, v in self.settings.items() if k.startswith(prefix)}


@dataclass(frozen=True)
class FlowConfig:
    """One ``source->target`` flow; ``settings`` are top-level keys overridden by ``S->T.*`` keys."""

    source: ClusterConfig
    target: ClusterConfig
    enabled: bool
    settings: Mapping[str, str]
    flow_settings: Mapping[str, str]

    @property
    def name(self) -> str:
        return f"{self.source.alias}->{self.target.alias}"

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.settings.get(key, default)

    def where(self, key: str) -> str:
        """The key as the user wrote it: ``A->B.key`` if set for this flow, else the top-level name."""
        return f"{self.name}.{key}" if key in self.flow_settings else key

    def flag(self, key: str) -> bool:
        """A BOOLEAN setting of this flow, falling back to its declared default."""
        return parse_bool(self.get(key, default(key)) or default(key), self.where(key))

    def interval(self, prefix: str) -> float:
        """MM2's ``<prefix>.enabled`` / ``<prefix>.interval.seconds`` pair in seconds; disabled -> infinity."""
        if not self.flag(f"{prefix}.enabled"):
            return float("inf")
        key = f"{prefix}.interval.seconds"
        raw = self.get(key, default(key)) or default(key)
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(f"{self.where(key)} must be a number, got {raw!r}", self.where(key)) from None

    @property
    def topics(self) -> list[str]:
        return split_list(self.get("topics", default("topics")) or "")

    @property
    def topics_exclude(self) -> list[str]:
        value = self.get("topics.exclude")
        if value is None:
            value = self.get("topics.blacklist", default("topics.exclude"))
        return split_list(value or "")

    @property
    def replication_factor(self) -> int:
        raw = self.get("replication.factor", default("replication.factor"))
        key = self.where("replication.factor")
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise ConfigError(f"{key} must be an integer, got {raw!r}", key) from None
        if value < 1 and value != -1:
            raise ConfigError(f"{key} must be >= 1 (or -1 for the broker default), got {value}", key)
        return value

    def _number(self, key: str, kind: type, low: float) -> int | float:
        raw = (self.get(key, default(key)) or default(key)).strip()
        where = self.where(key)
        try:
            value = kind(raw)
        except ValueError:
            raise ConfigError(f"{where} must be a number, got {raw!r}", where) from None
        if not (value >= low and value < float("inf")):
            raise ConfigError(f"{where} must be at least {low} and finite, got {raw!r}", where)
        return value

    @property
    def fail_on_data_loss(self) -> bool:
        raw = (self.get("mirrorspark.data.loss", default("mirrorspark.data.loss")) or "report").strip().lower()
        if raw not in ("report", "fail"):
            where = self.where("mirrorspark.data.loss")
            raise ConfigError(f"{where} must be report or fail, got {raw!r}", where)
        return raw == "fail"

    @property
    def batch_max_records(self) -> int:
        """0: no limit."""
        return int(self._number("mirrorspark.batch.max.records", int, 0))

    @property
    def restart_attempts(self) -> int:
        return int(self._number("mirrorspark.flow.restart.attempts", int, 0))

    @property
    def restart_backoff(self) -> float:
        return float(self._number("mirrorspark.flow.restart.backoff.seconds", float, 0.0))

    @property
    def topic_map(self) -> dict[str, str]:
        """Explicit source -> remote topic names (mirrorspark extension, seed 000's ask)."""
        from mirrorspark.config.validation import parse_topic_map

        value = self.get("topic.map")
        if not value:
            return {}
        return parse_topic_map(value, self.where("topic.map"))

    def source_consumer(self) -> dict[str, str]:
        """MM2 order: source connection, then ``S->T.consumer.*``, then ``S.consumer.*``."""
        props = self.source.connection()
        prefix = "consumer."
        props.update({k[len(prefix):]: v for k, v in self.flow_settings.items() if k.startswith(prefix)})
        props.update(self.source.role_overrides("consumer"))
        return props

    def target_producer(self) -> dict[str, str]:
        """Connect's worker producer: target connection, ``T.producer.*``, ``S->T.producer.override.*``."""
        props = self.target.connection()
        props.update(self.target.role_overrides("producer"))
        prefix = "producer.override."
        props.update({k[len(prefix):]: v for k, v in self.flow_settings.items() if k.startswith(prefix)})
        return props

    def admin(self, side: str) -> dict[str, str]:
        """Admin client settings for ``source`` or ``target``: connection then ``X.admin.*``."""
        cluster = self.source if side == "source" else self.target
        props = cluster.connection()
        props.update(cluster.role_overrides("admin"))
        return props


@dataclass(frozen=True)
class MirrorConfig:
    """A whole mm2.properties file, resolved."""

    clusters: Mapping[str, ClusterConfig]
    flows: list[FlowConfig]
    top_level: Mapping[str, str]
    spark: Mapping[str, str]
    source_path: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def enabled_flows(self) -> list[FlowConfig]:
        return [flow for flow in self.flows if flow.enabled]

    def secret_values(self) -> set[str]:
        """Every secret value of the config (secret-looking keys and secrets inside values), to scrub."""
        from mirrorspark.config.redaction import secret_values

        maps = [self.top_level, *(c.settings for c in self.clusters.values()), *(f.settings for f in self.flows)]
        return secret_values(maps)
