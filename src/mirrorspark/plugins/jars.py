"""Where a Java plug-in is looked for, and whether a class is there, without running anything.

MM2 finds plug-ins on ``plugin.path`` (directories holding jars, directories of jars, or class
folders) and on its classpath; Spark users name jars with ``spark.jars``. The check reads jar
listings only, so ``validate --offline`` can say "not found" naming every place it looked.
"""
from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path

from mirrorspark.config.values import split_list

PLACES = ("plugin.path", "spark.jars")


def plugin_classpath(settings: Mapping[str, str]) -> list[Path]:
    """Jars and class folders named by ``plugin.path`` (each directory: its jars, its subdirectories'
    jars, and itself as a class folder) and the local jars of ``spark.jars``, in that order."""
    found: list[Path] = []
    for entry in split_list(settings.get("plugin.path", "")):
        path = Path(entry).expanduser()
        if path.is_file() and path.suffix == ".jar":
            found.append(path)
        elif path.is_dir():
            found.append(path)
            found.extend(sorted(path.glob("*.jar")))
            for sub in sorted(p for p in path.iterdir() if p.is_dir()):
                found.append(sub)
                found.extend(sorted(sub.glob("*.jar")))
    for entry in split_list(settings.get("spark.jars", "")):
        local = entry.removeprefix("file://") if entry.startswith("file://") else entry
        if "://" not in local and local.endswith(".jar") and Path(local).expanduser().is_file():
            found.append(Path(local).expanduser())
    return found


def class_location(class_name: str, classpath: list[Path]) -> Path | None:
    """The jar or folder of ``classpath`` that holds ``class_name`` (a binary name), else None."""
    entry = class_name.replace(".", "/") + ".class"
    for place in classpath:
        if place.is_dir():
            if (place / entry).is_file():
                return place
            continue
        try:
            with zipfile.ZipFile(place) as jar:
                if entry in jar.namelist():
                    return place
        except (OSError, zipfile.BadZipFile):
            continue
    return None


def where_looked(settings: Mapping[str, str]) -> str:
    """The places searched, for a message: each key with its value, or that it is not set."""
    return "; ".join(f"{key} = {settings[key]}" if settings.get(key, "").strip() else f"{key} not set"
                     for key in PLACES)
