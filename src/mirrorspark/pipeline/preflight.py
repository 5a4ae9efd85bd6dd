"""Everything ``run`` refuses from the configuration alone, checked before it touches any cluster.

``mirrorspark validate`` (with or without ``--offline``) and ``Replicator.prepare`` both call
``preflight``, so a file ``validate`` accepts is never refused by ``run`` for a reason visible in the
file. What needs a cluster (reachability, broker counts, topics) is checked later by ``run`` only.
The one deliberate gap: a custom ``replication.policy.class`` is imported only by ``run`` (an import
runs the module's code), so ``validate`` checks its form and that its package exists.
"""
from __future__ import annotations

from mirrorspark.config.errors import ConfigError
from mirrorspark.config.model import ClusterConfig, FlowConfig, MirrorConfig, default, parse_bool
from mirrorspark.control.client_settings import librdkafka_admin
from mirrorspark.control.heartbeats import emits_heartbeats
from mirrorspark.pipeline.executors import files_to_ship, is_local
from mirrorspark.pipeline.flow_query import sink_options, source_options
from mirrorspark.pipeline.spark_session import SPARK_DEFAULTS
from mirrorspark.policy.loading import POLICY_KEY, check_policy_class

# MM2's <prefix>.enabled / <prefix>.interval.seconds pairs the runner schedules.
TASKS = ("refresh.topics", "sync.topic.configs", "sync.topic.acls", "emit.checkpoints", "sync.group.offsets",
         "emit.heartbeats", "refresh.groups")
REST_LISTENER = "mirrorspark.rest.listener"


def heartbeat_flows(config: MirrorConfig) -> list[FlowConfig]:
    """MM2's herder pairs that beat: the pair's flow or its heartbeats enabled, both clusters located."""
    return [flow for flow in config.flows
            if emits_heartbeats(flow) and flow.flag("emit.heartbeats.enabled")
            and flow.source.settings.get("bootstrap.servers") and flow.target.settings.get("bootstrap.servers")]


def clusters_used(config: MirrorConfig) -> list[ClusterConfig]:
    """Every cluster ``run`` opens an admin client to, in the order it does."""
    seen: dict[str, ClusterConfig] = {}
    for flow in config.enabled_flows:
        seen.setdefault(flow.source.alias, flow.source)
        seen.setdefault(flow.target.alias, flow.target)
    for flow in heartbeat_flows(config):
        seen.setdefault(flow.target.alias, flow.target)
    return list(seen.values())


def admin_settings(cluster: ClusterConfig) -> dict[str, str]:
    """librdkafka settings of ``cluster``'s admin client (connection, then ``A.admin.*``)."""
    return librdkafka_admin({**cluster.connection(), **cluster.role_overrides("admin")}, f"{cluster.alias}.")


def check_flow(flow: FlowConfig) -> None:
    """One enabled flow's settings, read the way the runner and the Spark query read them."""
    check_policy_class(flow.settings, flow.where(POLICY_KEY))
    for task in TASKS:
        flow.interval(task)
    flow.replication_factor
    flow.topic_map
    flow.fail_on_data_loss
    flow.batch_max_records
    flow.restart_attempts
    flow.restart_backoff
    source_options(flow, "")
    sink_options(flow, report_offsets=flow.flag("emit.offset-syncs.enabled"))


def preflight(config: MirrorConfig) -> None:
    """Refuse, naming the key, whatever ``run`` would refuse before moving data, without a cluster."""
    flows = config.enabled_flows
    if not flows:
        raise ConfigError("No source->target replication flows: enable one with e.g. 'A->B.enabled = true'"
                          " (and check --clusters)", "enabled")
    top = config.top_level
    listener = top.get(REST_LISTENER)
    if listener is not None or parse_bool(top.get("mirrorspark.rest.enabled", default("mirrorspark.rest.enabled")),
                                          "mirrorspark.rest.enabled"):
        from mirrorspark.rest.server import RestSettings

        RestSettings.from_config(top)  # listener, auth and token together, as run resolves them
    from mirrorspark.paths import default_state_dir
    from mirrorspark.state.location import KEY as STATE_KEY, StateLocation

    StateLocation.parse(top.get(STATE_KEY), default_state_dir())
    for flow in flows:
        check_flow(flow)
    for flow in heartbeat_flows(config):
        check_policy_class(flow.settings, flow.where(POLICY_KEY))
    for cluster in clusters_used(config):
        admin_settings(cluster)
    if not is_local(config.spark.get("spark.master", SPARK_DEFAULTS["spark.master"])):
        files_to_ship(flows)
