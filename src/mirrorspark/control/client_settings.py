"""Translate MM2's Java-style client settings into librdkafka settings for the control plane.

The data plane (Spark's Kafka source and sink) runs the Java client and takes MM2 users' settings
as they are. The control plane uses librdkafka, which speaks the same protocols with other key
names and file formats:

- ``sasl.jaas.config`` with PLAIN or SCRAM login modules -> ``sasl.username``/``sasl.password``;
- JKS or PKCS12 truststores -> a PEM CA file (exported with the JDK's keytool, which Spark needs
  anyway); PEM truststores and inline PEM certificates are used directly;
- PKCS12 keystores are read by librdkafka as they are; JKS keystores are converted to PKCS12;
- ``ssl.endpoint.identification.algorithm`` empty -> ``none``.

Settings librdkafka cannot honour (Kerberos, OAuth, Java cipher suite names) fail with a message
naming the key and saying what to provide instead.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mirrorspark import jdk
from mirrorspark.errors import ConfigError, NeededAtRunTime

if TYPE_CHECKING:
    from mirrorspark.config.model import ClusterConfig

# Keys whose name and meaning are the same in the Java client and librdkafka.
_SAME = {"bootstrap.servers", "client.id", "sasl.username", "sasl.password", "ssl.ca.location",
         "ssl.certificate.location", "ssl.key.location", "ssl.key.password", "ssl.ca.pem",
         "ssl.certificate.pem", "ssl.key.pem", "client.dns.lookup"}
_RENAMED = {"request.timeout.ms": "socket.timeout.ms", "ssl.keystore.certificate.chain": "ssl.certificate.pem",
            "ssl.keystore.key": "ssl.key.pem"}
_SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
# Kafka's own OIDC client-credentials login (the handler moved package in 3.4; both names load it).
_OIDC_HANDLERS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
                  "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler")
_JAAS = re.compile(r'^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)(?P<opts>.*?);?\s*$',
                   re.DOTALL)
_JAAS_OPTION = re.compile(r'\s*([\w.\-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;]+)')
_LOGIN_MODULES = {"PLAIN": "PlainLoginModule", "SCRAM-SHA-256": "ScramLoginModule",
                  "SCRAM-SHA-512": "ScramLoginModule"}


def admin_properties(cluster: ClusterConfig) -> dict[str, str]:
    """Java-style settings of ``cluster``'s admin client: its connection settings, then its
    ``<alias>.admin.*`` overrides (MM2's order)."""
    return {**cluster.connection(), **cluster.role_overrides("admin")}


def admin_settings(cluster: ClusterConfig) -> dict[str, str]:
    """The control plane's client settings of ``cluster``: Kafka's Java client's (its keys unchanged,
    see ``java_clients``) when ``mirrorspark.control.clients`` says so, or, under ``auto``, when only
    the Java client honours them; else librdkafka's. Error messages name keys ``<alias>.<key>``."""
    props = admin_properties(cluster)
    choice = cluster.client_options.get("mirrorspark.control.clients", "java").strip().lower()
    if choice == "java" or (choice == "auto" and java_only(props)):
        from mirrorspark.plugins.jars import plugin_classpath

        classpath = plugin_classpath(cluster.client_options)
        _check_kerberos(props, cluster.alias)
        _check_classes(props, classpath, cluster)
        if not java_only(props):
            # Kafka's Java client would only fail at its first connection (a JAAS entry missing or for
            # another mechanism, a store that does not open with its password): the same checks as for
            # librdkafka, refused naming the key before any client is made; nothing is converted.
            # librdkafka's sasl.username/sasl.password are no keys of Kafka's: they stand for no JAAS entry.
            librdkafka_admin({k: v for k, v in props.items() if k not in ("sasl.username", "sasl.password")},
                             f"{cluster.alias}.", check_only=True)
        return java_conf(props, classpath)
    return librdkafka_admin(props, f"{cluster.alias}.")


_CLASS_KEYS = ("sasl.login.callback.handler.class", "sasl.client.callback.handler.class", "sasl.login.class",
               "ssl.engine.factory.class")
_LIST_CLASS_KEYS = ("metric.reporters",)


def _named_classes(props: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(key, class)`` for each class of the user's a client key names (Kafka's own are always there)."""
    named = [(key, props.get(key, "").strip()) for key in _CLASS_KEYS]
    named += [(key, item.strip()) for key in _LIST_CLASS_KEYS for item in props.get(key, "").split(",")]
    return [(key, name) for key, name in named if name and not name.startswith("org.apache.kafka.")]


def client_class_jars(clusters: list[ClusterConfig]) -> list[Path]:
    """The jars of ``plugin.path``/``spark.jars`` holding the classes the clusters' client keys name,
    for Spark's classpath: its clients load them too."""
    from mirrorspark.plugins.jars import class_location, plugin_classpath

    jars: list[Path] = []
    for cluster in clusters:
        for _key, name in _named_classes(admin_properties(cluster)):
            place = class_location(name, plugin_classpath(cluster.client_options))
            if place is not None and place.is_file() and place not in jars:
                jars.append(place)
    return jars


def _check_kerberos(props: Mapping[str, str], alias: str) -> None:
    """GSSAPI needs its JAAS entry in the file (mirrorspark's JVMs read no JAAS file), and a Kerberos
    login module in it: a PLAIN or SCRAM entry under the default mechanism is a forgotten
    ``sasl.mechanism``, which Kafka's client would only report when it connects."""
    if not props.get("security.protocol", "").strip().upper().startswith("SASL_") or \
            props.get("sasl.mechanism", "GSSAPI").strip().upper() != "GSSAPI":
        return
    jaas = props.get("sasl.jaas.config", "").strip()
    if not jaas:
        raise ConfigError(f"{alias}.sasl.jaas.config is required with GSSAPI (Kafka's default {alias}.sasl.mechanism): "
                          'e.g. com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="..." '
                          'principal="...";', f"{alias}.sasl.jaas.config")
    module = jaas.split(None, 1)[0]
    if not module.endswith("Krb5LoginModule"):
        unset = "" if "sasl.mechanism" in props else " (unset: GSSAPI, Kafka's default)"
        raise ConfigError(f"{alias}.sasl.mechanism is GSSAPI{unset} but {alias}.sasl.jaas.config uses "
                          f"{module.rsplit('.', 1)[-1]}: set {alias}.sasl.mechanism to the mechanism of that login "
                          "module, or use Krb5LoginModule", f"{alias}.sasl.mechanism")


def _check_classes(props: Mapping[str, str], classpath: list[Path], cluster: ClusterConfig) -> None:
    """Each class a client key names is Kafka's own or in a jar of ``plugin.path``/``spark.jars``, as
    MM2 needs it on its plugin path: refused naming the key, before a client is made."""
    from mirrorspark.plugins.jars import class_location, where_looked

    for key, name in _named_classes(props):
        if class_location(name, classpath) is None:
            where = f"{cluster.alias}.{key}"
            missing = [p for p in cluster.client_options.get("plugin.path", "").split(",")
                       if p.strip() and not Path(p.strip()).expanduser().exists()]
            error = NeededAtRunTime if missing else ConfigError
            raise error(f"{where} = {name!r}: no jar of plugin.path or spark.jars holds this class "
                        f"({where_looked(cluster.client_options)})", where)


def java_only(props: Mapping[str, str]) -> bool:
    """True when librdkafka cannot honour ``props`` as Kafka's Java client does: Kerberos (GSSAPI, the
    Java default mechanism), a SASL login or client callback handler of the user's (MSK IAM), a login
    class, an SSL engine factory, Java cipher suite names, a store type beyond JKS, PKCS12 and PEM, a
    metrics reporter of the user's."""
    if any(key in _LIST_CLASS_KEYS for key, _ in _named_classes(props)):
        return True
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol.startswith("SASL_"):
        mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
        handler = props.get("sasl.login.callback.handler.class", "").strip()
        if mechanism not in _SUPPORTED_MECHANISMS or props.get("sasl.client.callback.handler.class", "").strip() \
                or props.get("sasl.login.class", "").strip():
            return True
        if handler and handler not in _OIDC_HANDLERS:
            return True
        if mechanism == "OAUTHBEARER" and not props.get("sasl.oauthbearer.token.endpoint.url", "").strip().lower() \
                .startswith(("http://", "https://")):
            return True
    if protocol in ("SSL", "SASL_SSL"):
        if props.get("ssl.engine.factory.class", "").strip() or props.get("ssl.cipher.suites", "").strip():
            return True
        for key in ("ssl.truststore.type", "ssl.keystore.type"):
            if props.get(key, "JKS").strip().upper() not in ("JKS", "PKCS12", "PEM"):
                return True
    return False


def java_conf(props: Mapping[str, str], classpath: list[Path]) -> dict[str, str]:
    """Settings that make ``control/admin.py``'s factories build Kafka's Java clients from ``props``
    (unchanged) with ``classpath`` for the classes they name; ``bootstrap.servers`` and
    ``security.protocol`` stay readable for messages."""
    from mirrorspark.control.java_clients import JAVA_CLASSPATH, JAVA_PROPERTIES

    return {"bootstrap.servers": props.get("bootstrap.servers", ""),
            "security.protocol": props.get("security.protocol", "PLAINTEXT"),
            JAVA_PROPERTIES: json.dumps(dict(props)), JAVA_CLASSPATH: os.pathsep.join(str(p) for p in classpath)}


def librdkafka_admin(java_props: Mapping[str, str], where: str = "", check_only: bool = False) -> dict[str, str]:
    """librdkafka settings from Java-style ``bootstrap.servers``/security keys.

    ``where`` prefixes key names in error messages (e.g. ``backup.``) so they name the key as the
    user wrote it. ``check_only``: stores are opened with their passwords but not converted (the
    settings are for checking, Kafka's Java client reads the stores itself).
    """
    conf: dict[str, str] = {}
    for key, value in java_props.items():
        if key in _SAME:
            conf[key] = value
        elif key in _RENAMED:
            conf[_RENAMED[key]] = value
    protocol = java_props.get("security.protocol", "PLAINTEXT").strip().upper()
    conf["security.protocol"] = protocol
    if protocol.startswith("SASL_"):
        conf.update(_sasl(java_props, where))
    if protocol in ("SSL", "SASL_SSL"):
        conf.update(_tls(java_props, where, check_only))
    return conf


def _sasl(props: Mapping[str, str], where: str) -> dict[str, str]:
    mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
    if mechanism not in _SUPPORTED_MECHANISMS:
        raise ConfigError(
            f"{where}sasl.mechanism={mechanism} is not supported by mirrorspark's control plane "
            f"(supported: {', '.join(_SUPPORTED_MECHANISMS)}); GSSAPI is the Java default when the key is unset, "
            f"so set {where}sasl.mechanism explicitly", f"{where}sasl.mechanism")
    conf = {"sasl.mechanisms": mechanism}
    if mechanism == "OAUTHBEARER":
        conf.update(_oidc(props, where))
        return conf
    if "sasl.username" in props and "sasl.password" in props:
        return conf
    jaas = props.get("sasl.jaas.config")
    if not jaas:
        raise ConfigError(f"{where}sasl.jaas.config is required with {where}security.protocol="
                          f"{props.get('security.protocol')} (e.g. {_LOGIN_MODULES[mechanism]} required "
                          'username="..." password="...";)', f"{where}sasl.jaas.config")
    module, options = parse_jaas(jaas, f"{where}sasl.jaas.config")
    if not module.endswith(_LOGIN_MODULES[mechanism]):
        raise ConfigError(f"{where}sasl.jaas.config uses {module.rsplit('.', 1)[-1]} but {where}sasl.mechanism is "
                          f"{mechanism}: use {_LOGIN_MODULES[mechanism]}", f"{where}sasl.jaas.config")
    missing = [name for name in ("username", "password") if name not in options]
    if missing:
        raise ConfigError(f"{where}sasl.jaas.config lacks {' and '.join(missing)}", f"{where}sasl.jaas.config")
    conf.update({"sasl.username": options["username"], "sasl.password": options["password"]})
    return conf


def _oidc(props: Mapping[str, str], where: str) -> dict[str, str]:
    """OAUTHBEARER as Kafka's Java client does it with its own login handler: a client-credentials
    token from ``sasl.oauthbearer.token.endpoint.url`` (client id, secret and scope in the JAAS entry,
    or in the KIP-1139 keys). librdkafka's OIDC method asks the same endpoint the same way. Any other
    login handler (a cloud's IAM handler, a class of the user's) is Java code the control plane
    cannot run: refused, naming the key."""
    handler_key = f"{where}sasl.login.callback.handler.class"
    handler = props.get("sasl.login.callback.handler.class", "").strip()
    endpoint = props.get("sasl.oauthbearer.token.endpoint.url", "").strip()
    if handler not in _OIDC_HANDLERS:
        raise ConfigError(
            f"{handler_key}={handler or '(unset: the unsecured test login)'} is not supported by mirrorspark's control "
            f"plane with sasl.mechanism=OAUTHBEARER: it runs Kafka's client-credentials login only "
            f"({_OIDC_HANDLERS[0]} with {where}sasl.oauthbearer.token.endpoint.url)", handler_key)
    if not endpoint.lower().startswith(("http://", "https://")):
        raise ConfigError(f"{where}sasl.oauthbearer.token.endpoint.url must be the identity provider's http(s) token "
                          "endpoint (a file of a ready-made token is not supported by the control plane)",
                          f"{where}sasl.oauthbearer.token.endpoint.url")
    jaas_key = f"{where}sasl.jaas.config"
    jaas = props.get("sasl.jaas.config")
    module, options = parse_jaas(jaas, jaas_key) if jaas else ("OAuthBearerLoginModule", {})
    if not module.endswith("OAuthBearerLoginModule"):
        raise ConfigError(f"{jaas_key} uses {module.rsplit('.', 1)[-1]} but {where}sasl.mechanism is OAUTHBEARER: use "
                          "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule", jaas_key)
    client_id = props.get("sasl.oauthbearer.client.credentials.client.id") or options.get("clientId")
    secret = props.get("sasl.oauthbearer.client.credentials.client.secret") or options.get("clientSecret")
    if not client_id or not secret:
        raise ConfigError(f"{jaas_key} lacks clientId and clientSecret (Kafka's client-credentials login)", jaas_key)
    conf = {"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": client_id,
            "sasl.oauthbearer.client.secret": secret, "sasl.oauthbearer.token.endpoint.url": endpoint}
    scope = props.get("sasl.oauthbearer.scope") or options.get("scope")
    if scope:
        conf["sasl.oauthbearer.scope"] = scope
    extensions = {k.removeprefix("extension_"): v for k, v in options.items() if k.startswith("extension_")}
    if extensions:
        conf["sasl.oauthbearer.extensions"] = ",".join(f"{k}={v}" for k, v in sorted(extensions.items()))
    return conf


def parse_jaas(text: str, key: str) -> tuple[str, dict[str, str]]:
    """``Module required a="b" c=d;`` -> (module, options); the message never echoes the value."""
    match = _JAAS.match(text)
    if not match:
        raise ConfigError(f"{key} is not a JAAS entry of the form '<LoginModule> required name=\"value\" ...;'", key)
    options: dict[str, str] = {}
    rest = match.group("opts").strip()
    for opt in _JAAS_OPTION.finditer(rest):
        value = opt.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        options[opt.group(1)] = value
    leftover = _JAAS_OPTION.sub("", rest).strip().rstrip(";").strip()
    if leftover:
        raise ConfigError(f"{key} has text that is not a name=value option after the login module flag", key)
    return match.group("module"), options


def _tls(props: Mapping[str, str], where: str, check_only: bool = False) -> dict[str, str]:
    conf: dict[str, str] = {}
    algorithm = props.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        conf["ssl.endpoint.identification.algorithm"] = algorithm.strip().lower() or "none"
    trust = props.get("ssl.truststore.location")
    trust_type = props.get("ssl.truststore.type", "JKS").strip().upper()
    if props.get("ssl.truststore.certificates"):
        conf["ssl.ca.pem"] = props["ssl.truststore.certificates"]
    elif trust:
        if trust_type == "PEM":
            conf["ssl.ca.location"] = trust
        elif trust_type in ("JKS", "PKCS12"):
            conf["ssl.ca.location"] = str(_converted().truststore_pem(
                trust, props.get("ssl.truststore.password"), trust_type, f"{where}ssl.truststore.location",
                check_only))
        else:
            raise ConfigError(f"{where}ssl.truststore.type={trust_type} is not supported: use JKS, PKCS12 or PEM",
                              f"{where}ssl.truststore.type")
    keystore = props.get("ssl.keystore.location")
    if keystore:
        store_type = props.get("ssl.keystore.type", "JKS").strip().upper()
        password = props.get("ssl.keystore.password")
        key = f"{where}ssl.keystore.location"
        if store_type == "PKCS12":
            conf["ssl.keystore.location"] = keystore
        elif store_type == "JKS":
            conf["ssl.keystore.location"] = str(_converted().keystore_p12(keystore, password, key, check_only))
        elif store_type == "PEM":
            conf["ssl.certificate.location"] = keystore
            conf["ssl.key.location"] = keystore
        else:
            raise ConfigError(f"{where}ssl.keystore.type={store_type} is not supported: use JKS, PKCS12 or PEM",
                              f"{where}ssl.keystore.type")
        if password:
            conf["ssl.keystore.password"] = password
            if store_type == "PEM":
                conf["ssl.key.password"] = props.get("ssl.key.password", password)
    return conf


CONVERTED = "converted-keys"  # under <state-dir>/private/


class _ConvertedStores:
    """JKS/PKCS12 stores converted once per process into ``<state-dir>/private/converted-keys/<pid>``.

    Not the system temp folder: a crash there leaves key material where other users' tools look
    and nobody cleans. Under the state dir the folders are 0700, removed at exit, and a later
    process removes what a dead one left."""

    def __init__(self) -> None:
        self._state_dir: Path | None = None
        self._folder: Path | None = None
        self._done: dict[tuple[str, float, str], Path] = {}
        self._lock = threading.Lock()
        self.check_only = False  # set by validate's preflight: convert into a scratch folder, keep nothing

    def use_state_dir(self, state_dir: Path) -> None:
        with self._lock:
            if self._folder is None:
                self._state_dir = state_dir

    def _dir(self) -> Path:
        if self._folder is None:
            from mirrorspark.paths import default_state_dir
            from mirrorspark.private_files import private_dir

            base = (self._state_dir or default_state_dir()).resolve() / "private"
            try:
                root = private_dir(private_dir(base) / CONVERTED)
                remove_stale(root)
                self._folder = private_dir(root / str(os.getpid()))
            except OSError as exc:
                raise ConfigError(f"cannot keep converted key material under {base}: {exc.strerror or exc}; "
                                  "choose a writable state dir (--state-dir or MIRRORSPARK_STATE_DIR)",
                                  "--state-dir") from None
            atexit.register(shutil.rmtree, self._folder, True)
        return self._folder

    def truststore_pem(self, location: str, password: str | None, store_type: str, key: str,
                       check_only: bool = False) -> Path:
        return self._convert(location, f"pem-{store_type}-{_digest(password)}", key,
                             lambda out: self._export_pem(location, password, store_type, key, out), check_only)

    def keystore_p12(self, location: str, password: str | None, key: str, check_only: bool = False) -> Path:
        return self._convert(location, f"p12-{_digest(password)}", key, lambda out: _keytool(
            key, "-importkeystore", "-noprompt", "-srckeystore", location, "-srcstoretype", "JKS",
            "-destkeystore", str(out), "-deststoretype", "PKCS12",
            passwords={"-srcstorepass": password or "", "-deststorepass": password or ""}), check_only)

    def _convert(self, location: str, kind: str, key: str, make: Callable[[Path], object],
                 check_only: bool = False) -> Path:
        path = Path(location)
        if not path.is_file():
            raise NeededAtRunTime(f"{key}={location} does not exist or is not a file", key)
        if self.check_only or check_only:  # the store must open with its password; nothing is kept
            ident = (str(path.resolve()), path.stat().st_mtime, f"checked-{kind}")
            with self._lock:
                if ident not in self._done:  # once per process and store, as a conversion is
                    with tempfile.TemporaryDirectory(prefix="mirrorspark-check-") as scratch:
                        make(Path(scratch) / "check")
                    self._done[ident] = path
            return path
        ident = (str(path.resolve()), path.stat().st_mtime, kind)
        with self._lock:
            if ident not in self._done:
                out = self._dir() / f"{len(self._done)}.{kind.split('-')[0]}"
                make(out)  # inside a 0700 folder, so private from creation
                out.chmod(0o600)
                self._done[ident] = out
            return self._done[ident]

    @staticmethod
    def _export_pem(location: str, password: str | None, store_type: str, key: str, out: Path) -> None:
        args = ["-list", "-rfc", "-keystore", location, "-storetype", store_type]
        listing = _keytool(key, *args, passwords={"-storepass": password} if password else {}, stdin=b"\n")
        pems = re.findall(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", listing, re.DOTALL)
        if not pems:
            raise ConfigError(f"{key}={location} holds no certificates", key)
        from mirrorspark.private_files import write_private

        write_private(out, b"\n".join(pems) + b"\n")


def _digest(password: str | None) -> str:
    """A store's password as part of what a process remembers having opened (never the password)."""
    return hashlib.sha256((password or "").encode()).hexdigest()[:16]


def remove_stale(root: Path) -> None:
    """Remove the converted material of processes that are gone (a crash, a kill -9)."""
    for folder in root.iterdir():
        pid = int(folder.name) if folder.name.isdigit() else None
        if pid != os.getpid() and not (pid is not None and _alive(pid)):
            shutil.rmtree(folder, ignore_errors=True) if folder.is_dir() else folder.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_stores_only(enabled: bool = True) -> None:
    """For ``validate``: keystores are opened (password checked) but no converted copy is kept."""
    _converted().check_only = enabled


def use_state_dir(state_dir: Path) -> None:
    """Where converted key material goes (``<state-dir>/private/``); the default state dir otherwise."""
    _STORES.use_state_dir(state_dir)


def _keytool(key: str, *args: str, passwords: Mapping[str, str] | None = None, stdin: bytes | None = None) -> bytes:
    keytool = jdk.find_tool("keytool")
    if not keytool:
        raise ConfigError(f"{key}: converting a Java keystore needs the JDK's keytool: {jdk.KEYTOOL_MISSING}", key)
    done = jdk.run_keytool(keytool, list(args), passwords or {}, stdin)
    if done.returncode != 0:
        reason = (done.stdout + done.stderr).decode(errors="replace").strip().splitlines()
        raise ConfigError(f"{key}: keytool could not read the store ({reason[-1] if reason else 'no output'}); "
                          "check the location, type and password", key)
    return done.stdout


_STORES = _ConvertedStores()


def _converted() -> _ConvertedStores:
    return _STORES


def jks_to_p12(location: str, password: str | None, key: str, out: Path) -> Path:
    """A JKS keystore as PKCS12 at ``out`` (the caller's private folder): the REST server's keystore."""
    _keytool(key, "-importkeystore", "-noprompt", "-srckeystore", location, "-srcstoretype", "JKS",
             "-destkeystore", str(out), "-deststoretype", "PKCS12",
             passwords={"-srcstorepass": password or "", "-deststorepass": password or ""})
    return out
