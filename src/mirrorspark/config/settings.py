"""A flow's settings resolved once into typed values, from the key declarations of ``keys.py``.

MM2 gives each connector a ``ConfigDef`` with typed accessors; mirrorspark declares every key once
(``keys.py``: type, default, range) and resolves a flow's strings here, one accessor per type, so
components receive ``bool``/``int``/``float``/pattern values and never parse a setting or repeat a
default. Validation (``validation.py``) has already refused bad values by the time a flow is resolved;
the accessors still name the key if something slips through (a programmatic ``parse_config``).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from mirrorspark.config.keys import BY_NAME
from mirrorspark.config.validation import check_value
from mirrorspark.config.values import parse_topic_map, split_list

_DISABLED = math.inf  # the interval of a task switched off: it never runs


class SettingsReader:
    """Raw ``key -> string`` settings read through their declarations. Values are checked by the same
    ``validation.check_value`` that checks the file, so a message is the same wherever it is raised;
    ``where`` names a key as the user wrote it (``FlowConfig.where`` for a flow)."""

    def __init__(self, values: Mapping[str, str], where: Callable[[str], str] = str) -> None:
        self._values = values
        self.where = where

    def raw(self, key: str) -> str:
        """The value, or the declared default (the one place defaults live)."""
        value = self._values.get(key)
        return (BY_NAME[key].default or "") if value is None else value

    def text(self, key: str) -> str:
        """A STRING or CLASS value, trimmed; empty means the declared default, as MM2's optional strings."""
        return self.raw(key).strip() or (BY_NAME[key].default or "")

    def _checked(self, key: str) -> str:
        text = self.raw(key).strip() or (BY_NAME[key].default or "")
        check_value(BY_NAME[key], text, self.where(key))
        return text

    def flag(self, key: str) -> bool:
        return self._checked(key).lower() == "true"

    def integer(self, key: str) -> int:
        return int(self._checked(key))

    def number(self, key: str) -> float:
        return float(self._checked(key))

    def choice(self, key: str) -> str:
        """One of the declared choices, in its declared spelling (MM2 compares case-insensitively)."""
        text = self._checked(key).lower()
        return next(choice for choice in BY_NAME[key].choices if choice.lower() == text)

    def patterns(self, key: str) -> tuple[tuple[str, ...], str]:
        """A LIST of regexes and the key it came from: ``key``, else its deprecated alias, else the default.
        An empty value is an empty list (exclude nothing), never "use the default"."""
        for name in (key, *(k.name for k in BY_NAME.values() if k.deprecated_by == key)):
            if name in self._values:
                return tuple(split_list(self._values[name])), self.where(name)
        return tuple(split_list(BY_NAME[key].default or "")), self.where(key)

    def interval(self, prefix: str) -> float:
        """MM2's ``<prefix>.enabled`` / ``<prefix>.interval.seconds`` pair in seconds; switched off: infinity."""
        if not self.flag(f"{prefix}.enabled"):
            return _DISABLED
        return self.number(f"{prefix}.interval.seconds")


