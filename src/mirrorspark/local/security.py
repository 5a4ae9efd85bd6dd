"""Secured listeners for local clusters: TLS material from keytool, SASL users, an authorizer.

A local cluster may expose its client listener as SSL, SASL_PLAINTEXT or SASL_SSL so MM2-style
security settings can be tried end to end on loopback. The broker keeps a second, PLAINTEXT
listener (``INTERNAL``) for inter-broker traffic and for the readiness check; with an authorizer
its ANONYMOUS principal and the generated client user are super users, so local tooling keeps
working while ACLs on other principals can be created and synced.
"""
from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from mirrorspark import jdk
from mirrorspark.errors import OperationalError
from mirrorspark.private_files import private_dir, write_private

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
OAUTH_LOGIN = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OAUTH_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
OAUTH_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls"  # a JVM property since Kafka 3.9.1/4.0
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLIENT_USER = "mirrorspark"
_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


class SecurityError(OperationalError):
    """Security options that cannot be honoured; the message says which and why."""


@dataclass(frozen=True)
class SecurityOptions:
    """How a local cluster's client listener is secured."""

    protocol: str = "PLAINTEXT"
    sasl_mechanism: str = "SCRAM-SHA-512"
    authorizer: bool = False

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise SecurityError(f"unknown security protocol {self.protocol!r}: use one of {', '.join(PROTOCOLS)}")
        if self.sasl_mechanism not in MECHANISMS:
            raise SecurityError(f"unknown SASL mechanism {self.sasl_mechanism!r}: use one of {', '.join(MECHANISMS)}")

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def secured(self) -> bool:
        return self.protocol != "PLAINTEXT"


@dataclass(frozen=True)
class Secrets:
    """Generated once per cluster folder and kept there (mode 0600), so restarts reuse them."""

    store_password: str
    client_password: str

    @classmethod
    def load_or_create(cls, folder: Path) -> Secrets:
        path = folder / "secrets.json"
        if path.is_file():
            return cls(**json.loads(path.read_text()))
        made = cls(secrets.token_urlsafe(18), secrets.token_urlsafe(18))
        write_private(path, json.dumps(asdict(made)))
        return made


def keytool() -> str:
    found = jdk.find_tool("keytool")
    if not found:
        raise SecurityError(jdk.KEYTOOL_MISSING)
    return found


def _keytool(*args: str, passwords: Mapping[str, str], stdin: bytes | None = None) -> bytes:
    done = jdk.run_keytool(keytool(), list(args), passwords, stdin)
    if done.returncode != 0:
        raise SecurityError(f"keytool {args[0]} failed: {(done.stderr or done.stdout).decode(errors='replace')[-800:]}")
    return done.stdout


def ensure_certificates(folder: Path, password: str) -> None:
    """A local CA, a broker key pair signed by it for 127.0.0.1/localhost, and a JKS truststore.

    Files: ``tls/broker.p12`` (broker keystore), ``tls/truststore.jks`` (what MM2 users usually
    hold), ``tls/ca.pem``. Made once; later starts reuse them. ``tls/`` is created 0700, so the
    stores keytool writes are private from the start.
    """
    tls = folder / "tls"
    if (tls / "truststore.jks").is_file() and (tls / "broker.p12").is_file():
        return
    private_dir(tls)
    ca, broker = str(tls / "ca.p12"), str(tls / "broker.p12")
    san = "SAN=ip:127.0.0.1,dns:localhost"
    store = {"-storepass": password}
    both = {"-storepass": password, "-keypass": password}
    _keytool("-genkeypair", "-alias", "ca", "-keyalg", "RSA", "-keysize", "2048", "-validity", "3650",
             "-dname", "CN=mirrorspark local CA", "-ext", "bc:c", "-keystore", ca, "-storetype", "PKCS12",
             passwords=both)
    ca_pem = _keytool("-exportcert", "-rfc", "-alias", "ca", "-keystore", ca, passwords=store)
    write_private(tls / "ca.pem", ca_pem)
    _keytool("-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048", "-validity", "3650",
             "-dname", "CN=localhost", "-ext", san, "-keystore", broker, "-storetype", "PKCS12", passwords=both)
    request = _keytool("-certreq", "-alias", "broker", "-keystore", broker, passwords=store)
    signed = _keytool("-gencert", "-alias", "ca", "-keystore", ca, "-rfc", "-validity", "3650", "-ext", san,
                      stdin=request, passwords=store)
    _keytool("-importcert", "-noprompt", "-alias", "ca", "-keystore", broker, "-file", str(tls / "ca.pem"),
             passwords=store)
    write_private(tls / "broker.pem", signed)
    _keytool("-importcert", "-noprompt", "-alias", "broker", "-keystore", broker, "-file", str(tls / "broker.pem"),
             passwords=store)
    _keytool("-importcert", "-noprompt", "-alias", "ca", "-keystore", str(tls / "truststore.jks"),
             "-storetype", "JKS", "-file", str(tls / "ca.pem"), passwords=store)
    for path in tls.iterdir():
        path.chmod(0o600)  # the folder is already private; this only tidies keytool's own modes


