"""Which consumer groups a flow checkpoints: MM2's ``groups`` / ``groups.exclude`` regex lists."""
from __future__ import annotations

import re

from mirrorspark.config.errors import ConfigError
from mirrorspark.config.model import FlowConfig, default, split_list


def _compile(patterns: list[str], key: str) -> re.Pattern[str] | None:
    if not patterns:
        return None
    try:
        return re.compile("|".join(f"(?:{p})" for p in patterns))
    except re.error as exc:
        raise ConfigError(f"{key} holds an invalid regular expression: {exc}", key) from None


class GroupFilter:
    """A group is checkpointed when it fully matches ``groups`` and no ``groups.exclude`` entry."""

    def __init__(self, flow: FlowConfig) -> None:
        include = flow.get("groups", default("groups")) or ""
        exclude = flow.get("groups.exclude")
        exclude_key = "groups.exclude"
        if exclude is None and flow.get("groups.blacklist") is not None:
            exclude, exclude_key = flow.get("groups.blacklist"), "groups.blacklist"
        if exclude is None:
            exclude = default("groups.exclude")
        self._include = _compile(split_list(include), flow.where("groups"))
        self._exclude = _compile(split_list(exclude), flow.where(exclude_key))

    def __call__(self, group: str) -> bool:
        if self._include is None or not self._include.fullmatch(group):
            return False
        return self._exclude is None or not self._exclude.fullmatch(group)
