"""Strimzi ``KafkaMirrorMaker2`` resources read as the ``mm2.properties`` they mean.

Most MM2 users on Kubernetes write the resource, not the file. Both layouts are read: the legacy one
(``connectCluster``, ``clusters[]``, ``mirrors[].sourceCluster/targetCluster``; v1alpha1 to v1beta2)
and the one of ``kafka.strimzi.io/v1`` (``target``, ``mirrors[].source``). Strimzi gives each
connector the cluster keys it generates (alias, bootstrap servers, TLS, authentication) plus the
cluster's and the connector's ``config``; here they become the same keys at cluster and flow level.

Secrets and certificates are read where Kubernetes mounts a Secret: one folder per Secret, one
file per key, under a secrets folder (``--secrets-dir``, default ``/etc/mirrorspark/secrets``), through
Kafka's DirectoryConfigProvider, so no secret is ever written into the generated properties.
Deployment fields (replicas, resources, template...) are not about the copy and are listed as
ignored; a field that would change the copy and has no equivalent is refused, naming it.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mirrorspark.errors import ConfigError

DEFAULT_SECRETS_DIR = "/etc/mirrorspark/secrets"
SECRETS_ENV = "MIRRORSPARK_SECRETS_DIR"
PROVIDER = "mounted"  # not a name with "secret" in it: its allowed.paths would be hidden as a secret
_GROUPS = ("kafka.strimzi.io/", "eventstreams.ibm.com/")
_KIND = re.compile(r"^kind:\s*[\"']?KafkaMirrorMaker2[\"']?\s*(#.*)?$", re.M)
# Kubernetes deployment fields: how the pods run, not what they copy.
_DEPLOYMENT = {"version", "replicas", "image", "resources", "livenessProbe", "readinessProbe", "jvmOptions",
               "jmxOptions", "logging", "clientRackInitImage", "rack", "metricsConfig", "tracing", "template",
               "externalConfiguration"}
_CONNECTORS = {"sourceConnector": "MirrorSourceConnector", "checkpointConnector": "MirrorCheckpointConnector",
               "heartbeatConnector": "MirrorHeartbeatConnector"}
_PATTERNS = {"topicsPattern": "topics", "topicsExcludePattern": "topics.exclude",
             "topicsBlacklistPattern": "topics.exclude", "groupsPattern": "groups",
             "groupsExcludePattern": "groups.exclude", "groupsBlacklistPattern": "groups.exclude"}
_SASL = {"scram-sha-256": "SCRAM-SHA-256", "scram-sha-512": "SCRAM-SHA-512", "plain": "PLAIN"}
_LOGIN = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
          "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
          "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}
_OAUTH_MAPPED = {"type", "clientId", "clientSecret", "tokenEndpointUri", "scope"}


def is_strimzi(text: str) -> bool:
    """The text is YAML holding a ``KafkaMirrorMaker2`` resource (not a properties file)."""
    return bool(_KIND.search(text))


def secrets_dir(given: str | Path | None = None) -> Path:
    """Where Secrets are mounted: the option, else ``MIRRORSPARK_SECRETS_DIR``, else the default."""
    return Path(given or os.environ.get(SECRETS_ENV) or DEFAULT_SECRETS_DIR)


@dataclass
class Conversion:
    """The properties a resource means, and what of it was left out on purpose."""

    properties: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)  # "<field>: why", each a warning
    name: str = ""


def convert(text: str, source: str, secrets: Path) -> Conversion:
    """The ``KafkaMirrorMaker2`` resource of ``text`` (one YAML document among others) as properties."""
    import yaml

    try:
        documents = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source} is not valid YAML: {exc}".replace("\n", " ")) from None
    found = [d for d in documents if d.get("kind") == "KafkaMirrorMaker2"]
    if len(found) != 1:
        raise ConfigError(f"{source} holds {len(found)} KafkaMirrorMaker2 resources: give a file with exactly one",
                          "kind")
    resource = found[0]
    api = str(resource.get("apiVersion", ""))
    if not api.startswith(_GROUPS):
        raise ConfigError(f"apiVersion {api!r} is not a Strimzi KafkaMirrorMaker2 API (kafka.strimzi.io/...)",
                          "apiVersion")
    spec = resource.get("spec")
    if not isinstance(spec, dict):
        raise ConfigError("spec is missing or not a mapping", "spec")
    out = Conversion(name=str((resource.get("metadata") or {}).get("name", "")))
    return _Converter(spec, secrets, out).run()


class _Converter:
    def __init__(self, spec: Mapping[str, Any], secrets: Path, out: Conversion) -> None:
        self.spec = spec
        self.secrets = secrets
        self.out = out
        self.props = out.properties
        self.uses_secrets = False

    def run(self) -> Conversion:
        known = {"connectCluster", "clusters", "mirrors", "target"} | _DEPLOYMENT
        for name in self.spec:
            if name not in known:
                raise ConfigError(f"spec.{name} is not a KafkaMirrorMaker2 field mirrorspark knows; remove it or "
                                  "report it", f"spec.{name}")
        self.out.ignored.extend(f"spec.{name} is a Kubernetes deployment field: ignored (mirrorspark's own deployment "
                                "decides it)" for name in self.spec if name in _DEPLOYMENT)
        clusters, target = self._clusters()
        self.props["clusters"] = ", ".join(clusters)
        # Strimzi runs the connectors a mirror declares, not MM2's dedicated mode that beats for every pair.
        self.props["emit.heartbeats.enabled"] = "false"
        for alias, cluster in clusters.items():
            self._cluster(alias, cluster["spec"], cluster["where"])
        mirrors = self.spec.get("mirrors")
        if not isinstance(mirrors, list) or not mirrors:
            raise ConfigError("spec.mirrors must list at least one mirror", "spec.mirrors")
        for index, mirror in enumerate(mirrors):
            self._mirror(index, mirror, clusters, target)
        if self.uses_secrets:
            self.props["config.providers"] = PROVIDER
            self.props[f"config.providers.{PROVIDER}.class"] = \
                "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
            self.props[f"config.providers.{PROVIDER}.param.allowed.paths"] = str(self.secrets)
        return self.out

    # -- clusters -------------------------------------------------------------------------------
    def _clusters(self) -> tuple[dict[str, dict[str, Any]], str]:
        """Alias -> {spec, where} in the resource's order, and the target (Connect) cluster's alias."""
        out: dict[str, dict[str, Any]] = {}

        def add(spec: Any, where: str) -> str:
            if not isinstance(spec, dict) or not spec.get("alias") or not spec.get("bootstrapServers"):
                raise ConfigError(f"{where} needs alias and bootstrapServers", where)
            alias = str(spec["alias"])
            if alias in out:
                raise ConfigError(f"{where}.alias {alias!r} is used twice", f"{where}.alias")
            out[alias] = {"spec": spec, "where": where}
            return alias

        if "target" in self.spec:
            if "clusters" in self.spec or "connectCluster" in self.spec:
                raise ConfigError("spec.target and spec.clusters/connectCluster are two layouts: use one",
                                  "spec.target")
            target = add(self.spec["target"], "spec.target")
            for index, mirror in enumerate(self.spec.get("mirrors") or []):
                source = mirror.get("source") if isinstance(mirror, dict) else None
                if source is not None:
                    alias = str(source.get("alias", "")) if isinstance(source, dict) else ""
                    if alias not in out or out[alias]["spec"] != source:
                        add(source, f"spec.mirrors[{index}].source")
            return out, target
        clusters = self.spec.get("clusters")
        if not isinstance(clusters, list) or not clusters:
            raise ConfigError("spec.clusters (or spec.target) must list the clusters", "spec.clusters")
        for index, cluster in enumerate(clusters):
            add(cluster, f"spec.clusters[{index}]")
        target = str(self.spec.get("connectCluster", ""))
        if target not in out:
            raise ConfigError(f"spec.connectCluster {target!r} is not an alias of spec.clusters", "spec.connectCluster")
        return out, target

    def _cluster(self, alias: str, spec: Mapping[str, Any], where: str) -> None:
        props = self.props
        props[f"{alias}.bootstrap.servers"] = str(spec["bootstrapServers"])
        known = {"alias", "bootstrapServers", "tls", "authentication", "config", "groupId", "configStorageTopic",
                 "offsetStorageTopic", "statusStorageTopic"}
        for name in spec:
            if name not in known:
                raise ConfigError(f"{where}.{name} is not a cluster field mirrorspark knows", f"{where}.{name}")
        tls = spec.get("tls")
        sasl = False
        auth = spec.get("authentication")
        if auth is not None:
            sasl = self._authentication(alias, auth, f"{where}.authentication")
        if tls is not None:
            self._trust(alias, tls, f"{where}.tls")
        protocol = ("SASL_SSL" if tls is not None else "SASL_PLAINTEXT") if sasl else \
            ("SSL" if tls is not None else None)
        if protocol is not None:
            props[f"{alias}.security.protocol"] = protocol
        for key, value in (spec.get("config") or {}).items():
            props[f"{alias}.{key}"] = _text(value)

    def _secret(self, ref: Any, key_field: str, where: str) -> str:
        """A provider reference to one key of a mounted Secret."""
        if not isinstance(ref, dict) or not ref.get("secretName") or not ref.get(key_field):
            raise ConfigError(f"{where} needs secretName and {key_field}", where)
        self.uses_secrets = True
        return f"${{{PROVIDER}:{self.secrets / str(ref['secretName'])}:{ref[key_field]}}}"

    def _trust(self, alias: str, tls: Any, where: str) -> None:
        certificates = (tls or {}).get("trustedCertificates") or []
        if not certificates:
            return  # TLS with the JVM's and librdkafka's default trust
        refs = []
        for index, cert in enumerate(certificates):
            here = f"{where}.trustedCertificates[{index}]"
            if isinstance(cert, dict) and cert.get("pattern") and not cert.get("certificate"):
                folder = self.secrets / str(cert.get("secretName", ""))
                names = sorted(p.name for p in folder.glob(str(cert["pattern"]))) if folder.is_dir() else []
                # Not mounted here (a CI machine): the reference names the pattern, and is needed at run time.
                for name in names or [str(cert["pattern"])]:
                    refs.append(self._secret({"secretName": cert.get("secretName"), "certificate": name},
                                             "certificate", here))
            else:
                refs.append(self._secret(cert, "certificate", here))
        self.props[f"{alias}.ssl.truststore.type"] = "PEM"
        self.props[f"{alias}.ssl.truststore.certificates"] = "\n".join(refs)

    def _authentication(self, alias: str, auth: Any, where: str) -> bool:
        """The cluster's client authentication; True when it is SASL."""
        if not isinstance(auth, dict):
            raise ConfigError(f"{where} must be a mapping", where)
        kind = str(auth.get("type", ""))
        props = self.props
        if kind == "tls":
            pair = auth.get("certificateAndKey")
            props[f"{alias}.ssl.keystore.type"] = "PEM"
            props[f"{alias}.ssl.keystore.certificate.chain"] = self._secret(pair, "certificate",
                                                                            f"{where}.certificateAndKey")
            props[f"{alias}.ssl.keystore.key"] = self._secret(pair, "key", f"{where}.certificateAndKey")
            return False
        if kind in _SASL:
            mechanism = _SASL[kind]
            if not auth.get("username"):
                raise ConfigError(f"{where}.username is required for {kind}", f"{where}.username")
            password = self._secret(auth.get("passwordSecret"), "password", f"{where}.passwordSecret")
            props[f"{alias}.sasl.mechanism"] = mechanism
            props[f"{alias}.sasl.jaas.config"] = (f'{_LOGIN[mechanism]} required username="{auth["username"]}" '
                                                  f'password="{password}";')
            return True
        if kind == "oauth":
            extra = sorted(set(auth) - _OAUTH_MAPPED)
            if extra:
                raise ConfigError(f"{where}.{extra[0]} (oauth) has no equivalent in Kafka's own OAuth client, which "
                                  "mirrorspark uses instead of Strimzi's: client credentials (clientId, clientSecret, "
                                  "tokenEndpointUri, scope) only", f"{where}.{extra[0]}")
            for needed in ("clientId", "clientSecret", "tokenEndpointUri"):
                if not auth.get(needed):
                    raise ConfigError(f"{where}.{needed} is required for oauth", f"{where}.{needed}")
            secret = self._secret(auth["clientSecret"], "key", f"{where}.clientSecret")
            options = f'clientId="{auth["clientId"]}" clientSecret="{secret}"'
            if auth.get("scope"):
                options += f' scope="{auth["scope"]}"'
            props[f"{alias}.sasl.mechanism"] = "OAUTHBEARER"
            props[f"{alias}.sasl.oauthbearer.token.endpoint.url"] = str(auth["tokenEndpointUri"])
            props[f"{alias}.sasl.login.callback.handler.class"] = \
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
            props[f"{alias}.sasl.jaas.config"] = \
                f"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required {options};"
            return True
        if kind == "custom":
            for key, value in (auth.get("config") or {}).items():
                props[f"{alias}.{key}"] = _text(value)
            return bool(auth.get("sasl"))
        raise ConfigError(f"{where}.type {kind!r} is not one of tls, scram-sha-256, scram-sha-512, plain, oauth, "
                          "custom", f"{where}.type")

    # -- mirrors --------------------------------------------------------------------------------
    def _mirror(self, index: int, mirror: Any, clusters: Mapping[str, Any], target: str) -> None:
        where = f"spec.mirrors[{index}]"
        if not isinstance(mirror, dict):
            raise ConfigError(f"{where} must be a mapping", where)
        known = {"source", "sourceCluster", "targetCluster", *_CONNECTORS, *_PATTERNS}
        for name in mirror:
            if name not in known:
                raise ConfigError(f"{where}.{name} is not a mirror field mirrorspark knows", f"{where}.{name}")
        source = str(mirror["source"].get("alias")) if isinstance(mirror.get("source"), dict) \
            else str(mirror.get("sourceCluster", ""))
        into = str(mirror.get("targetCluster", target))
        for alias, name in ((source, "sourceCluster"), (into, "targetCluster")):
            if alias not in clusters:
                raise ConfigError(f"{where}.{name} {alias!r} is not a cluster alias of the resource",
                                  f"{where}.{name}")
        if into != target:  # Strimzi refuses it too: the connectors run in the target's Connect cluster
            raise ConfigError(f"{where}.targetCluster {into!r} is not spec.connectCluster {target!r}",
                              f"{where}.targetCluster")
        if "sourceConnector" not in mirror:
            raise ConfigError(f"{where}.sourceConnector is missing: Strimzi would run the other connectors only "
                              "(offsets translated for a copy made by something else); mirrorspark copies and "
                              "translates together: add `sourceConnector: {}` to copy the topics",
                              f"{where}.sourceConnector")
        flow = f"{source}->{into}"
        props = self.props
        props[f"{flow}.enabled"] = "true"
        settings: dict[str, tuple[str, str]] = {}  # key -> (value, field it came from)
        for connector in _CONNECTORS:
            spec = mirror.get(connector)
            here = f"{where}.{connector}"
            if spec is None:
                continue
            if not isinstance(spec, dict):
                raise ConfigError(f"{here} must be a mapping", here)
            state = str(spec.get("state", "paused" if spec.get("pause") else "running"))
            if state != "running":
                raise ConfigError(f"{here}.state {state!r}: a connector that does not run has no equivalent in a "
                                  "flow; disable the mirror or let it run", f"{here}.state")
            self.out.ignored.extend(f"{here}.{name} is a Kafka Connect connector field: ignored (mirrorspark sizes "
                                    "its tasks and restarts its flows itself)"
                                    for name in ("tasksMax", "autoRestart", "version", "listOffsets", "alterOffsets")
                                    if name in spec)
            for key, value in (spec.get("config") or {}).items():
                text = _text(value)
                if key in settings and settings[key][0] != text:
                    raise ConfigError(f"{here}.config.{key} = {text!r} and {settings[key][1]} = "
                                      f"{settings[key][0]!r}: one flow has one value per key", f"{here}.config.{key}")
                settings[key] = (text, f"{here}.config.{key}")
        for key, (value, _) in settings.items():
            props[f"{flow}.{key}"] = value
        if "checkpointConnector" not in mirror:
            props[f"{flow}.emit.checkpoints.enabled"] = "false"
            props[f"{flow}.sync.group.offsets.enabled"] = "false"
        if "heartbeatConnector" in mirror:
            props.setdefault(f"{flow}.emit.heartbeats.enabled", "true")
        for name, key in _PATTERNS.items():
            if mirror.get(name) is not None:
                if "Blacklist" in name and mirror.get(name.replace("Blacklist", "Exclude")) is not None:
                    continue  # Strimzi prefers the Exclude field
                # Strimzi hands the pattern to MM2 as one regex; a comma in it would split MM2's LIST.
                props[f"{flow}.{key}"] = _text(mirror[name])


def _text(value: Any) -> str:
    """A YAML scalar as MM2 would read it from a properties file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def to_properties(conversion: Conversion, source: str) -> str:
    """The conversion as an ``mm2.properties`` text (``migrate from-strimzi``)."""
    from mirrorspark.config.properties_file import escape_key, escape_value

    lines = [f"# mm2.properties equivalent of KafkaMirrorMaker2 {conversion.name or '(unnamed)'} ({source}),",
             "# written by mirrorspark migrate from-strimzi. Secrets stay in their mounted files."]
    lines += [f"# {note}" for note in conversion.ignored]
    lines += [f"{escape_key(k)} = {escape_value(v)}" for k, v in conversion.properties.items()]
    return "\n".join(lines) + "\n"
