"""Build the policy a flow asks for: MM2's Java class names or a Python import path."""
from __future__ import annotations

import importlib
from collections.abc import Mapping

from mirrorspark.config.errors import ConfigError
from mirrorspark.config.model import parse_bool
from mirrorspark.policy.base import ReplicationPolicy
from mirrorspark.policy.default import DefaultReplicationPolicy
from mirrorspark.policy.identity import IdentityReplicationPolicy

POLICY_KEY = "replication.policy.class"
_BUILTIN = {
    "org.apache.kafka.connect.mirror.DefaultReplicationPolicy": "default",
    "DefaultReplicationPolicy": "default",
    "mirrorspark.policy.DefaultReplicationPolicy": "default",
    "org.apache.kafka.connect.mirror.IdentityReplicationPolicy": "identity",
    "IdentityReplicationPolicy": "identity",
    "mirrorspark.policy.IdentityReplicationPolicy": "identity",
}


def policy_for_flow(settings: Mapping[str, str], source_alias: str) -> ReplicationPolicy:
    """The ReplicationPolicy configured by a flow's resolved settings."""
    name = settings.get(POLICY_KEY, "org.apache.kafka.connect.mirror.DefaultReplicationPolicy").strip()
    separator = settings.get("replication.policy.separator", ".")
    sep_key = "replication.policy.internal.topic.separator.enabled"
    internal_sep = parse_bool(settings.get(sep_key, "true"), sep_key)
    kind = _BUILTIN.get(name)
    if kind == "default":
        return DefaultReplicationPolicy(separator, internal_sep)
    if kind == "identity":
        return IdentityReplicationPolicy(source_alias, separator, internal_sep)
    module_name, _, class_name = name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(
            f"{POLICY_KEY}={name!r} cannot be loaded ({exc}); use a Python import path "
            "'package.module.Class' or one of MM2's built-in policy class names",
            POLICY_KEY,
        ) from exc
    if not (isinstance(cls, type) and issubclass(cls, ReplicationPolicy)):
        raise ConfigError(f"{POLICY_KEY}={name!r} is not a mirrorspark.policy.ReplicationPolicy", POLICY_KEY)
    policy = cls()
    configure = getattr(policy, "configure", None)
    if callable(configure):
        configure(dict(settings))
    return policy
