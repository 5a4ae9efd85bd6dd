"""Configuration errors: always name the offending key so the user knows what to fix."""
from __future__ import annotations


class ConfigError(ValueError):
    """The configuration cannot be used; ``key`` is the property at fault, if there is one."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key
