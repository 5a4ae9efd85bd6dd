"""REST over TLS, as Kafka Connect's REST takes it: `https://host:port` with a keystore (PKCS12, JKS or
PEM); plain HTTP beyond loopback is refused unless allowed; the converted key is private and removed at
stop; `mirrorspark status` talks https with a CA file and takes the token from a file, never argv."""
from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from helpers.rest_app import FakeController
from prometheus_client import CollectorRegistry
from typer.testing import CliRunner

from mirrorspark.cli.app import app
from mirrorspark.errors import ConfigError
from mirrorspark.rest.server import RestServer, RestSettings

OPENSSL = shutil.which("openssl")
pytestmark = pytest.mark.skipif(OPENSSL is None, reason="no openssl command")


def keystore(folder: Path, password: str = "changeit") -> tuple[Path, Path, Path]:
    """A self-signed key and certificate for 127.0.0.1: (PKCS12 store, PEM with key and cert, cert alone)."""
    key, cert, p12, both = (folder / n for n in ("key.pem", "cert.pem", "store.p12", "both.pem"))
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    subprocess.run([OPENSSL, "pkcs12", "-export", "-inkey", str(key), "-in", str(cert), "-out", str(p12),
                    "-passout", "env:PASS"], check=True, capture_output=True, env={**os.environ, "PASS": password})
    both.write_text(key.read_text() + cert.read_text())
    return p12, both, cert


def serve(tmp_path: Path, **top: str) -> RestServer:
    settings = RestSettings.from_config({"mirrorspark.rest.listener": "https://127.0.0.1:0", **top})
    server = RestServer(FakeController(), CollectorRegistry(), settings, tmp_path / "state")  # type: ignore[arg-type]
    server.start()
    return server


def test_plain_http_beyond_loopback_is_refused_unless_allowed_and_https_needs_a_keystore():
    with pytest.raises(ConfigError, match="plain HTTP beyond") as refused:
        RestSettings.from_config({"mirrorspark.rest.listener": "0.0.0.0:8083"})
    assert refused.value.key == "mirrorspark.rest.listener"
    assert RestSettings.from_config({"mirrorspark.rest.listener": "http://0.0.0.0:8083",
                                     "mirrorspark.rest.plaintext.allowed": "true"}).keystore is None
    assert RestSettings.from_config({"mirrorspark.rest.listener": "localhost:8083"}).host == "localhost"
    with pytest.raises(ConfigError) as refused:
        RestSettings.from_config({"mirrorspark.rest.listener": "https://0.0.0.0:8443"})
    assert refused.value.key == "mirrorspark.rest.ssl.keystore.location"
    with pytest.raises(ConfigError, match=r"https://127\.0\.0\.1:1"):
        RestSettings.from_config({"mirrorspark.rest.listener": "127.0.0.1:1",
                                  "mirrorspark.rest.ssl.keystore.location": "/ks.p12"})
    with pytest.raises(ConfigError, match="host:port, http"):
        RestSettings.from_config({"mirrorspark.rest.listener": "ftp://127.0.0.1:1"})


@pytest.mark.parametrize("kind", ["PKCS12", "PEM"])
def test_https_with_a_keystore_serves_and_cleans_up(tmp_path, kind):
    p12, both, cert = keystore(tmp_path)
    location = p12 if kind == "PKCS12" else both
    server = serve(tmp_path, **{"mirrorspark.rest.ssl.keystore.location": str(location),
                                "mirrorspark.rest.ssl.keystore.password": "changeit",
                                "mirrorspark.rest.ssl.keystore.type": kind})
    try:
        assert server.address is not None and server.address.startswith("https://127.0.0.1:")
        context = ssl.create_default_context(cafile=str(cert))
        with urllib.request.urlopen(f"{server.address}/health", timeout=10, context=context) as answer:
            assert answer.status == 200 and json.loads(answer.read())["status"] == "ok"
        with pytest.raises((urllib.error.URLError, ConnectionError)):  # plain HTTP on the TLS port
            urllib.request.urlopen(server.address.replace("https://", "http://") + "/health", timeout=10)
        converted = server.keys.folder if server.keys is not None else None
        if kind == "PKCS12":
            assert converted is not None and oct(converted.stat().st_mode & 0o777) == "0o700"
        token = tmp_path / "token"
        token.write_text((server.token or "") + "\n")
        shown = CliRunner().invoke(app, ["status", "--url", server.address, "--token-file", str(token),
                                         "--cacert", str(cert)])
        assert shown.exit_code == 0 and "a->b" in shown.output, shown.output
        untrusted = CliRunner().invoke(app, ["status", "--url", server.address, "--token-file", str(token)])
        assert untrusted.exit_code == 1 and "CERTIFICATE_VERIFY_FAILED" in untrusted.output
    finally:
        server.stop()
    if kind == "PKCS12":
        assert converted is not None and not converted.exists()  # the unencrypted key is gone with the server


def test_a_jks_keystore_is_converted_through_pkcs12(tmp_path):
    from mirrorspark import jdk

    keytool = jdk.find_tool("keytool")
    if not keytool:
        pytest.skip("no keytool")
    p12, _, cert = keystore(tmp_path)
    jks = tmp_path / "store.jks"
    subprocess.run([keytool, "-importkeystore", "-noprompt", "-srckeystore", str(p12), "-srcstoretype", "PKCS12",
                    "-srcstorepass:env", "PASS", "-destkeystore", str(jks), "-deststoretype", "JKS",
                    "-deststorepass:env", "PASS"], check=True, capture_output=True,
                   env={**os.environ, "PASS": "changeit"})
    server = serve(tmp_path, **{"mirrorspark.rest.ssl.keystore.location": str(jks),
                                "mirrorspark.rest.ssl.keystore.password": "changeit",
                                "mirrorspark.rest.ssl.keystore.type": "JKS"})
    try:
        context = ssl.create_default_context(cafile=str(cert))
        with urllib.request.urlopen(f"{server.address}/health", timeout=10, context=context) as answer:
            assert answer.status == 200
    finally:
        server.stop()


def test_a_wrong_keystore_password_names_the_keystore(tmp_path):
    p12, _, _ = keystore(tmp_path)
    with pytest.raises(ConfigError, match="cannot open it as PKCS12") as refused:
        serve(tmp_path, **{"mirrorspark.rest.ssl.keystore.location": str(p12),
                           "mirrorspark.rest.ssl.keystore.password": "wrong"})
    assert refused.value.key == "mirrorspark.rest.ssl.keystore.location"


def test_status_takes_no_token_on_its_command_line():
    result = CliRunner().invoke(app, ["status", "--url", "http://127.0.0.1:9", "--token", "secret"])
    assert result.exit_code != 0 and "No such option" in result.output
