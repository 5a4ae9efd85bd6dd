"""MM2's TopicFilter, GroupFilter and ConfigPropertyFilter written in Java, asked through the plug-in JVM.

Each is a predicate on a name, as MM2 uses it: ``shouldReplicateTopic`` where ``topics`` /
``topics.exclude`` decide otherwise, ``shouldReplicateGroup`` for ``groups`` / ``groups.exclude``,
``shouldReplicateConfigProperty`` for ``config.properties.exclude``. Answers are cached per name.
"""
from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from mirrorspark.errors import OperationalError
from mirrorspark.plugins.java_host import java_message

METHODS = {"topic.filter.class": "shouldReplicateTopic",
           "group.filter.class": "shouldReplicateGroup",
           "config.property.filter.class": "shouldReplicateConfigProperty"}
DEFAULTS = {"topic.filter.class": "org.apache.kafka.connect.mirror.DefaultTopicFilter",
            "group.filter.class": "org.apache.kafka.connect.mirror.DefaultGroupFilter",
            "config.property.filter.class": "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter"}


class JavaFilterFailed(OperationalError):
    """The user's Java filter threw: the message names the key, the class and the exception."""


class JavaFilter:
    """``filter(name)``: what the Java filter answers for ``name``."""

    def __init__(self, java: Any, key: str, class_name: str) -> None:
        self._java = java
        self.key = key
        self.class_name = class_name
        self._method = METHODS[key]
        self._ask = lru_cache(maxsize=65536)(self._call)

    def _call(self, name: str) -> bool:
        from py4j.protocol import Py4JError

        from mirrorspark.plugins.java_host import own_errors

        own_errors()  # pyspark's exception hook off this JVM's answers

        try:
            return bool(getattr(self._java, self._method)(name))
        except Py4JError as exc:
            raise JavaFilterFailed(f"{self.key}={self.class_name!r}: {self._method}({name!r}) failed: "
                                   f"{java_message(exc)}") from None

    def __call__(self, name: str) -> bool:
        return self._ask(name)


def custom_filter_class(settings: Mapping[str, str], key: str) -> str | None:
    """The filter class a flow names for ``key``, or None for MM2's default filter (the regex keys)."""
    name = settings.get(key, "").strip()
    return None if not name or name == DEFAULTS[key] else name
