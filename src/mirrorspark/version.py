"""This installation's version, from the package metadata (pyproject.toml is its only source)."""
from __future__ import annotations

from importlib import metadata


def version() -> str:
    """The installed distribution's version; ``unknown`` when run from a tree that was never installed."""
    try:
        return metadata.version("mirrorspark")
    except metadata.PackageNotFoundError:
        return "unknown"
