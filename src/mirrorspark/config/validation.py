"""Key-level validation of mm2.properties against the declarations in ``keys.py``.

Errors (typos in MM2's namespaces, bad values, contradictions) raise ConfigError naming the key;
harmless leftovers (Connect worker settings) and deprecated aliases become warnings.
"""
from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from functools import partial

from mirrorspark.config.keys import (
    BY_NAME,
    CONNECT_PREFIXES,
    MM2_NAMESPACES,
    PASSTHROUGH_PREFIXES,
    Key,
    Scope,
    Type,
    unsupported,
)
from mirrorspark.config.values import compile_patterns, is_connection_key, parse_bool, split_list
from mirrorspark.errors import ConfigError, ConfigErrors

_CLUSTER_PREFIXES = ("consumer.", "producer.", "admin.")


# Java's int and long: a value Kafka cannot hold is refused here, not truncated later.
_INTEGER_RANGE = {Type.INT: (-2**31, 2**31 - 1), Type.LONG: (-2**63, 2**63 - 1)}


def check_value(key: Key, value: str, where: str) -> None:
    """Type, range and choice checks; ``where`` is the key as written in the file."""
    text = value.strip()
    if key.type is Type.BOOLEAN:
        parse_bool(text, where)
    if key.type in (Type.INT, Type.LONG, Type.DOUBLE):
        _check_number(key, text, where)
    if key.choices and text.upper() not in (c.upper() for c in key.choices):
        raise ConfigError(f"{where} must be one of {', '.join(key.choices)}, got {value!r}", where)
    if key.not_empty and not text:
        raise ConfigError(f"{where} must not be empty: a remote name must keep the source alias apart from the "
                          "topic name (A.orders), or neither cycles nor a topic's origin can be recognised", where)
    if key.regex:
        check_regexes(text, where)


def _check_number(key: Key, text: str, where: str) -> None:
    if text in key.also:
        return
    if key.type is Type.DOUBLE:
        try:
            number: float = float(text)
        except ValueError:
            raise ConfigError(f"{where} must be a number, got {text!r}", where) from None
        if not math.isfinite(number):
            raise ConfigError(f"{where} must be a finite number, got {text!r}", where)
    else:
        try:
            number = int(text)
        except ValueError:
            raise ConfigError(f"{where} must be an integer, got {text!r}", where) from None
        low, high = _INTEGER_RANGE[key.type]
        if not low <= number <= high:
            raise ConfigError(f"{where}={text} does not fit a Java {key.type.value}", where)
    if (key.low is not None and number < key.low) or (key.high is not None and number > key.high):
        raise ConfigError(f"{where} must be {key.bounds()}, got {text}{_range_hint(key, number)}", where)


def _range_hint(key: Key, number: float) -> str:
    """Why the range: an interval that would switch its task off, or a replication factor."""
    if key.name.endswith(".interval.seconds"):
        enabled = key.name.replace(".interval.seconds", ".enabled")
        off = f"; to turn the task off set {enabled} = false" if enabled in BY_NAME else ""
        return (f" (seconds between runs: MM2 silently skips a task whose interval is negative, and 0 would run "
                f"it without pause, so mirrorspark refuses both{off})")
    if key.name.endswith("replication.factor"):
        return " (a Kafka replication factor is a short; -1 asks the broker for its default)"
    return ""


def check_regexes(value: str, where: str) -> None:
    """A LIST of regular expressions must compile as MM2 compiles it (joined, by java.util.regex's rules)."""
    compile_patterns(split_list(value), where)


def _refuse_unsupported(name: str, value: str, where: str) -> None:
    entry = unsupported(name, value)
    if entry is not None:
        accepted = f" (only MM2's default {entry.defaults[0]!r} is accepted)" if entry.defaults and entry.defaults[0] \
            else ""
        raise ConfigError(f"{where} is not supported: {entry.why}{accepted}", where)


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, list(BY_NAME), n=1, cutoff=0.6)
    if not close:
        close = [k for k in BY_NAME if k.startswith(name + ".")][:1]
    return f"; did you mean '{close[0]}'?" if close else ""


