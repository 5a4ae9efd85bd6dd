"""The audit command's input, checked before any cluster or Spark is reached, and how each side is read.

Every refusal is a ``ConfigError`` naming what to change (``--flow``, ``--topics``, the flow's
``emit.offset-syncs.enabled`` or ``mirrorspark.state.location``), so the CLI exits 2 with one line
instead of a Spark stack. The reading settings are derived from the flow's own, so the audit sees
each cluster as the flow does.
"""
from __future__ import annotations

from dataclasses import replace

import regex
from confluent_kafka import IsolationLevel

from mirrorspark.audit.plan import PartitionRuns, select_partitions
from mirrorspark.config.java_regex import JavaRegexError, compile_java
from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.errors import ConfigError
from mirrorspark.offsets.ranges import OffsetRanges
from mirrorspark.policy.topic_selection import TopicSelection


def find_flow(config: MirrorConfig, name: str) -> FlowConfig:
    """The flow ``A->B`` of ``config`` (enabled or not: its state may outlive the setting)."""
    for flow in config.flows:
        if flow.name == name.strip():
            return flow
    known = ", ".join(f.name for f in config.enabled_flows) or "none enabled"
    raise ConfigError(f"--flow {name!r} is not a flow of this configuration (flows are source->target between "
                      f"clusters {', '.join(config.clusters)}; enabled: {known})", "--flow")


def topic_pattern(value: str | None) -> regex.Pattern[str] | None:
    """``--topics`` compiled as a Java regex, like the configuration's (None: every replicated topic)."""
    if value is None:
        return None
    try:
        return compile_java(value)
    except JavaRegexError as exc:
        raise ConfigError(f"--topics {value!r} is not a valid regular expression: {exc}", "--topics") from None


class NotRecordedYet(ConfigError):
    """The topics were copied but no batch with their copies is recorded yet (a real-time batch in flight)."""


def check_auditable(flow: FlowConfig) -> None:
    """Without offset syncs there is no range log, so nothing says which target record is which copy."""
    if not flow.options.emit_offset_syncs:
        key = flow.where("emit.offset-syncs.enabled")
        raise ConfigError(f"{key} = false: flow {flow.name} keeps no offset ranges, so there is nothing exact to "
                          "audit against", key)


def plans_for(ranges: OffsetRanges, *, flow: FlowConfig, selection: TopicSelection, pattern: regex.Pattern[str] | None,
              topics: str | None, folder_uri: str, where: str) -> list[PartitionRuns]:
    """The partitions to audit; an empty range log (most often the wrong state location, ``where``)
    or a ``--topics`` that matches nothing is refused, naming the topics there are."""
    if not ranges.partitions():
        raise ConfigError(f"no offset ranges for flow {flow.name} in {folder_uri}/offset-ranges: nothing has been "
                          f"replicated with this state location ({where}); pass the --state-dir `mirrorspark run` "
                          "used, or check mirrorspark.state.location", "mirrorspark.state.location")
    plans = select_partitions(ranges, selection, pattern)
    if not plans:
        names = sorted({t for t, _ in ranges.partitions()})
        unrecorded = [t for t in names if pattern is None or pattern.fullmatch(t) or pattern.fullmatch(
            selection.remote_name(t))]
        if unrecorded:  # known to the range log, no runs in it yet
            shown = f"{', '.join(unrecorded[:10])}{', ...' if len(unrecorded) > 10 else ''}"
            raise NotRecordedYet(f"flow {flow.name}: the copies of {len(unrecorded)} topic(s) ({shown}) are not in the "
                              "range log yet: a real-time batch is recorded when it ends, and one a stop cut short "
                              "at the flow's next start; audit again after that", "--topics")
        raise ConfigError(f"--topics {topics!r} matches none of the {len(names)} replicated topic(s) of flow "
                          f"{flow.name} ({', '.join(names[:10])}{', ...' if len(names) > 10 else ''})", "--topics")
    return plans


def target_reader(flow: FlowConfig) -> FlowConfig:
    """The flow with the target in the source's role: the remote topics are read with the target
    cluster's consumer-side settings (connection, then ``T.consumer.*``) exactly as the source is."""
    return replace(flow, source=flow.target, flow_settings={})


def source_isolation(flow: FlowConfig) -> IsolationLevel:
    """The source is read as the flow reads it."""
    return IsolationLevel.READ_COMMITTED if flow.reads_committed else IsolationLevel.READ_UNCOMMITTED


def target_isolation(flow: FlowConfig) -> IsolationLevel:
    """Exactly-once: what a read_committed consumer of the target sees (aborted copies are not copies)."""
    return IsolationLevel.READ_COMMITTED if flow.exactly_once else IsolationLevel.READ_UNCOMMITTED


def batch_options(streaming: dict[str, str]) -> dict[str, str]:
    """Of the flow's streaming source options, what a batch read over explicit offsets keeps: the
    Kafka client's settings and headers (subscription, start and limits per trigger are the streaming
    query's own). An audit reports what is missing, whatever mirrorspark.data.loss says."""
    kept = {k: v for k, v in streaming.items() if k.startswith("kafka.") or k == "includeHeaders"}
    return {**kept, "failOnDataLoss": "false"}
