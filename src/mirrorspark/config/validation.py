"""Key-level validation of mm2.properties against the declarations in ``keys.py``.

Errors (typos in MM2's namespaces, bad values, contradictions) raise ConfigError naming the key;
harmless leftovers (Connect worker settings) and deprecated aliases become warnings.
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping

from mirrorspark.config.errors import ConfigError
from mirrorspark.config.keys import (BY_NAME, CONNECT_PREFIXES, MM2_NAMESPACES, PASSTHROUGH_PREFIXES, Key,
                                     Scope, Type)
from mirrorspark.config.model import is_connection_key, parse_bool, split_list

_CLUSTER_PREFIXES = ("consumer.", "producer.", "admin.")


def check_value(key: Key, value: str, where: str) -> None:
    """Type and choice checks; ``where`` is the key as written in the file."""
    text = value.strip()
    if key.type is Type.BOOLEAN:
        parse_bool(text, where)
    if key.type in (Type.INT, Type.LONG):
        try:
            int(text)
        except ValueError:
            raise ConfigError(f"{where} must be an integer, got {value!r}", where) from None
    if key.type is Type.DOUBLE:
        try:
            float(text)
        except ValueError:
            raise ConfigError(f"{where} must be a number, got {value!r}", where) from None
    if key.choices and text.upper() not in (c.upper() for c in key.choices):
        raise ConfigError(f"{where} must be one of {', '.join(key.choices)}, got {value!r}", where)


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, list(BY_NAME), n=1, cutoff=0.6)
    if not close:
        close = [k for k in BY_NAME if k.startswith(name + ".")][:1]
    return f"; did you mean '{close[0]}'?" if close else ""


def _passthrough(name: str) -> bool:
    return name.startswith(PASSTHROUGH_PREFIXES) or is_connection_key(name)


def check_flow_or_top(name: str, value: str, where: str, warnings: list[str], top_level: bool) -> None:
    key = BY_NAME.get(name)
    if key is not None:
        if key.scope is Scope.DRIVER and not top_level:
            raise ConfigError(f"{where}: '{name}' can only be set at top level", where)
        if key.scope is Scope.CLUSTER and not top_level:
            raise ConfigError(f"{where}: '{name}' is a cluster setting; write it as <alias>.{name}", where)
        check_value(key, value, where)
        if key.deprecated_by:
            warnings.append(f"{where} is deprecated; use {key.deprecated_by}")
        elif not key.used:
            warnings.append(f"{where} is accepted for MM2 compatibility but has no effect yet")
        return
    if _passthrough(name) or name.startswith(CONNECT_PREFIXES):
        return
    suggestion = _suggest(name)
    if name.startswith(MM2_NAMESPACES) or (suggestion and difflib.get_close_matches(name, list(BY_NAME), 1, 0.85)):
        raise ConfigError(f"unknown key {where}{suggestion}", where)
    warnings.append(f"{where} is not a MirrorMaker 2 or mirrorspark setting and is ignored{suggestion}")


def check_cluster(alias: str, name: str, value: str, warnings: list[str]) -> None:
    where = f"{alias}.{name}"
    if name == "bootstrap.servers" or is_connection_key(name) or name.startswith(_CLUSTER_PREFIXES) \
            or name.startswith(CONNECT_PREFIXES):
        if name == "security.protocol":
            check_value(BY_NAME["security.protocol"], value, where)
        return
    key = BY_NAME.get(name)
    if key is not None and key.scope is not Scope.CLUSTER:
        raise ConfigError(f"{where}: '{name}' is a flow setting, not a cluster one; write it as "
                          f"{alias}->TARGET.{name} or at top level", where)
    warnings.append(f"{where} is not a cluster setting mirrorspark uses and is ignored{_suggest(name)}")


def check_all(top: Mapping[str, str], clusters: Mapping[str, Mapping[str, str]],
              flows: Mapping[tuple[str, str], Mapping[str, str]]) -> list[str]:
    warnings: list[str] = []
    for name, value in top.items():
        check_flow_or_top(name, value, name, warnings, top_level=True)
    for alias, settings in clusters.items():
        for name, value in settings.items():
            check_cluster(alias, name, value, warnings)
    for (source, target), settings in flows.items():
        for name, value in settings.items():
            check_flow_or_top(name, value, f"{source}->{target}.{name}", warnings, top_level=False)
    for old, new in (("topics.blacklist", "topics.exclude"), ("groups.blacklist", "groups.exclude"),
                     ("config.properties.blacklist", "config.properties.exclude")):
        if old in top and new in top:
            warnings.append(f"both {old} and {new} are set; {new} wins (as in MM2)")
    return warnings


def parse_topic_map(value: str, where: str) -> dict[str, str]:
    """``src:dst, src2:dst2`` -> mapping; refuses malformed pairs and two topics mapped to one name."""
    mapping: dict[str, str] = {}
    for item in split_list(value):
        source, sep, target = (part.strip() for part in item.partition(":"))
        if not sep or not source or not target:
            raise ConfigError(f"{where}: '{item}' is not a 'source:target' pair", where)
        if source in mapping:
            raise ConfigError(f"{where}: topic '{source}' is mapped twice", where)
        if target in mapping.values():
            raise ConfigError(f"{where}: two source topics are mapped to '{target}'", where)
        mapping[source] = target
    return mapping