def listener_name(options: SecurityOptions) -> str:
    return options.protocol


def broker_properties(options: SecurityOptions, folder: Path, client_port: int, internal_port: int,
                      controller_port: int, secret: Secrets) -> dict[str, str]:
    """Listener, TLS, SASL and authorizer settings of the broker (merged over the plain defaults)."""
    if not options.secured and not options.authorizer:
        return {}
    props: dict[str, str] = {}
    name = listener_name(options)
    if options.secured:
        props.update({
            "listeners": f"{name}://127.0.0.1:{client_port},INTERNAL://127.0.0.1:{internal_port},"
                         f"CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"{name}://127.0.0.1:{client_port},INTERNAL://127.0.0.1:{internal_port}",
            "inter.broker.listener.name": "INTERNAL",
            "listener.security.protocol.map": f"CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,{name}:{options.protocol}",
        })
    lname = name.lower()
    if options.uses_tls:
        ensure_certificates(folder, secret.store_password)
        props.update({
            f"listener.name.{lname}.ssl.keystore.location": str(folder / "tls" / "broker.p12"),
            f"listener.name.{lname}.ssl.keystore.type": "PKCS12",
            f"listener.name.{lname}.ssl.keystore.password": secret.store_password,
            f"listener.name.{lname}.ssl.key.password": secret.store_password,
        })
    if options.uses_sasl and options.sasl_mechanism == "OAUTHBEARER":
        from mirrorspark.local.oidc import AUDIENCE, ensure_keys, jwks_url

        ensure_keys(folder)
        props.update({
            f"listener.name.{lname}.sasl.enabled.mechanisms": "OAUTHBEARER",
            f"listener.name.{lname}.oauthbearer.sasl.jaas.config": f"{OAUTH_LOGIN} required;",
            f"listener.name.{lname}.oauthbearer.sasl.server.callback.handler.class": OAUTH_VALIDATOR,
            "sasl.oauthbearer.jwks.endpoint.url": jwks_url(folder),
            "sasl.oauthbearer.expected.audience": AUDIENCE,
        })
    elif options.uses_sasl and options.sasl_mechanism == "GSSAPI":
        from mirrorspark.local import kerberos

        kerberos.ensure_realm(folder)
        props.update({
            f"listener.name.{lname}.sasl.enabled.mechanisms": "GSSAPI",
            "sasl.kerberos.service.name": kerberos.SERVICE,
            f"listener.name.{lname}.gssapi.sasl.jaas.config": kerberos.jaas(folder, "broker"),
        })
    elif options.uses_sasl:
        mech = options.sasl_mechanism
        module = _LOGIN_MODULES[mech]
        users = f' user_{CLIENT_USER}="{secret.client_password}"' if mech == "PLAIN" else ""
        props.update({
            f"listener.name.{lname}.sasl.enabled.mechanisms": mech,
            f"listener.name.{lname}.{mech.lower()}.sasl.jaas.config": f"{module} required{users};",
        })
    if options.authorizer:
        supers = ["User:ANONYMOUS"] + ([f"User:{CLIENT_USER}"] if options.uses_sasl else [])
        props.update({"authorizer.class.name": AUTHORIZER, "super.users": ";".join(supers)})
    return props


def uses_scram(options: SecurityOptions) -> bool:
    return options.uses_sasl and options.sasl_mechanism.startswith("SCRAM")


