"""Read mm2.properties and resolve clusters and flows the way MirrorMaker 2's driver does."""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path

from mirrorspark.config import trigger_choice
from mirrorspark.config.keys import BY_NAME
from mirrorspark.config.model import ClusterConfig, FlowConfig, MirrorConfig
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.config.providers import resolve_providers
from mirrorspark.config.strimzi import convert, is_strimzi, secrets_dir
from mirrorspark.config.topology import check_topology
from mirrorspark.config.validation import check_all, transform_warnings
from mirrorspark.config.values import is_connection_key, parse_bool, split_list
from mirrorspark.errors import ConfigError

_FLOW_KEY = re.compile(r"^(?P<source>[^.>\s]+?)->(?P<target>[^.\s]+)\.(?P<key>.+)$")
_ALIAS = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]*$")


def load_config(path: str | Path, clusters: list[str] | None = None, offline: bool = False,
                secrets: str | Path | None = None) -> MirrorConfig:
    """Parse the file at ``path`` (an mm2.properties, or a Strimzi KafkaMirrorMaker2 resource whose
    Secrets are mounted under ``secrets``); ``clusters`` is the ``--clusters`` list (targets to drive).
    ``offline`` (``validate --offline``): what this machine lacks is listed, not refused."""
    file = Path(path)
    notes: list[str] = []
    try:
        # utf-8-sig drops a leading byte order mark: Java's Properties would keep it as part of the first
        # key and so silently misread that key (typically ``clusters``); reading it properly is better.
        text = file.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {str(file)!r}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        # MM2 reads the file with Java's Properties.load(InputStream), which is ISO-8859-1: so does this
        text = file.read_bytes().decode("latin-1")
        notes.append(f"config file {str(file)!r} is not UTF-8 ({exc.reason} at byte {exc.start}); read as "
                     "ISO-8859-1, as MM2 reads every file")
    if is_strimzi(text):
        conversion = convert(text, str(file), secrets_dir(secrets))
        props = conversion.properties
        notes.extend(conversion.ignored)
    else:
        props = parse_properties(text)
    mirror = parse_config(props, clusters, source_path=str(file), offline=offline)
    return dataclasses.replace(mirror, warnings=(*notes, *mirror.warnings)) if notes else mirror


_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _refuse_lone_surrogates(props: Mapping[str, str]) -> None:
    """An unpaired ``\\uD800``-``\\uDFFF`` escape is no character: no UTF-8 text (a Kafka topic, a log
    line, the JVM's arguments) can carry it, so it is refused here, naming the key, not wherever it breaks."""
    for key, value in props.items():
        for text in (key, value):
            if (found := _LONE_SURROGATE.search(text)) is not None:
                shown = key.encode("utf-8", "backslashreplace").decode()
                raise ConfigError(f"{shown} holds an unpaired UTF-16 surrogate {found[0]!a} (a \\u escape that is "
                                  "half of a character): not valid text", shown)


