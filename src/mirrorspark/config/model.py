"""Resolved configuration objects: what a cluster and a flow mean after MM2's precedence rules."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from mirrorspark.config.settings import DriverSettings, FlowSettings, HeartbeatSettings
from mirrorspark.config.values import is_connection_key
from mirrorspark.errors import ConfigError


@dataclass(frozen=True)
class ClusterConfig:
    """A cluster alias with its ``A.*`` settings (prefix stripped) and top-level connection defaults."""

    alias: str
    settings: Mapping[str, str]
    top_level_connection: Mapping[str, str] = field(default_factory=dict)
    # Top-level keys that decide how its clients are made: plugin.path and spark.jars (where a callback
    # handler's class is found) and mirrorspark.control.clients.
    client_options: Mapping[str, str] = field(default_factory=dict)

    @property
    def bootstrap_servers(self) -> str:
        value = self.settings.get("bootstrap.servers") or self.top_level_connection.get("bootstrap.servers")
        if not value:
            raise ConfigError(f"{self.alias}.bootstrap.servers is required", f"{self.alias}.bootstrap.servers")
        return value

    def require_bootstrap_servers(self) -> str:
        """``bootstrap_servers``, read now for its check: a ConfigError naming the key if it is missing."""
        return self.bootstrap_servers

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
    # In a cycle of flows that keep topic names (active/active on the same names): the flow marks
    # the records it copies with the clusters they have been in and skips those its target has seen.
    same_names: bool = False
    # ``mirrorspark.trigger = auto``: the trigger chosen for this process and why (config/trigger_choice.py).
    auto_choice: tuple[str, str] = ("", "")

    @cached_property
    def name(self) -> str:
        return f"{self.source.alias}->{self.target.alias}"

    def where(self, key: str) -> str:
        """The key as the user wrote it: ``A->B.key`` if set for this flow, else the top-level name."""
        return f"{self.name}.{key}" if key in self.flow_settings else key

    @cached_property
    def options(self) -> FlowSettings:
        """The flow's settings resolved into typed values, once (``config/settings.py``)."""
        return FlowSettings.resolve(self.settings, self.where, self.auto_choice[0])

    @cached_property
    def heartbeats(self) -> HeartbeatSettings:
        """The pair's heartbeat settings, typed (read for disabled flows too, as MM2 beats for them)."""
        return HeartbeatSettings.resolve(self.settings, self.where)

    def resolve_options(self) -> FlowSettings:
        """``options``, resolved now for its checks (cached): a ConfigError naming the first bad flow key."""
        return self.options

    def source_consumer(self) -> dict[str, str]:
        """MM2 order: source connection, then ``S->T.consumer.*``, then ``S.consumer.*``. Exactly-once
        reads committed source records unless the file says otherwise (MM2 needs the key for that)."""
        props = self._plain_source_consumer()
        if self.exactly_once and not props.get("isolation.level", "").strip():
            props["isolation.level"] = "read_committed"
        return props

    def _plain_source_consumer(self) -> dict[str, str]:
        props = self.source.connection()
        prefix = "consumer."
        props.update({k[len(prefix):]: v for k, v in self.flow_settings.items() if k.startswith(prefix)})
        props.update(self.source.role_overrides("consumer"))
        return props

    def source_reset(self) -> tuple[str, str]:
        """The source consumer's ``auto.offset.reset`` (MM2 sets earliest) and the key as written."""
        key = "consumer.auto.offset.reset"
        where = f"{self.source.alias}.{key}" if key in self.source.settings else \
            f"{self.name}.{key}" if key in self.flow_settings else f"{self.source.alias}.{key}"
        return self.source_consumer().get("auto.offset.reset", "earliest").strip().lower(), where

    @cached_property
    def fails_on_data_loss(self) -> bool:
        """Records gone before they were read stop the flow: ``mirrorspark.data.loss = fail``, or MM2's
        ``auto.offset.reset = none`` (never move a position silently), unless they contradict."""
        reset, where = self.source_reset()
        if reset != "none":
            return self.options.fail_on_data_loss
        if "mirrorspark.data.loss" in self.settings and not self.options.fail_on_data_loss:
            loss = self.where("mirrorspark.data.loss")
            raise ConfigError(f"{where} = none (never skip records) contradicts {loss} = report (skip what retention "
                              f"removed and go on); remove one of them", where)
        return True

    @cached_property
    def idempotent(self) -> bool:
        """The target producer is idempotent (Kafka's default); MM2 files may turn it off."""
        return self.target_producer().get("enable.idempotence", "true").strip().lower() != "false"

    @property
    def idempotence_key(self) -> str:
        return (f"{self.name}.producer.override.enable.idempotence"
                if "producer.override.enable.idempotence" in self.flow_settings
                else f"{self.target.alias}.producer.enable.idempotence")

    def idempotence_warning(self) -> str | None:
        """What a non-idempotent target producer costs, said once at load."""
        if self.idempotent:
            return None
        return (f"{self.idempotence_key} = false (flow {self.name}): each partition stays in source order with one "
                "request in flight per connection (slower with a backlog), and a send Kafka retries after a timeout "
                "can leave a record twice on the target that no metric counts (MM2 has the same risk); remove it "
                "where the brokers and ACLs allow idempotent writes")

    @cached_property
    def reads_committed(self) -> bool:
        """The source consumer reads only committed transactions (``isolation.level = read_committed``)."""
        return self.source_consumer().get("isolation.level", "").strip().lower() == "read_committed"

    @cached_property
    def exactly_once(self) -> bool:
        """Transactional writes into the target: ``T.exactly.once.source.support = enabled`` (MM2's key,
        read per target cluster as MM2's workers read it)."""
        return self.target.settings.get("exactly.once.source.support", "disabled").strip().lower() == "enabled"

    @property
    def exactly_once_key(self) -> str:
        return f"{self.target.alias}.exactly.once.source.support"

    @property
    def transactional_id_prefix(self) -> str:
        """Exactly-once: every ``transactional.id`` of the flow starts with this (ACLs can use the prefix)."""
        return f"mirrorspark-{self.name}-"

    @property
    def task_transactional_id_prefix(self) -> str:
        """Exactly-once: each task's ``transactional.id`` is this and the task's index in the batch's layout
        (one producer per task, as MM2's exactly-once tasks have; ADR 0015). ``#`` is in no topic name, so
        no id of the earlier layout (one per remote partition, ``<prefix><topic>-<partition>``) starts with it."""
        return f"{self.transactional_id_prefix}#task-"

    @property
    def progress_group(self) -> str:
        """Exactly-once: the target group whose offsets hold the flow's committed progress per target
        partition (``__``: MM2's default ``groups.exclude`` keeps it out of checkpoints)."""
        return f"__mirrorspark-progress-{self.name}"

    def check_trigger(self) -> None:
        """Refuses what contradicts ``mirrorspark.trigger = realtime`` (Spark's real-time mode), naming the key."""
        if not self.options.realtime:
            return
        trigger = self.where("mirrorspark.trigger")
        if self.options.batch_max_records > 0:
            key = self.where("mirrorspark.batch.max.records")
            raise ConfigError(f"{key} = {self.options.batch_max_records} contradicts {trigger} = realtime: real-time "
                              "batches are bounded by time (mirrorspark.realtime.batch.seconds), not by records "
                              "(Spark refuses maxOffsetsPerTrigger there); remove it", key)

    def exactly_once_warning(self) -> str | None:
        """Refuses what contradicts the flow's delivery keys; returns what the user should know of it."""
        required = self.settings.get("exactly.once.support", "requested").strip().lower() == "required"
        support_key = self.where("exactly.once.support")
        isolation_key = f"{self.source.alias}.consumer.isolation.level"
        uncommitted = self._isolation_set() == "read_uncommitted"
        if required and not self.exactly_once:
            raise ConfigError(f"{support_key} = required, but {self.exactly_once_key} is not enabled: the flow would "
                              f"copy at least once; set {self.exactly_once_key} = enabled", support_key)
        if not self.exactly_once:
            return None
        if required and uncommitted:
            raise ConfigError(f"{support_key} = required contradicts {isolation_key} = read_uncommitted: records "
                              "of aborted source transactions would be copied (MM2 refuses it too); remove it",
                              isolation_key)
        if not self.idempotent:
            raise ConfigError(f"{self.idempotence_key} = false contradicts {self.exactly_once_key} = enabled: "
                              "transactions need an idempotent producer; remove it", self.idempotence_key)
        if "transactional.id" in self.target_producer():
            key = f"{self.target.alias}.producer.transactional.id"
            raise ConfigError(f"{key} contradicts {self.exactly_once_key} = enabled: each target partition gets "
                              f"its own stable id (mirrorspark-{self.name}-<topic>-<partition>), which fences older "
                              "writers; remove it", key)
        if uncommitted:
            return (f"{isolation_key} = read_uncommitted with {self.exactly_once_key} = enabled (flow {self.name}): "
                    "records of aborted or unfinished source transactions are copied too, as MM2 does; remove it to "
                    "read committed records only")
        return None

    def _isolation_set(self) -> str:
        """The source consumer's ``isolation.level`` as the file sets it ('' when it does not)."""
        return self._plain_source_consumer().get("isolation.level", "").strip().lower()

    def target_producer(self) -> dict[str, str]:
        """Connect's worker producer: target connection, ``T.producer.*``, ``S->T.producer.override.*``."""
        props = self.target.connection()
        props.update(self.target.role_overrides("producer"))
        prefix = "producer.override."
        props.update({k[len(prefix):]: v for k, v in self.flow_settings.items() if k.startswith(prefix)})
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
    needed_at_run_time: tuple[str, ...] = ()  # validate --offline: what this machine lacks (secrets, files)

    @cached_property
    def driver(self) -> DriverSettings:
        """The process's own top-level settings, typed."""
        return DriverSettings.resolve(self.top_level)

    @property
    def enabled_flows(self) -> list[FlowConfig]:
        return [flow for flow in self.flows if flow.enabled]

    def secret_values(self) -> set[str]:
        """Every secret value of the config (secret-looking keys and secrets inside values), to scrub."""
        from mirrorspark.config.redaction import secret_values

        maps = [self.top_level, *(c.settings for c in self.clusters.values()), *(f.settings for f in self.flows)]
        return secret_values(maps)
