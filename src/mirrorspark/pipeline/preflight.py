"""Everything ``run`` refuses from the configuration alone, checked before it touches any cluster.

``mirrorspark validate`` (with or without ``--offline``) and ``Replicator.prepare`` both call
``preflight``, so a file ``validate`` accepts is never refused by ``run`` for a reason visible in the
file. What needs a cluster (reachability, broker counts, topics) is checked later by ``run`` only.
The one deliberate gap: a custom ``replication.policy.class`` is imported only by ``run`` (an import
runs the module's code), so ``validate`` checks its form and that its package exists.
"""
from __future__ import annotations

from mirrorspark.config.model import ClusterConfig, FlowConfig, MirrorConfig
from mirrorspark.control.client_settings import admin_settings
from mirrorspark.errors import ConfigError, NeededAtRunTime
from mirrorspark.pipeline.executors import files_to_ship, is_local
from mirrorspark.pipeline.query_options import sink_options, source_options
from mirrorspark.pipeline.spark_session import SPARK_DEFAULTS
from mirrorspark.pipeline.transforms import check_transforms
from mirrorspark.plugins.loading import check_filters
from mirrorspark.policy.loading import POLICY_KEY, check_policy_class

REST_LISTENER = "mirrorspark.rest.listener"


def heartbeat_flows(config: MirrorConfig) -> list[FlowConfig]:
    """MM2's herder pairs that beat: ``emit.heartbeats.enabled`` for the pair (true by default, for
    disabled flows too), both clusters located."""
    return [flow for flow in config.flows if flow.heartbeats.emit
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


def check_flow(flow: FlowConfig) -> None:
    """One enabled flow's settings, read the way the runner and the Spark query read them."""
    check_policy_class(flow.settings, flow.where(POLICY_KEY))
    check_filters(flow.settings, flow.where)
    check_transforms(flow)
    flow.resolve_options()  # every flow key, typed
    source_options(flow, "")
    sink_options(flow, report_offsets=flow.options.emit_offset_syncs)


def preflight(config: MirrorConfig, pending: list[str] | None = None) -> None:
    """Refuse, naming the key, whatever ``run`` would refuse before moving data, without a cluster.
    With ``pending`` (``validate --offline``), a store this machine does not have, or one whose
    password is a reference it cannot resolve, is listed there instead of refused."""
    flows = config.enabled_flows
    if not flows and not heartbeat_flows(config):
        raise ConfigError("No source->target replication flows and no heartbeats: enable one with e.g. "
                          "'A->B.enabled = true' (and check --clusters)", "enabled")
    top = config.top_level
    listener = top.get(REST_LISTENER)
    if listener is not None or config.driver.rest_enabled:
        from mirrorspark.rest.server import RestSettings

        RestSettings.from_config(top)  # listener, auth and token together, as run resolves them
    from mirrorspark.paths import default_state_dir
    from mirrorspark.state.location import StateLocation

    StateLocation.parse(config.driver.state_location, default_state_dir())
    for flow in flows:
        check_flow(flow)
    for flow in heartbeat_flows(config):
        check_policy_class(flow.settings, flow.where(POLICY_KEY))
    for cluster in clusters_used(config):
        try:
            admin_settings(cluster)
        except NeededAtRunTime as exc:
            if pending is None:
                raise
            pending.append(str(exc))
        except ConfigError as exc:
            if pending is None or not any("${" in value for value in cluster.settings.values()):
                raise
            if exc.key and any(item.startswith(exc.key) for item in pending):
                continue  # its unresolved value is listed already
            pending.append(f"{exc} (a value of cluster {cluster.alias} is a reference resolved at run time)")
    if not is_local(config.spark.get("spark.master", SPARK_DEFAULTS["spark.master"])):
        try:
            files_to_ship(flows)
        except NeededAtRunTime as exc:  # a store the machine that runs it has (validate --offline in CI)
            if pending is None:
                raise
            pending.append(str(exc))