def create_scram_user(options: SecurityOptions, folder: Path, plain_bootstrap: str, client_bootstrap: str,
                      secret: Secrets, timeout: float = 60.0) -> None:
    """Create (or reset) the client user's SCRAM credential through the broker's PLAINTEXT internal
    listener, then wait until it logs in on the client listener.

    ``kafka-storage format --add-scram`` would take the password on its command line (visible in
    ``ps``), and its parser reads no ``@file`` arguments; the Admin API keeps it off every argv.
    """
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    from mirrorspark.control.admin import admin_client

    mechanism = ScramMechanism.SCRAM_SHA_256 if options.sasl_mechanism == "SCRAM-SHA-256" \
        else ScramMechanism.SCRAM_SHA_512
    upsert = UserScramCredentialUpsertion(CLIENT_USER, ScramCredentialInfo(mechanism, 8192),
                                          secret.client_password.encode())
    admin = admin_client({"bootstrap.servers": plain_bootstrap})
    for future in admin.alter_user_scram_credentials([upsert], request_timeout=timeout).values():
        future.result(timeout)
    login = {"bootstrap.servers": client_bootstrap, "security.protocol": options.protocol,
             "sasl.mechanisms": options.sasl_mechanism, "sasl.username": CLIENT_USER,
             "sasl.password": secret.client_password}
    if options.uses_tls:
        login["ssl.ca.location"] = str(folder / "tls" / "ca.pem")
    deadline, last = time.monotonic() + timeout, "no attempt"
    while time.monotonic() < deadline:  # the credential reaches the broker's cache through metadata
        try:
            admin_client(login).list_topics(timeout=3)
            return
        except Exception as exc:  # noqa: BLE001 - retried until the deadline, then reported
            last = str(exc)
            time.sleep(0.3)
    raise SecurityError(f"SCRAM user {CLIENT_USER!r} could not log in on {client_bootstrap} within {timeout:.0f} s: "
                        f"{last}")


def token_endpoint_port(folder: Path) -> int:
    """The loopback port of an OAUTHBEARER cluster's token endpoint, chosen once and kept."""
    path = folder / "oidc" / "endpoint.json"
    if path.is_file():
        return int(json.loads(path.read_text())["port"])
    import socket

    with socket.socket() as probe:  # a free loopback port, kept for the cluster's life
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    private_dir(folder / "oidc")
    path.write_text(json.dumps({"port": port}))
    return port


def broker_jvm_options(options: SecurityOptions, folder: Path) -> list[str]:
    """JVM system properties the broker needs: the JWKS file allowed (Kafka refuses unlisted URLs), the
    realm's krb5.conf."""
    if options.uses_sasl and options.sasl_mechanism == "GSSAPI":
        from mirrorspark.local import kerberos

        return [f"-Djava.security.krb5.conf={kerberos.krb5_conf(folder)}"]
    if options.uses_sasl and options.sasl_mechanism == "OAUTHBEARER":
        from mirrorspark.local.oidc import jwks_url

        return [f"-D{ALLOWED_URLS}={jwks_url(folder)}"]
    return []


def client_properties(options: SecurityOptions, folder: Path, secret: Secrets) -> dict[str, str]:
    """Java-style client settings for the client listener, as an MM2 user would write them."""
    props: dict[str, str] = {"security.protocol": options.protocol}
    if options.uses_tls:
        props.update({
            "ssl.truststore.location": str(folder / "tls" / "truststore.jks"),
            "ssl.truststore.password": secret.store_password,
            "ssl.truststore.type": "JKS",
        })
    if options.uses_sasl and options.sasl_mechanism == "OAUTHBEARER":
        props.update({
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.login.callback.handler.class": OAUTH_HANDLER,
            "sasl.oauthbearer.token.endpoint.url": f"http://127.0.0.1:{token_endpoint_port(folder)}/token",
            "sasl.jaas.config": f'{OAUTH_LOGIN} required clientId="{CLIENT_USER}" '
                                f'clientSecret="{secret.client_password}" scope="kafka";',
        })
    elif options.uses_sasl and options.sasl_mechanism == "GSSAPI":
        from mirrorspark.local import kerberos

        props.update({"sasl.mechanism": "GSSAPI", "sasl.kerberos.service.name": kerberos.SERVICE,
                      "sasl.jaas.config": kerberos.jaas(folder, "client")})
    elif options.uses_sasl:
        module = _LOGIN_MODULES[options.sasl_mechanism]
        props.update({
            "sasl.mechanism": options.sasl_mechanism,
            "sasl.jaas.config": f'{module} required username="{CLIENT_USER}" password="{secret.client_password}";',
        })
    return props