def _passthrough(name: str) -> bool:
    return name.startswith(PASSTHROUGH_PREFIXES) or is_connection_key(name)


EOS_WORKER_KEY = "exactly.once.source.support"  # a Connect worker setting: MM2 reads it per target cluster only


def check_flow_or_top(name: str, value: str, where: str, warnings: list[str], top_level: bool,
                      disabled: frozenset[str] = frozenset()) -> None:
    _refuse_unsupported(name, value, where)
    key = BY_NAME.get(name)
    if name == EOS_WORKER_KEY:
        check_value(BY_NAME[name], value, where)
        level = "top" if top_level else "flow"
        warnings.append(f"{where} has no effect here: MM2 reads it per target cluster and ignores it at {level} "
                        f"level, and so does mirrorspark (the flow copies at least once); write it as "
                        f"<target alias>.{name} for exactly-once into that cluster")
        return
    if key is not None:
        if key.scope is Scope.DRIVER and not top_level:
            raise ConfigError(f"{where}: '{name}' can only be set at top level", where)
        if key.scope is Scope.CLUSTER and not top_level:
            raise ConfigError(f"{where}: '{name}' is a cluster setting; write it as <alias>.{name}", where)
        if name.removesuffix(INTERVAL_SUFFIX) not in disabled:  # an interval of a task switched off is unused
            check_value(key, value, where)
        if key.deprecated_by:
            warnings.append(f"{where} is deprecated; use {key.deprecated_by}")
        elif not key.used:
            warnings.append(f"{where} is accepted for MM2 compatibility but has no effect yet")
        return
    if _passthrough(name) or name.startswith(CONNECT_PREFIXES):
        return
    _unknown(name, where, warnings)


# Keys whose near miss, ignored as MM2 ignores it, would change which topics are copied or under which
# names: refused rather than warned about (``topic = orders`` would copy every topic).
SELECTING = frozenset({"topics", "topics.exclude", "topics.blacklist", "topic.map", "replication.policy.class",
                       "replication.policy.separator", "enabled", "topic.filter.class", "group.filter.class",
                       "config.property.filter.class"})
IGNORED = "ignored (MM2 ignores it too)"


def _unknown(name: str, where: str, warnings: list[str]) -> None:
    """A key neither MM2 nor mirrorspark defines. MM2 runs such a file (it logs the key as unused), so it
    is a warning naming the near miss; refused only in mirrorspark's own namespace (no MM2 file holds
    it) or when it is a near miss of a key that selects what is copied."""
    suggestion = _suggest(name)
    near = difflib.get_close_matches(name, list(BY_NAME), 1, 0.85)
    if name.startswith("mirrorspark."):
        raise ConfigError(f"unknown key {where}{suggestion}", where)
    if near and near[0] in SELECTING:
        raise ConfigError(f"unknown key {where}{suggestion} (MM2 would ignore it and copy other topics than the file "
                          "asks for: mirrorspark refuses it)", where)
    warnings.append(f"{where} is not a MirrorMaker 2 or mirrorspark setting: {IGNORED}{suggestion}")


def check_cluster(alias: str, name: str, value: str, warnings: list[str]) -> None:
    where = f"{alias}.{name}"
    _refuse_unsupported(name, value, where)
    if name == "bootstrap.servers" or is_connection_key(name) or name.startswith(_CLUSTER_PREFIXES) \
            or name.startswith(CONNECT_PREFIXES):
        if name == "security.protocol":
            check_value(BY_NAME["security.protocol"], value, where)
        return
    key = BY_NAME.get(name)
    if key is not None and key.scope is Scope.CLUSTER:
        check_value(key, value, where)
        return
    if key is not None and key.scope is not Scope.CLUSTER:
        # MM2 hands a cluster's non-client keys to its connectors as source.cluster.<key>, which no
        # connector reads: the setting has no effect there.
        if key.type is Type.CLASS and value.strip() == key.default:
            return  # MM2's own plug-in named where it has no effect: what MM2 would use anyway
        if name in SELECTING:
            raise ConfigError(f"{where}: '{name}' is a flow setting, not a cluster one, and MM2 would ignore it here "
                              f"and copy other topics than the file asks for; write it as {alias}->TARGET.{name} or "
                              "at top level", where)
        warnings.append(f"{where}: '{name}' is a flow setting, not a cluster one: {IGNORED}; write it as "
                        f"{alias}->TARGET.{name} or at top level for it to count")
        return
    if key is None and name.startswith(MM2_NAMESPACES):
        _unknown(name, where, warnings)
        return
    warnings.append(f"{where} is not a cluster setting mirrorspark uses and is ignored{_suggest(name)}")


