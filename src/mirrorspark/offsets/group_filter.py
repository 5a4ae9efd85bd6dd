"""Which consumer groups a flow checkpoints: MM2's ``groups`` / ``groups.exclude`` regex lists, or the
flow's Java ``group.filter.class``."""
from __future__ import annotations

from collections.abc import Callable

from mirrorspark.config.settings import FlowSettings
from mirrorspark.config.values import compile_patterns


class GroupFilter:
    """A group is checkpointed when it fully matches ``groups`` and no ``groups.exclude`` entry."""

    def __init__(self, options: FlowSettings, custom: Callable[[str], bool] | None = None) -> None:
        self._include = compile_patterns(options.groups, options.groups_key)
        self._exclude = compile_patterns(options.groups_exclude, options.groups_exclude_key)
        self._custom = custom  # a Java GroupFilter decides alone, as in MM2

    def __call__(self, group: str) -> bool:
        if self._custom is not None:
            return self._custom(group)
        if self._include is None or not self._include.fullmatch(group):
            return False
        return self._exclude is None or not self._exclude.fullmatch(group)
