"""Build the policy a flow asks for: MM2's built-in class names, a Java class of the user's jars
(``plugin.path`` or ``spark.jars``, loaded in the plug-in JVM) or a Python import path.

``replication.policy.class`` may name any Python module, and importing a module runs its code.
``check_policy_class`` (what ``validate`` and run's preflight use) therefore only checks the form and
that the top-level package exists, with ``importlib.util.find_spec`` on the top-level name, which
executes nothing. Only ``policy_for_flow``, when flows are about to run, imports, and logs what.
"""
from __future__ import annotations

import importlib
import importlib.util
import logging
import re
from collections.abc import Mapping

from mirrorspark.config.keys import builtin_policy
from mirrorspark.config.settings import SettingsReader
from mirrorspark.errors import ConfigError
from mirrorspark.plugins.jars import where_looked
from mirrorspark.plugins.loading import java_class_found, java_plugin
from mirrorspark.policy.base import ReplicationPolicy
from mirrorspark.policy.default import DefaultReplicationPolicy
from mirrorspark.policy.identity import IdentityReplicationPolicy
from mirrorspark.policy.java_policy import JavaReplicationPolicy

log = logging.getLogger(__name__)

POLICY_KEY = "replication.policy.class"
_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_FORMS = ("a Java class in a jar of plugin.path (as for MM2) or spark.jars, a Python import path "
          "'package.module.Class' or 'package.module:Class', or one of MM2's built-in policy class names "
          "(org.apache.kafka.connect.mirror.DefaultReplicationPolicy or ...IdentityReplicationPolicy)")


def policy_name(settings: Mapping[str, str]) -> str:
    return SettingsReader(settings).text(POLICY_KEY)


def split_class_path(name: str, where: str = POLICY_KEY) -> tuple[str, str]:
    """``module:Class`` or ``module.Class`` -> (module, class); anything else names the key."""
    module, colon, cls = name.partition(":")
    if not colon:
        module, _, cls = name.rpartition(".")
    if not module or not _DOTTED.match(module) or not cls.isidentifier():
        raise ConfigError(f"{where}={name!r} is not a class name: use {_FORMS}", where)
    return module, cls


def check_policy_class(settings: Mapping[str, str], where: str = POLICY_KEY) -> str:
    """The policy's kind (``default``, ``identity``, ``java``, ``custom``), checked without importing
    or loading anything: the form, and that a jar of the plug-in places holds the Java class or the
    top-level package of a Python policy can be found."""
    name = policy_name(settings)
    kind = builtin_policy(name)
    if kind is not None:
        return kind
    module, _ = split_class_path(name, where)
    if java_class_found(settings, name):
        return "java"
    top = module.split(".")[0]
    try:
        found = importlib.util.find_spec(top) is not None  # a top-level name: no parent package is imported
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ConfigError(f"{where}={name!r}: no jar holds this Java class ({where_looked(settings)}) and there is "
                          f"no Python package {top!r} to import it from; use {_FORMS}", where)
    return "custom"


def policy_label(settings: Mapping[str, str]) -> str:
    """How ``validate`` names the policy without importing it."""
    kind = builtin_policy(policy_name(settings))
    if kind == "default":
        return "DefaultReplicationPolicy"
    if kind == "identity":
        return "IdentityReplicationPolicy"
    if java_class_found(settings, policy_name(settings)):
        return f"{policy_name(settings)} (Java, from the plug-in jars; loaded only when flows run)"
    return f"{policy_name(settings)} (custom; imported only when flows run)"


def policy_for_flow(settings: Mapping[str, str], source_alias: str, where: str = POLICY_KEY) -> ReplicationPolicy:
    """The ReplicationPolicy configured by a flow's resolved settings; a custom class is imported here."""
    name = policy_name(settings)
    read = SettingsReader(settings)  # the declared defaults (config/keys.py), not ones of its own
    separator = read.raw("replication.policy.separator").strip()  # empty is kept, as MM2 keeps it
    internal_sep = read.flag("replication.policy.internal.topic.separator.enabled")
    kind = check_policy_class(settings, where)
    if kind in ("default", "identity"):
        source_name, target_name = settings.get("source.cluster.alias"), settings.get("target.cluster.alias")
        builtin = DefaultReplicationPolicy(separator, internal_sep) if kind == "default" else \
            IdentityReplicationPolicy(source_alias if source_name is None else source_name.strip(), separator,
                                      internal_sep)
        builtin.source_name = None if source_name is None else source_name.strip()
        builtin.target_name = None if target_name is None else target_name.strip()
        builtin.syncs_on_target = read.choice("offset-syncs.topic.location") == "target"
        return builtin
    if kind == "java":
        extra = {"source.cluster.alias": source_alias} if "source.cluster.alias" not in settings else {}
        return JavaReplicationPolicy(java_plugin(settings, POLICY_KEY, name, where, extra), name, where)
    module_name, class_name = split_class_path(name, where)
    try:
        module = importlib.import_module(module_name)
        cls = getattr(module, class_name)
    except Exception as exc:  # noqa: BLE001 - importing runs the module: any error means the class is unusable
        raise ConfigError(f"{where}={name!r} cannot be loaded ({type(exc).__name__}: {exc}); use {_FORMS}",
                          where) from None
    if not (isinstance(cls, type) and issubclass(cls, ReplicationPolicy)):
        raise ConfigError(f"{where}={name!r} is not a mirrorspark.policy.ReplicationPolicy", where)
    log.info("%s: imported class %s from module %s (%s)", where, class_name, module_name,
             getattr(module, "__file__", None) or "built in")
    try:
        policy = cls()
        configure = getattr(policy, "configure", None)
        if callable(configure):
            configure(dict(settings))
    except Exception as exc:  # noqa: BLE001 - the user's code: whatever it raises is a configuration problem
        raise ConfigError(f"{where}={name!r} failed to initialise: {type(exc).__name__}: {exc}", where) from None
    return policy


def check_cycle_policy(policy: ReplicationPolicy, *, flow_name: str, source_alias: str, cycle: str,
                       where: str) -> None:
    """A custom policy in a cycle of flows: MM2 runs it and stops records coming back only through the
    policy's ``topicSource`` on the remote names it makes. Checked once it is imported: a policy whose
    remote names do not say where they came from would copy records round the cycle for ever."""
    probe = "mirrorspark-cycle-probe"
    try:
        remote = policy.format_remote_topic(source_alias, probe)
        found = policy.topic_source(remote)
    except Exception as exc:  # noqa: BLE001 - a plug-in's failure, reported naming it
        raise ConfigError(f"{where}: flow {flow_name}'s policy failed when asked to name a remote topic: {exc}",
                          where) from None
    if found != source_alias:
        raise ConfigError(
            f"{where}: the enabled flows {cycle} form a cycle, and {flow_name}'s policy names a remote topic "
            f"{remote!r} whose source it reports as {found!r}, not {source_alias!r}: MM2 and mirrorspark stop a cycle "
            "only by the source alias a remote name carries, so records would come back and be copied again; fix "
            "the policy's topicSource, or disable one flow of the cycle", where)
