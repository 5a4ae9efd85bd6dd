"""Configuration errors: always name the offending key so the user knows what to fix.

``ConfigError`` belongs to mirrorspark's error family (``mirrorspark.errors``); it is re-exported
here, where the configuration code has always imported it from."""
from __future__ import annotations

from mirrorspark.errors import ConfigError

__all__ = ["ConfigError"]