@dataclass(frozen=True)
class FlowSettings:
    """Everything a flow's components act on, typed. Built by ``FlowSettings.resolve`` from the flow's
    resolved strings (top level overridden by ``A->B.*``); ``where`` names a key as the user wrote it."""

    reader: SettingsReader = field(repr=False, compare=False)
    replication_factor: int
    topic_map: Mapping[str, str]
    topics: tuple[str, ...]
    topics_key: str
    topics_exclude: tuple[str, ...]
    topics_exclude_key: str
    groups: tuple[str, ...]
    groups_key: str
    groups_exclude: tuple[str, ...]
    groups_exclude_key: str
    config_exclude: tuple[str, ...]
    config_exclude_key: str
    policy_class: str
    separator: str
    heartbeats_replicated: bool
    refresh_topics: bool
    refresh_topics_interval: float
    topic_configs_interval: float
    defaults_from_source: bool
    topic_acls_interval: float
    emit_offset_syncs: bool
    offset_syncs_on_target: bool
    offset_syncs_replication_factor: int
    emit_checkpoints: bool
    checkpoints_interval: float
    checkpoints_replication_factor: int
    sync_group_offsets: bool
    group_offsets_interval: float
    fail_on_data_loss: bool
    batch_max_records: int
    heartbeats_hold: int  # ms
    source_stall_timeout: int  # ms
    trigger: str  # mirrorspark.trigger as written: microbatch, realtime or auto
    realtime: bool  # the flow runs in real-time mode (realtime, or auto's choice)
    realtime_batch: float  # seconds
    realtime_tasks: int  # 0: a share of the free slots
    realtime_transaction_ms: int  # exactly-once in real-time mode: a task's transaction at most this old
    restart_attempts: int
    restart_backoff: float
    lease_enabled: bool
    lease_timeout: float  # seconds
    lease_group: str | None
    schemas: bool  # mirrorspark.schemas.sync.enabled
    schema_subjects: tuple[str, ...]
    schema_topics: tuple[str, ...]
    schemas_interval: float  # seconds
    schemas_fail_unresolved: bool
    schemas_keep_ids: bool  # mirrorspark.schemas.ids = keep

    def where(self, key: str) -> str:
        return self.reader.where(key)

    @classmethod
    def resolve(cls, settings: Mapping[str, str], where: Callable[[str], str], auto_choice: str = "") -> FlowSettings:
        """Read every flow key once. Errors name the key; the replication factor and ``topic.map`` come
        first, as the loader has always checked them in that order. ``auto_choice``: the trigger
        ``mirrorspark.trigger = auto`` chose for the flow (``config/trigger_choice.py``)."""
        read = SettingsReader(settings, where)
        topics_exclude, topics_exclude_key = read.patterns("topics.exclude")
        groups_exclude, groups_exclude_key = read.patterns("groups.exclude")
        config_exclude, config_exclude_key = read.patterns("config.properties.exclude")
        emit_offset_syncs = read.flag("emit.offset-syncs.enabled")
        return cls(
            reader=read,
            replication_factor=read.integer("replication.factor"),
            topic_map=parse_topic_map(read.raw("topic.map"), read.where("topic.map")),
            topics=read.patterns("topics")[0], topics_key=read.where("topics"),
            topics_exclude=topics_exclude, topics_exclude_key=topics_exclude_key,
            groups=read.patterns("groups")[0], groups_key=read.where("groups"),
            groups_exclude=groups_exclude, groups_exclude_key=groups_exclude_key,
            config_exclude=config_exclude, config_exclude_key=config_exclude_key,
            policy_class=read.text("replication.policy.class"),
            separator=read.raw("replication.policy.separator").strip(),  # empty is kept, as MM2 keeps it
            heartbeats_replicated=read.flag("heartbeats.replication.enabled"),
            refresh_topics=read.flag("refresh.topics.enabled"),
            refresh_topics_interval=read.interval("refresh.topics"),
            topic_configs_interval=read.interval("sync.topic.configs"),
            defaults_from_source=read.choice("use.defaults.from") == "source",
            topic_acls_interval=read.interval("sync.topic.acls"),
            emit_offset_syncs=emit_offset_syncs,
            offset_syncs_on_target=read.choice("offset-syncs.topic.location") == "target",
            offset_syncs_replication_factor=read.integer("offset-syncs.topic.replication.factor"),
            emit_checkpoints=emit_offset_syncs and read.flag("emit.checkpoints.enabled"),
            checkpoints_interval=read.interval("emit.checkpoints"),
            checkpoints_replication_factor=read.integer("checkpoints.topic.replication.factor"),
            sync_group_offsets=read.flag("sync.group.offsets.enabled"),
            group_offsets_interval=read.interval("sync.group.offsets"),
            fail_on_data_loss=read.choice("mirrorspark.data.loss") == "fail",
            batch_max_records=read.integer("mirrorspark.batch.max.records"),
            heartbeats_hold=read.integer("mirrorspark.heartbeats.hold.ms"),
            source_stall_timeout=read.integer("mirrorspark.source.stall.timeout.ms"),
            trigger=read.choice("mirrorspark.trigger"),
            realtime=read.choice("mirrorspark.trigger") == "realtime" or auto_choice == "realtime",
            realtime_batch=read.number("mirrorspark.realtime.batch.seconds"),
            realtime_tasks=read.integer("mirrorspark.realtime.tasks"),
            realtime_transaction_ms=read.integer("mirrorspark.realtime.transaction.ms"),
            restart_attempts=read.integer("mirrorspark.flow.restart.attempts"),
            restart_backoff=read.number("mirrorspark.flow.restart.backoff.seconds"),
            lease_enabled=read.flag("mirrorspark.flow.lease.enabled"),
            lease_timeout=read.integer("mirrorspark.flow.lease.timeout.ms") / 1000.0,
            lease_group=read.text("mirrorspark.flow.lease.group") or None,
            schemas=read.flag("mirrorspark.schemas.sync.enabled"),
            schema_subjects=read.patterns("mirrorspark.schemas.subjects")[0],
            schema_topics=read.patterns("mirrorspark.schemas.topics")[0],
            schemas_interval=read.number("mirrorspark.schemas.sync.interval.seconds"),
            schemas_fail_unresolved=read.choice("mirrorspark.schemas.unresolved") == "fail",
            schemas_keep_ids=read.choice("mirrorspark.schemas.ids") == "keep",
        )


@dataclass(frozen=True)
class HeartbeatSettings:
    """The heartbeat keys of an ordered pair. MM2 beats for every pair whose flow or heartbeats are
    enabled, so these are read for disabled flows too, and only these: the rest of a disabled flow's
    settings is never resolved (a flow nobody runs cannot refuse the file)."""

    emit: bool
    interval: float
    replication_factor: int

    @classmethod
    def resolve(cls, settings: Mapping[str, str], where: Callable[[str], str]) -> HeartbeatSettings:
        read = SettingsReader(settings, where)
        return cls(emit=read.flag("emit.heartbeats.enabled"), interval=read.interval("emit.heartbeats"),
                   replication_factor=read.integer("heartbeats.topic.replication.factor"))


@dataclass(frozen=True)
class DriverSettings:
    """Top-level settings of the process (``Scope.DRIVER``), typed."""

    state_location: str | None
    lag_interval: float
    rest_enabled: bool
    shutdown_timeout: float  # seconds

    @classmethod
    def resolve(cls, top_level: Mapping[str, str]) -> DriverSettings:
        read = SettingsReader(top_level)
        return cls(state_location=top_level.get("mirrorspark.state.location"),
                   lag_interval=read.number("mirrorspark.metrics.lag.interval.seconds"),
                   rest_enabled=read.flag("mirrorspark.rest.enabled"),
                   shutdown_timeout=read.integer("mirrorspark.shutdown.timeout.ms") / 1000.0)


