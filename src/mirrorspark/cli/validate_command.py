"""``mirrorspark validate``: resolved flows and settings, then (clusters reachable) a dry-run plan."""
from __future__ import annotations

from collections.abc import Callable

from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.config.redaction import Redactor, install


def describe(config: MirrorConfig, raw_echo: Callable[[str], None], probe: bool, show: bool = False,
             pending: list[str] | None = None) -> None:
    # Every printed line goes through one redactor that knows the config's secret values, so a
    # password repeated in another value (e.g. spark.driver.extraJavaOptions) is hidden too.
    redactor = install(Redactor(config.secret_values()))

    def echo(line: str) -> None:
        raw_echo(redactor.text(line))

    from mirrorspark.control.remote_topics import RemoteNames
    from mirrorspark.policy import policy_for_flow
    from mirrorspark.policy.loading import POLICY_KEY, check_policy_class, policy_label
    from mirrorspark.policy.topic_selection import TopicSelection

    echo(f"config: {config.source_path}")
    for warning in config.warnings:
        echo(f"warning: {warning}")
    echo("clusters:")
    for alias, cluster in config.clusters.items():
        settings = ", ".join(f"{k}={v}" for k, v in sorted(redactor.settings(cluster.settings).items()))
        echo(f"  {alias}: {settings or '(no settings)'}")
    from mirrorspark.paths import default_state_dir
    from mirrorspark.state.location import StateLocation

    location = StateLocation.parse(config.driver.state_location, default_state_dir())
    echo(f"state location: {location.describe()}")
    echo(f"spark.master: {config.spark.get('spark.master', 'local[*]')}")
    echo("flows:")
    if not config.enabled_flows:
        echo("  none enabled: heartbeats only, as MM2 runs such a file")
    names = RemoteNames()  # the plans of all flows together: two sources for one remote topic are refused
    for flow in config.flows:
        if not flow.enabled:
            continue
        echo(f"  {flow.name}: enabled, policy {policy_label(flow.settings)}, "
             f"replication.factor {flow.options.replication_factor}")
        echo(f"    topics: {', '.join(flow.options.topics) or '(none)'}")
        echo(f"    topics.exclude: {', '.join(flow.options.topics_exclude) or '(none)'}")
        if flow.options.topic_map:
            echo(f"    topic.map: {', '.join(f'{s} -> {t}' for s, t in flow.options.topic_map.items())}")
        for key, value in sorted(redactor.settings(flow.flow_settings).items()):
            echo(f"    {flow.name}.{key} = {value}")
        if show:
            _effective(flow, redactor, echo)
        if probe and check_policy_class(flow.settings, flow.where(POLICY_KEY)) == "custom":
            echo("    plan: not shown: a custom replication.policy.class is imported only when flows run")
        elif probe:  # a built-in policy: nothing is imported
            _plan(flow, TopicSelection(flow, policy_for_flow(flow.settings, flow.source.alias)), names, echo)


    for item in pending or ():
        echo(f"needed at run time: {item}")


def _effective(flow: FlowConfig, redactor: Redactor, echo: Callable[[str], None]) -> None:
    """Every flow key as the flow will use it, and where its value comes from."""
    from mirrorspark.config.keys import BY_NAME, Scope

    echo("    effective settings:")
    settings = redactor.settings(flow.settings)
    for name, key in sorted(BY_NAME.items()):
        if key.scope is not Scope.FLOW or key.deprecated_by:
            continue
        if name in flow.flow_settings:
            origin = "flow"
        elif name in flow.settings:
            origin = "top level"
        else:
            origin = "default"
        value = settings.get(name, key.default if key.default is not None else "(unset)")
        echo(f"      {name} = {value}  ({origin})")
    for side, cluster in (("source", flow.source), ("target", flow.target)):
        for name, value in sorted(redactor.settings(cluster.settings).items()):
            echo(f"      {side} {cluster.alias}.{name} = {value}")


def _plan(flow, selection, names, echo: Callable[[str], None]) -> None:
    from mirrorspark.control.admin import topic_partitions
    from mirrorspark.control.client_settings import admin_settings
    from mirrorspark.control.clusters import ClusterUnreachable, reach

    try:
        source = reach(flow.source, admin_settings(flow.source), timeout=10)
    except ClusterUnreachable as exc:
        echo(f"    plan: unavailable ({exc})")
        return
    topics = {t: n for t, n in sorted(topic_partitions(source).items()) if selection.should_replicate(t)}
    names.claim(flow, {topic: selection.remote_name(topic) for topic in topics})
    echo(f"    plan: {len(topics)} topic(s) on {flow.source.alias} would be replicated to {flow.target.alias}")
    for topic, partitions in topics.items():
        echo(f"      {topic} -> {selection.remote_name(topic)} ({partitions} partitions)")
