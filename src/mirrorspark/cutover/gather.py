"""The facts ``promote``'s preflight judges, read from the clusters once.

A fact that cannot be read becomes a failed check saying why (an audit that could not run, an
authorizer that did not answer), never a traceback: the operator sees every check in one run.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException

from mirrorspark.audit.settings import NotRecordedYet, find_flow
from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.control.acl_sync import has_authorizer
from mirrorspark.control.admin import admin_client
from mirrorspark.control.client_settings import admin_settings
from mirrorspark.control.groups import GroupDescription, GroupRequestRefused, GroupsNotAnswering, RdkafkaGroups
from mirrorspark.cutover.preflight import Facts
from mirrorspark.errors import ConfigError, OperationalError
from mirrorspark.policy import policy_for_flow
from mirrorspark.policy.topic_selection import TopicSelection

# Real-time batches the preflight waits through for a flow's copies to be recorded (the one in flight,
# and one more when the copies landed at its end).
RECORD_WAITS = 2


def promoted_flow(config: MirrorConfig, name: str) -> tuple[FlowConfig, FlowConfig]:
    """The flow ``A->B`` to promote (enabled) and its reverse ``B->A``; ConfigError naming the key otherwise."""
    flow = find_flow(config, name)
    if not flow.enabled:
        raise ConfigError(f"{flow.name} is not enabled in this configuration: there is nothing to promote",
                          f"{flow.name}.enabled")
    return flow, find_flow(config, f"{flow.target.alias}->{flow.source.alias}")


def gather(config: MirrorConfig, *, flow_name: str, state_dir: Path, view: Mapping[str, Any] | None,
           view_problem: str, max_lag: int, quiet_seconds: float, topics: str | None = None) -> Facts:
    """Every fact of the preflight of promoting ``flow_name``; ``view`` is the flow as the running
    instance's REST API shows it (None: ``view_problem`` says why it could not be read)."""
    from mirrorspark.audit.run import run_audit

    flow, reverse = promoted_flow(config, flow_name)
    audit, audit_problem = None, ""
    # A real-time flow records its copies when its batch ends: the preflight waits for that end.
    waited = time.monotonic() + (RECORD_WAITS * flow.options.realtime_batch if flow.options.realtime else 0.0)
    while True:
        try:
            audit = run_audit(config, flow.name, topics, state_dir)
        except NotRecordedYet:
            if time.monotonic() >= waited:
                raise
            time.sleep(1.0)
            continue
        except OperationalError as exc:
            audit_problem = str(exc)
        break
    policy = policy_for_flow(flow.settings, flow.source.alias)
    audited = {p.source_topic for p in (audit.partitions if audit is not None else ())}
    copied = sorted(t for t in audited if not policy.is_heartbeats_topic(t) and not policy.is_internal_topic(t))
    back = TopicSelection(reverse, policy_for_flow(reverse.settings, reverse.source.alias))
    checked = [g.group for g in audit.groups] if audit is not None else []
    failback, failback_problem = _failing_back(flow, back, topics, set(checked))
    on_target = _on_target(flow, checked + failback)
    authorizer, authorizer_problem = _authorizer(flow)
    return Facts(flow=flow.name, source=flow.source.alias, target=flow.target.alias, reverse=reverse.name,
                 max_lag=max_lag, quiet_seconds=quiet_seconds, checkpoint_interval=flow.options.checkpoints_interval,
                 view=view, view_problem=view_problem, audit=audit, audit_problem=audit_problem,
                 on_target=on_target, authorizer=authorizer, authorizer_problem=authorizer_problem,
                 topics=copied, not_copied_back=[t for t in copied if not back.should_replicate(t)],
                 failback_groups=failback, failback_problem=failback_problem)


def _failing_back(flow: FlowConfig, back: TopicSelection, topics: str | None,
                  checked: set[str]) -> tuple[list[str], str]:
    """Groups that read, on the flow's source, what the reverse flow copied there from the flow's
    target (after an earlier cutover the other way): the flow's checkpoints topic on its target holds
    their failback translation, onto the target's own topics that the reverse flow copies. They move
    with the cutover like the flow's own groups."""
    import re

    from mirrorspark.offsets.checkpoint_store import CheckpointStore

    wanted = re.compile(topics) if topics is not None else None
    policy = policy_for_flow(flow.settings, flow.source.alias)
    store = CheckpointStore()
    name = policy.checkpoints_topic(flow.source.alias)
    try:
        store.load(admin_settings(flow.target), name)
    except (OperationalError, KafkaException) as exc:
        return [], f"{name} on {flow.target.alias} could not be read: {exc}"
    found = {group for (group, topic, _) in store.latest
             if group not in checked and back.should_replicate(topic)
             and (wanted is None or wanted.fullmatch(topic) or wanted.fullmatch(back.remote_name(topic)))}
    return sorted(found), ""


def _on_target(flow: FlowConfig, groups: list[str]) -> dict[str, GroupDescription | GroupRequestRefused]:
    """Each group's state on the target, where the cutover will commit its offsets."""
    if not groups:
        return {}
    target = RdkafkaGroups(admin=admin_client(admin_settings(flow.target)), cluster=f"cluster {flow.target.alias}")
    try:
        return target.describe_all(groups)
    except GroupsNotAnswering as exc:
        return {group: GroupRequestRefused(str(exc)) for group in groups}


def _authorizer(flow: FlowConfig) -> tuple[bool | None, str]:
    try:
        return has_authorizer(admin_client(admin_settings(flow.source)), cluster=f"cluster {flow.source.alias}"), ""
    except (OperationalError, KafkaException) as exc:
        return None, str(exc)