def parse_config(
    props: Mapping[str, str], clusters: list[str] | None = None, source_path: str | None = None,
    offline: bool = False,
) -> MirrorConfig:
    """Resolve raw properties into clusters and flows (flow > cluster > top level)."""
    _refuse_lone_surrogates(props)
    pending: dict[str, str] | None = {} if offline else None
    props = resolve_providers(props, pending)
    _refuse_lone_surrogates(props)  # an environment variable's bytes that are not UTF-8 arrive as such
    if "clusters" not in props or not split_list(props["clusters"]):
        raise ConfigError("clusters is required: list the cluster aliases, e.g. 'clusters = A, B'", "clusters")
    aliases = split_list(props["clusters"])
    for alias in aliases:
        if not _ALIAS.match(alias):
            raise ConfigError(f"cluster alias {alias!r} in clusters is not a valid alias "
                              "(letters, digits, '_' and '-')", "clusters")
    if len(set(aliases)) != len(aliases):
        raise ConfigError(f"clusters lists an alias twice: {props['clusters']!r}", "clusters")

    cluster_keys: dict[str, dict[str, str]] = {a: {} for a in aliases}
    flow_keys: dict[tuple[str, str], dict[str, str]] = {}
    top: dict[str, str] = {}
    ignored: list[str] = []
    for key, value in props.items():
        flow_key = _FLOW_KEY.match(key)
        if flow_key:
            source, target = flow_key["source"], flow_key["target"]
            unknown = [alias for alias in (source, target) if alias not in cluster_keys]
            if unknown:
                if flow_key["key"] == "enabled" and value.strip().lower() == "true":  # a flow that cannot run
                    raise ConfigError(
                        f"{key} names cluster {unknown[0]!r}, which is not in clusters ({', '.join(aliases)})", key)
                ignored.append(f"{key} names cluster {unknown[0]!r}, which is not in clusters ({', '.join(aliases)}): "
                               "ignored (MM2 ignores it too)")
                continue
            if source == target:
                raise ConfigError(f"{key}: a flow needs two different clusters", key)
            flow_keys.setdefault((source, target), {})[flow_key["key"]] = value
            continue
        alias, dot, rest = key.partition(".")
        if dot and alias in cluster_keys:
            cluster_keys[alias][rest] = value
        else:
            top[key] = value

    warnings = [*ignored, *check_all(top, cluster_keys, flow_keys, unresolved=frozenset(pending or {}))]
    top_connection = {k: v for k, v in top.items() if is_connection_key(k)}
    client_options = {k: v for k, v in top.items() if k in ("plugin.path", "spark.jars", "mirrorspark.control.clients")}
    cluster_configs = {a: ClusterConfig(a, cluster_keys[a], top_connection, client_options) for a in aliases}

    if clusters:
        unknown = [c for c in clusters if c not in cluster_configs]
        if unknown:
            raise ConfigError(f"--clusters names {', '.join(unknown)}, not in clusters ({', '.join(aliases)})",
                              "--clusters")

    every_flow: list[FlowConfig] = []
    for source in aliases:
        for target in aliases:
            if source == target:
                continue
            here = not clusters or target in clusters
            own = flow_keys.get((source, target), {})
            settings = {k: v for k, v in top.items() if not k.startswith("spark.")}
            settings.update(own)
            enabled_key = f"{source}->{target}.enabled"
            enabled = parse_bool(own["enabled"], enabled_key) if "enabled" in own else False
            flow = FlowConfig(cluster_configs[source], cluster_configs[target], enabled, settings, own)
            if enabled and here:
                flow.source.require_bootstrap_servers()  # raises ConfigError naming the missing key
                flow.target.require_bootstrap_servers()
                flow.resolve_options()  # every flow key read once, typed: errors name the key
            every_flow.append(flow)

    # The whole file's topology, not only the flows this process runs: with --clusters each
    # process of an active/active pair sees one direction, and a cycle must still be refused.
    same_names = check_topology(every_flow)
    every_flow = [dataclasses.replace(f, same_names=True) if f.name in same_names else f for f in every_flow]
    flows = [f for f in every_flow if not clusters or f.target.alias in clusters]
    chosen = {f.name: f for f in trigger_choice.choose([f for f in flows if f.enabled],
                                                       {k: v for k, v in top.items() if k.startswith("spark.")})}
    flows = [chosen.get(f.name, f) for f in flows]
    for flow in flows:
        if flow.enabled:
            check_offset_sync_keys(flow)
            check_schema_registries(flow)
            if not flow.options.separator and not any("no prefix" in w for w in warnings):
                warnings.append(
                    f"{flow.where('replication.policy.separator')} is empty (MM2's \"no prefix\" recipe): remote and "
                    "internal topics get the names MM2 gives them, but no remote name shows its source, so a cycle "
                    "runs as with IdentityReplicationPolicy; that policy says the same more plainly: "
                    "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy")
            if (warning := flow.idempotence_warning()) is not None:
                warnings.append(warning)
            flow.check_trigger()
            if (warning := flow.exactly_once_warning()) is not None:
                warnings.append(warning)
            warnings.extend(w for w in transform_warnings(flow.settings, flow.where) if w not in warnings)
    spark = {k: v for k, v in top.items() if k.startswith("spark.")}
    return MirrorConfig(cluster_configs, flows, top, spark, source_path, tuple(warnings),
                        needed_at_run_time=tuple((pending or {}).values()))


def check_schema_registries(flow: FlowConfig) -> None:
    """Schema sync reads the source cluster's registry and writes the target's: both must be named."""
    if not flow.options.schemas:
        return
    for cluster in (flow.source, flow.target):
        if not cluster.settings.get("schema.registry.url", "").strip():
            where = f"{cluster.alias}.schema.registry.url"
            raise ConfigError(f"{flow.where('mirrorspark.schemas.sync.enabled')} is true but {where} is not set: the "
                              f"flow copies schemas from {flow.source.alias}'s registry to {flow.target.alias}'s",
                              where)
        for name in sorted(cluster.settings):  # a registry setting not read would leave the registry unreachable
            if name.startswith("schema.registry.") and name not in BY_NAME:
                raise ConfigError(f"{cluster.alias}.{name} is not read by mirrorspark's schema sync (Java key stores "
                                  "are not: give the CAs as PEM in schema.registry.ssl.ca.location, a client "
                                  "certificate and key in schema.registry.ssl.certificate.location and "
                                  "schema.registry.ssl.key.location)", f"{cluster.alias}.{name}")


def check_offset_sync_keys(flow: FlowConfig) -> None:
    """MM2's validation: offset-sync settings alongside ``emit.offset-syncs.enabled = false``."""
    if flow.options.emit_offset_syncs:
        return
    for key in flow.settings:
        if key.startswith("offset-syncs.topic.") or key.startswith("offset-syncs-"):
            raise ConfigError(f"{flow.where(key)} is set but {flow.where('emit.offset-syncs.enabled')} is false: "
                              "offset syncs (and so checkpoints) are off; remove one of them", flow.where(key))
