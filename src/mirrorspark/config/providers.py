"""Kafka's config providers in mm2.properties (KIP-297, KIP-421): ``${file:/path:key}``,
``${env:NAME}`` and ``${dir:/path:name}`` resolved at load, as MM2 resolves them, so secrets can stay
out of the file. A reference to a provider the file does not declare is left as it is (MM2 does the
same); one that cannot be resolved (file missing, key absent, path not allowed) is refused naming the
key, where MM2 would fail on the literal ``${...}`` text later."""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import regex

from mirrorspark.config.java_regex import JavaRegexError, compile_java
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.errors import ConfigError, NeededAtRunTime

_REFERENCE = re.compile(r"\$\{([^}:]*):(?:([^}]*):)?([^}]*)\}")  # Kafka's ConfigTransformer pattern
_CLASSES = {
    "org.apache.kafka.common.config.provider.FileConfigProvider": "file",
    "org.apache.kafka.common.config.provider.EnvVarConfigProvider": "env",
    "org.apache.kafka.common.config.provider.DirectoryConfigProvider": "dir",
}


class _Provider:
    def __init__(self, name: str, kind: str, allowed: list[str] | None,
                 allowlist: regex.Pattern[str] | None = None) -> None:
        """``allowed``: the file providers' ``allowed.paths``; ``allowlist``: the names the env provider
        may read (Kafka's ``allowlist.pattern``); None: no limit."""
        self.name, self.kind, self.allowed, self.allowlist = name, kind, allowed, allowlist

    def _check_path(self, path: str | Path, key: str) -> Path:
        """``path`` with links and ``..`` resolved, refused unless it lies under ``allowed.paths``."""
        resolved = Path(path).resolve()
        if self.allowed is not None and not any(resolved.is_relative_to(Path(a).resolve()) for a in self.allowed):
            raise ConfigError(f"{key}: {path} is not under config.providers.{self.name}.param.allowed.paths "
                              f"({', '.join(self.allowed)})", key)
        return resolved

    def get(self, path: str | None, name: str, key: str) -> str:
        if self.kind == "env":
            if self.allowlist is not None and not self.allowlist.fullmatch(name):
                raise ConfigError(f"{key}: environment variable {name!r} does not match "
                                  f"config.providers.{self.name}.param.allowlist.pattern", key)
            if name not in os.environ:
                raise NeededAtRunTime(f"{key} refers to environment variable {name!r}, which is not set", key)
            return os.environ[name]
        if not path:
            raise ConfigError(f"{key}: a ${{{self.name}:...}} reference needs a path: ${{{self.name}:/path:{name}}}",
                              key)
        where = self._check_path(path, key)
        if self.kind == "dir":
            # The name is checked as well, once joined: "../x", "/x" or a link would leave the folder.
            file = self._check_path(Path(path) / name, key)
            try:
                return file.read_text(encoding="utf-8")
            except OSError as exc:
                raise NeededAtRunTime(f"{key}: cannot read {Path(path) / name} for config provider {self.name!r}: "
                                  f"{exc.strerror or exc}", key) from None
            except UnicodeDecodeError as exc:
                raise ConfigError(f"{key}: {Path(path) / name} (config provider {self.name!r}) is not UTF-8 text: "
                                  f"{exc.reason} at byte {exc.start}", key) from None
        try:
            values = parse_properties(where.read_text(encoding="utf-8-sig"))
        except OSError as exc:
            raise NeededAtRunTime(f"{key}: cannot read properties file {path} for config provider {self.name!r}: "
                                  f"{exc.strerror or exc}", key) from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{key}: cannot read properties file {path} for config provider {self.name!r}: "
                              f"{exc}", key) from None
        if name not in values:
            raise NeededAtRunTime(f"{key}: {path} has no key {name!r} (config provider {self.name!r})", key)
        return values[name]


def _providers(props: Mapping[str, str]) -> dict[str, _Provider]:
    out = {}
    for name in (n.strip() for n in props.get("config.providers", "").split(",") if n.strip()):
        key = f"config.providers.{name}.class"
        cls = props.get(key, "").strip()
        kind = _CLASSES.get(cls)
        if kind is None:
            raise ConfigError(f"{key} = {cls or '(missing)'}: mirrorspark resolves Kafka's FileConfigProvider, "
                              "EnvVarConfigProvider and DirectoryConfigProvider; another provider would leave its "
                              "references unresolved", key)
        allowed = props.get(f"config.providers.{name}.param.allowed.paths")
        out[name] = _Provider(name, kind, [p.strip() for p in allowed.split(",") if p.strip()]
                              if allowed is not None else None, _allowlist(props, name))
    return out


def _allowlist(props: Mapping[str, str], name: str) -> regex.Pattern[str] | None:
    key = f"config.providers.{name}.param.allowlist.pattern"
    if key not in props:
        return None
    try:
        return compile_java(props[key])  # Kafka's EnvVarConfigProvider compiles it with java.util.regex
    except JavaRegexError as exc:
        raise ConfigError(f"{key} is not a valid regular expression: {exc}", key) from None


def resolve_providers(props: Mapping[str, str], pending: dict[str, str] | None = None) -> dict[str, str]:
    """``props`` with every reference to a declared provider replaced by its value. With ``pending``
    (``validate --offline``), a reference this machine cannot resolve (NeededAtRunTime) is left as
    written and recorded there by key instead of failing."""
    providers = _providers(props)
    if not providers:
        return dict(props)

    def resolve(key: str, value: str) -> str:
        def one(match: re.Match) -> str:
            provider = providers.get(match[1])
            if provider is None:
                return match[0]  # not a declared provider: left as written, as MM2 leaves it
            try:
                return provider.get(match[2], match[3], key)
            except NeededAtRunTime as exc:
                if pending is None:
                    raise
                pending[key] = str(exc)
                return match[0]
        return _REFERENCE.sub(one, value)

    return {key: value if key.startswith("config.providers") else resolve(key, value) for key, value in props.items()}