INTERVAL_SUFFIX = ".interval.seconds"


def _disabled_tasks(*levels: Mapping[str, str]) -> frozenset[str]:
    """Task prefixes (``emit.heartbeats``...) whose ``.enabled`` is false; later levels win."""
    off: set[str] = set()
    for level in levels:
        for name, value in level.items():
            prefix = name.removesuffix(".enabled")
            if prefix != name and prefix + INTERVAL_SUFFIX in BY_NAME:
                (off.add if value.strip().lower() == "false" else off.discard)(prefix)
    return frozenset(off)


def _enabled_tasks(level: Mapping[str, str]) -> set[str]:
    """Task prefixes this level switches on explicitly."""
    return {name.removesuffix(".enabled") for name, value in level.items()
            if name.endswith(".enabled") and value.strip().lower() == "true"}


def check_all(top: Mapping[str, str], clusters: Mapping[str, Mapping[str, str]],
              flows: Mapping[tuple[str, str], Mapping[str, str]], unresolved: frozenset[str] = frozenset()
              ) -> list[str]:
    """Every key checked, every error collected (ConfigErrors when more than one); the warnings.
    ``unresolved``: keys whose value is a provider reference this machine cannot resolve (offline)."""
    warnings: list[str] = []
    errors: list[ConfigError] = []

    def check(where: str, run: Callable[[], None]) -> None:
        if where in unresolved:
            return
        try:
            run()
        except ConfigError as exc:
            errors.append(exc)

    # A top-level interval of a task switched off is unused, unless a flow switches the task back on.
    top_off = _disabled_tasks(top) - {prefix for settings in flows.values() for prefix in _enabled_tasks(settings)}
    for name, value in top.items():
        check(name, partial(check_flow_or_top, name, value, name, warnings, top_level=True, disabled=top_off))
    for alias, settings in clusters.items():
        for name, value in settings.items():
            check(f"{alias}.{name}", partial(check_cluster, alias, name, value, warnings))
    for (source, target), settings in flows.items():
        off = _disabled_tasks(top, settings)
        for name, value in settings.items():
            where = f"{source}->{target}.{name}"
            check(where, partial(check_flow_or_top, name, value, where, warnings, top_level=False, disabled=off))
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigErrors(errors)
    for old, new in (("topics.blacklist", "topics.exclude"), ("groups.blacklist", "groups.exclude"),
                     ("config.properties.blacklist", "config.properties.exclude")):
        if old in top and new in top:
            warnings.append(f"both {old} and {new} are set; {new} wins (as in MM2)")
    return warnings


_BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"


def transform_warnings(settings: Mapping[str, str], where: Callable[[str], str]) -> list[str]:
    """Transform keys that do nothing, and converters mirrorspark does not apply to whole records:
    said once, never dropped without a word."""
    listed = {name for kind in ("transforms", "predicates") for name in split_list(settings.get(kind, ""))}
    out = []
    for key in sorted(settings):
        kind, _, rest = key.partition(".")
        if kind in ("transforms", "predicates") and rest and rest.split(".", 1)[0] not in listed:
            out.append(f"{where(key)}: {rest.split('.', 1)[0]!r} is not listed in {where(kind)}: no effect (as in MM2)")
    for part in ("key", "value"):
        key = f"{part}.converter"
        value = settings.get(key, "").strip()
        if value and value != _BYTES:
            out.append(f"{where(key)} = {value}: mirrorspark copies each record's bytes unchanged (MM2 would run them "
                       "through this converter; with StringConverter it writes a Java array's name for bytes); only a "
                       "String a transformation makes is written as text")
    return out
