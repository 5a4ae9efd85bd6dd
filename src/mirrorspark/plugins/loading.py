"""Finding and making a flow's Java plug-ins: the offline check ``validate`` and preflight use (jar
listings only, nothing runs) and the instance a running flow asks (in the plug-in JVM)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mirrorspark.errors import ConfigError
from mirrorspark.paths import mirrorspark_jar
from mirrorspark.plugins.jars import class_location, plugin_classpath, where_looked
from mirrorspark.plugins.java_filters import JavaFilter, custom_filter_class
from mirrorspark.plugins.java_host import PluginInstance


def java_class_found(settings: Mapping[str, str], class_name: str) -> bool:
    """``class_name`` is in a jar or class folder of ``plugin.path`` or ``spark.jars``."""
    return class_location(class_name, plugin_classpath(settings)) is not None


def check_java_class(settings: Mapping[str, str], key: str, class_name: str, where: str) -> None:
    """Refuse, naming the key and where it looked, a Java class no plug-in place holds."""
    if not java_class_found(settings, class_name):
        raise ConfigError(f"{where}={class_name!r}: no jar or class folder holds this class "
                          f"({where_looked(settings)}); put the plug-in's jar in a plugin.path directory, "
                          "as for MM2", where)


def java_plugin(settings: Mapping[str, str], key: str, class_name: str, where: str,
                extra: Mapping[str, str] | None = None) -> Any:
    """A configured instance of the user's Java class for ``key`` (MM2's interface for it)."""
    check_java_class(settings, key, class_name, where)
    try:
        # One JVM for plug-ins and the control plane's clients: the same classpath (mirrorspark's jar first).
        return PluginInstance([mirrorspark_jar(), *plugin_classpath(settings)], key, class_name,
                              {**settings, **(extra or {})})
    except ConfigError as exc:
        raise ConfigError(str(exc).replace(f"{key}=", f"{where}=", 1), where) from None


def java_filter(settings: Mapping[str, str], key: str, where: str) -> JavaFilter | None:
    """The flow's custom Java filter for ``key``, or None when it uses MM2's default (the regex keys)."""
    name = custom_filter_class(settings, key)
    if name is None:
        return None
    return JavaFilter(java_plugin(settings, key, name, where), key, name)


def check_filters(settings: Mapping[str, str], where: Any) -> None:
    """Every custom filter class a flow names is found (offline: nothing is loaded)."""
    for key in ("topic.filter.class", "group.filter.class", "config.property.filter.class"):
        name = custom_filter_class(settings, key)
        if name is not None:
            check_java_class(settings, key, name, where(key))
