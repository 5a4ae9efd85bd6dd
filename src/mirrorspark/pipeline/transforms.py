"""MM2's Single Message Transforms (``transforms``, ``predicates``) for a flow: checked when the file
is read, handed to the sink, which applies them in the JVM to each record as MM2's Connect worker
does (``sink/Transforms.java``; no Python per record). Kafka's own transformations ship with
mirrorspark; a custom one is loaded from the jars of ``plugin.path`` or ``spark.jars``, as MM2 loads
it from its plugin path.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from mirrorspark.config.model import FlowConfig
from mirrorspark.config.values import split_list
from mirrorspark.errors import ConfigError
from mirrorspark.plugins.jars import class_location, plugin_classpath, where_looked

BUILTIN = "org.apache.kafka.connect.transforms."
# Kafka's transformations that always move a record to another topic: remote names are the policy's.
_ROUTERS = ("org.apache.kafka.connect.transforms.RegexRouter", "org.apache.kafka.connect.transforms.TimestampRouter")


def transform_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """The flow's ``transforms*`` and ``predicates*`` keys (flow over top level, as MM2 merges them)."""
    return {k: v for k, v in settings.items()
            if k in ("transforms", "predicates", "key.converter", "value.converter", "header.converter")
            or k.startswith(("transforms.", "predicates."))}


def _types(flow: FlowConfig) -> list[tuple[str, str]]:
    """(key, class) of each listed transformation and predicate; refuses what a chain cannot be made of."""
    settings = transform_settings(flow.settings)
    names = split_list(settings.get("transforms", ""))
    predicates = split_list(settings.get("predicates", ""))
    found: list[tuple[str, str]] = []
    for kind, listed in (("transforms", names), ("predicates", predicates)):
        for name in listed:
            key = f"{kind}.{name}.type"
            kind_type = settings.get(key, "").strip()
            if not kind_type:
                raise ConfigError(f"{flow.where(key)} is required: {kind} lists {name!r}", flow.where(key))
            found.append((key, kind_type))
    for name in names:
        guard = settings.get(f"transforms.{name}.predicate", "").strip()
        if guard and guard not in predicates:
            key = f"transforms.{name}.predicate"
            raise ConfigError(f"{flow.where(key)} names {guard!r}, which predicates does not list", flow.where(key))
    for key, value in settings.items():
        if "\n" in value or "\t" in value:
            raise ConfigError(f"{flow.where(key)} holds a tab or a line break", flow.where(key))
    return found


def check_transforms(flow: FlowConfig) -> None:
    """Every class named is Kafka's own or found in plugin.path / spark.jars; no router."""
    for key, class_name in _types(flow):
        if class_name.split("$")[0] in _ROUTERS:
            raise ConfigError(f"{flow.where(key)} = {class_name}: it moves records to other topics; mirrorspark names "
                              "remote topics by replication.policy.class and topic.map (a renamed copy would escape "
                              "offset translation and checkpoints, as it does in MM2)", flow.where(key))
        if not class_name.startswith(BUILTIN):
            place = class_location(class_name, plugin_classpath(flow.settings))
            if place is None or not place.is_file():
                raise ConfigError(f"{flow.where(key)} = {class_name!r}: no jar of plugin.path or spark.jars holds this "
                                  f"class ({where_looked(flow.settings)})", flow.where(key))


def transform_jars(flows: Iterable[FlowConfig]) -> list[Path]:
    """The jars of custom transformations and predicates, for Spark's classpath (``spark.jars``)."""
    jars: list[Path] = []
    for flow in flows:
        for _, class_name in _types(flow):
            if not class_name.startswith(BUILTIN):
                place = class_location(class_name, plugin_classpath(flow.settings))
                if place is not None and place.is_file() and place not in jars:
                    jars.append(place)
    return jars


def transforms_option(flow: FlowConfig) -> str | None:
    """The sink's ``transforms`` option (lines key TAB value), None without transformations."""
    settings = transform_settings(flow.settings)
    if not split_list(settings.get("transforms", "")):
        return None
    return "\n".join(f"{k}\t{v}" for k, v in sorted(settings.items()))
