"""MM2's value syntax (BOOLEAN, LIST, connection keys, ``topic.map`` pairs), apart from any key.

The model, the validation and the typed settings all read values this way; keeping the syntax here
lets each of them import it without importing the others.
"""
from __future__ import annotations

import re

import regex

from mirrorspark.config.java_regex import JavaRegexError, compile_java
from mirrorspark.errors import ConfigError

# MM2's client connection keys (MirrorClientConfig.CLIENT_CONFIG_DEF): these flow from the
# cluster (or top) level into every client talking to that cluster.
# What every client of a cluster takes (MM2 gives its cluster settings to each client it makes).
_CONNECTION_KEY = re.compile(
    r"^(bootstrap\.servers|security\.protocol|ssl\..+|sasl\..+|client\.dns\.lookup|metric\.reporters)$")


def parse_bool(value: str, where: str) -> bool:
    """MM2 BOOLEAN: true or false, case-insensitive; anything else names the key."""
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise ConfigError(f"{where} must be true or false, got {value!r}", where)
    return lowered == "true"


def is_connection_key(key: str) -> bool:
    return bool(_CONNECTION_KEY.match(key))


def split_list(value: str) -> list[str]:
    """MM2 LIST values: comma separated, trimmed, empty items dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]


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
            first = next(s for s, t in mapping.items() if t == target)
            raise ConfigError(f"{where}: topics {first} and {source} are both mapped to '{target}': two sources "
                              "would write one remote topic", where)
        mapping[source] = target
    return mapping


def compile_patterns(patterns: tuple[str, ...] | list[str], where: str) -> regex.Pattern[str] | None:
    """MM2's LIST of regexes as MM2 compiles it: joined with ``|`` into one Java regex (so a leading
    ``(?i)`` reaches every entry), for ``fullmatch``; None when the list is empty."""
    if not patterns:
        return None
    joined = "|".join(patterns)
    try:
        return compile_java(joined)
    except JavaRegexError as exc:
        joining = " (MM2 joins the list with '|')" if len(patterns) > 1 else ""
        raise ConfigError(f"{where} holds an invalid regular expression, as Java reads it: {exc.description} near "
                          f"index {exc.index} of {joined!r}{joining}", where) from None
