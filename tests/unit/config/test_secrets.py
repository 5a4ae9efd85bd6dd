"""Secrets without brokers: redaction by key and by value on every output path, keytool never
given a password on its command line, secret files private from creation, converted key material
kept under the state dir and cleaned after a crash."""
from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import ClassVar

import pytest
import typer

from mirrorspark.config import parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.config.redaction import HIDDEN, Redactor, install, redact

PASSWORD = "Kst0re-pass-1234"
SR_PASSWORD = "sr-secret-5678"
JAAS_PASSWORD = "scram-pw-9012"
JAAS = f'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="{JAAS_PASSWORD}";'
CONFIG = f"""
clusters = a, b
a.bootstrap.servers = 127.0.0.1:1
b.bootstrap.servers = 127.0.0.1:2
a->b.enabled = true
b.ssl.truststore.password = {PASSWORD}
b.basic.auth.user.info = registry-user:{SR_PASSWORD}
a.security.protocol = SASL_PLAINTEXT
a.sasl.mechanism = SCRAM-SHA-512
a.sasl.jaas.config = {JAAS}
a->b.consumer.client.rack = r-{PASSWORD}
spark.driver.extraJavaOptions = -Djavax.net.ssl.trustStorePassword={PASSWORD} -Dsr={SR_PASSWORD} -Dfoo=bar
spark.executor.extraJavaOptions = -Dother.keyStorePassword=short -Dx=1
"""
SECRETS = (PASSWORD, SR_PASSWORD, JAAS_PASSWORD)


@pytest.fixture
def mirror():
    yield parse_config(parse_properties(CONFIG))
    install(Redactor())


def test_secret_values_found_by_key_and_inside_values(mirror):
    found = mirror.secret_values()
    assert set(SECRETS) <= found and "registry-user:" + SR_PASSWORD in found
    assert "short" in found  # a ...Password=VALUE fragment, even under a harmless key


def test_redaction_by_value_and_fragment(mirror):
    redactor = Redactor(mirror.secret_values())
    shown = redactor.settings(dict(mirror.top_level))
    options = shown["spark.driver.extraJavaOptions"]
    assert options == f"-Djavax.net.ssl.trustStorePassword={HIDDEN} -Dsr={HIDDEN} -Dfoo=bar"
    assert shown["spark.executor.extraJavaOptions"] == f"-Dother.keyStorePassword={HIDDEN} -Dx=1"
    # Without knowing the values, fragments named like passwords are still hidden.
    assert Redactor().text("java -Dssl.keystore.password=abc -Dsecret.token='x y' -Dport=1") == \
        f"java -Dssl.keystore.password={HIDDEN} -Dsecret.token={HIDDEN} -Dport=1"
    assert redact({"basic.auth.user.info": "u:p", "ssl.key.pem": "KEY", "ssl.keystore.key": "K2",
                   "ssl.keystore.location": "/k.jks"}) == \
        {"basic.auth.user.info": HIDDEN, "ssl.key.pem": HIDDEN, "ssl.keystore.key": HIDDEN,
         "ssl.keystore.location": "/k.jks"}


def test_validate_prints_no_secret(mirror):
    from mirrorspark.cli.validate_command import describe

    lines: list[str] = []
    describe(mirror, lines.append, probe=False)
    text = "\n".join(lines)
    assert HIDDEN in text and "r-" + HIDDEN in text  # a secret embedded in an unrelated value
    for secret in SECRETS:
        assert secret not in text


def test_rest_config_view_hides_values_everywhere(mirror):
    from mirrorspark.pipeline.rest_controller import ReplicatorController

    class Replicator:
        config = mirror
        flows: ClassVar[list[object]] = []

    view = repr(ReplicatorController(Replicator()).config())  # type: ignore[arg-type]
    assert "extraJavaOptions" in view
    for secret in SECRETS:
        assert secret not in view


def test_cli_errors_and_logs_redacted(mirror, capsys):
    import logging

    from mirrorspark.cli.logging_setup import SecretScrubber
    from mirrorspark.cli.reporting import fail

    install(Redactor(mirror.secret_values()))
    with pytest.raises(typer.Exit):
        fail(f"cannot read store with {PASSWORD} (jaas {JAAS_PASSWORD})", 1)
    err = capsys.readouterr().err
    assert PASSWORD not in err and JAAS_PASSWORD not in err and HIDDEN in err
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "opts %s", (f"-Dp.password={SR_PASSWORD}",), None)
    SecretScrubber(Redactor(mirror.secret_values())).filter(record)
    assert SR_PASSWORD not in record.getMessage()


# --- keytool: passwords by environment, never in argv ---------------------------------------

@pytest.fixture
def argv_spy(monkeypatch):
    """Every argv and env given to subprocess.run, still really executed."""
    calls: list[tuple[list[str], dict[str, str] | None]] = []
    real = subprocess.run

    def spy(argv, *args, **kwargs):
        calls.append((list(argv), kwargs.get("env")))
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", spy)
    return calls


def jdk_keytool() -> str:
    from mirrorspark.local.security import SecurityError, keytool

    try:
        return keytool()
    except SecurityError:
        pytest.skip("no JDK keytool")


def test_local_certificates_made_without_password_in_argv(tmp_path, argv_spy):
    from mirrorspark.local.security import ensure_certificates

    jdk_keytool()
    ensure_certificates(tmp_path, PASSWORD)
    tls = tmp_path / "tls"
    assert {p.name for p in tls.iterdir()} >= {"ca.p12", "broker.p12", "truststore.jks", "ca.pem", "broker.pem"}
    assert stat.S_IMODE(tls.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in tls.iterdir())
    assert len(argv_spy) >= 7
    for argv, env in argv_spy:
        assert all(PASSWORD not in arg for arg in argv), argv
        assert "-storepass:env" in argv and env is not None and PASSWORD in env.values()
    listing = subprocess.run([jdk_keytool(), "-list", "-keystore", str(tls / "truststore.jks"), "-storepass:env", "P"],
                             capture_output=True, env={**os.environ, "P": PASSWORD})
    assert listing.returncode == 0  # the stores really carry the password passed through the environment


def make_jks(folder: Path, password: str) -> tuple[Path, Path]:
    keystore, truststore, cert = folder / "client.jks", folder / "trust.jks", folder / "client.pem"
    env = {**os.environ, "P": password}
    tool = jdk_keytool()
    for argv in ([tool, "-genkeypair", "-alias", "c", "-keyalg", "RSA", "-keysize", "2048", "-dname", "CN=c",
                  "-keystore", str(keystore), "-storetype", "JKS", "-storepass:env", "P", "-keypass:env", "P"],
                 [tool, "-exportcert", "-rfc", "-alias", "c", "-keystore", str(keystore), "-storepass:env", "P",
                  "-file", str(cert)],
                 [tool, "-importcert", "-noprompt", "-alias", "c", "-file", str(cert), "-keystore", str(truststore),
                  "-storetype", "JKS", "-storepass:env", "P"]):
        subprocess.run(argv, check=True, capture_output=True, env=env)
    return keystore, truststore


def test_converted_stores_private_under_state_dir(tmp_path, argv_spy):
    from mirrorspark.control import client_settings

    keystore, truststore = make_jks(tmp_path, PASSWORD)
    argv_spy.clear()
    state = tmp_path / "state"
    dead = state / "private" / client_settings.CONVERTED / "999999999"  # a crashed process's leftovers
    dead.mkdir(parents=True)
    (dead / "0.p12").write_text("stale key")
    stores = client_settings._ConvertedStores()
    stores.use_state_dir(state)
    pem = stores.truststore_pem(str(truststore), PASSWORD, "JKS", "b.ssl.truststore.location")
    p12 = stores.keystore_p12(str(keystore), PASSWORD, "b.ssl.keystore.location")
    folder = state / "private" / client_settings.CONVERTED / str(os.getpid())
    assert pem.parent == p12.parent == folder and not dead.exists()
    assert b"BEGIN CERTIFICATE" in pem.read_bytes() and p12.stat().st_size > 0
    for path in (state / "private", folder.parent, folder):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    assert stat.S_IMODE(pem.stat().st_mode) == stat.S_IMODE(p12.stat().st_mode) == 0o600
    assert len(argv_spy) == 2
    for argv, env in argv_spy:
        assert all(PASSWORD not in arg for arg in argv), argv
        assert env is not None and PASSWORD in env.values()


def test_secret_files_created_private(tmp_path, monkeypatch):
    from mirrorspark.local.security import Secrets

    created: list[tuple[str, int]] = []
    real_open = os.open

    def spy(path, flags, mode=0o777, *args, **kwargs):
        if flags & os.O_CREAT:
            created.append((str(path), mode))
            assert flags & os.O_EXCL
        return real_open(path, flags, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    made = Secrets.load_or_create(tmp_path)
    assert created == [(str(tmp_path / "secrets.json"), 0o600)]
    assert Secrets.load_or_create(tmp_path) == made
    assert stat.S_IMODE((tmp_path / "secrets.json").stat().st_mode) == 0o600


def test_storage_format_gets_no_scram_password(tmp_path, monkeypatch):
    """SCRAM users are created through the Admin API after start, not by `kafka-storage format`."""
    from mirrorspark.local import cluster as local_cluster
    from mirrorspark.local.security import SecurityOptions

    seen: list[list[str]] = []
    monkeypatch.setattr(local_cluster.subprocess, "run",
                        lambda argv, **kw: seen.append(argv) or subprocess.CompletedProcess(argv, 0, "", ""))
    clusters = local_cluster.LocalClusters(tmp_path)
    spec = local_cluster.ClusterSpec("s", None, SecurityOptions("SASL_PLAINTEXT", "SCRAM-SHA-512"))
    clusters._prepare(spec, "java")
    secret = (tmp_path / "local" / "s" / "secrets.json").read_text()
    assert seen and all("--add-scram" not in argv for argv in seen)
    client_password = __import__("json").loads(secret)["client_password"]
    assert all(client_password not in " ".join(argv) for argv in seen)
    for name in ("server.properties", "client.properties", "secrets.json"):
        assert stat.S_IMODE((tmp_path / "local" / "s" / name).stat().st_mode) == 0o600


def test_secret_keys_are_hidden_misspelt_by_one_slip():
    """Issue 44: any key naming a password, secret, JAAS entry, token or key material is hidden,
    misspelt or not; a word of a key mirrorspark knows is no misspelling."""
    from mirrorspark.config.redaction import is_secret

    for key in ("A.sasl.oauthbearer.tokn", "A.ssl.keystore.kye", "A.ssl.truststore.pw", "A.sasl.jaa.config",
                "A.apikey", "A.api.key", "A.sceret", "A.client.secert", "A.ssl.truststore.pasword"):
        assert is_secret(key), key
    for key in ("spark.jars", "spark.jars.packages", "A.key.converter", "A.ssl.keystore.location",
                "A.ssl.truststore.type", "A.sasl.mechanism", "A.ssl.keystore.certificate.chain", "A.client.id",
                "A.sasl.kerberos.service.name", "A.ssl.endpoint.identification.algorithm"):
        assert not is_secret(key), key


def test_cloud_storage_credentials_are_secrets():
    """A state location on Azure, S3 or GCS carries its credentials as spark.hadoop.* keys."""
    from mirrorspark.config.redaction import is_secret

    for key in ("spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net",
                "spark.hadoop.fs.azure.sas.container.acct.blob.core.windows.net",
                "spark.hadoop.fs.s3a.access.key", "spark.hadoop.fs.s3a.secret.key"):
        assert is_secret(key), key
    assert not any(is_secret(k) for k in ("spark.master", "bootstrap.servers", "ssl.keystore.location"))


def test_validate_offline_opens_java_stores_but_keeps_no_copy(tmp_path, monkeypatch):
    """validate checks that the stores open with their passwords, and writes nothing (no ./state)."""
    from typer.testing import CliRunner

    from mirrorspark.cli.app import app

    keystore, truststore = make_jks(tmp_path, PASSWORD)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("MIRRORSPARK_STATE_DIR", raising=False)
    base = ("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\n"
            "A->B.enabled = true\nB.security.protocol = SSL\n"
            f"B.ssl.keystore.location = {keystore}\nB.ssl.keystore.password = {PASSWORD}\n"
            f"B.ssl.truststore.location = {truststore}\n")
    good = work / "good.properties"
    good.write_text(base + f"B.ssl.truststore.password = {PASSWORD}\n")
    done = CliRunner().invoke(app, ["validate", "--offline", str(good)])
    assert done.exit_code == 0, done.output
    assert not (work / "state").exists()
    wrong = work / "wrong.properties"
    wrong.write_text(base.replace(f"keystore.password = {PASSWORD}", "keystore.password = not-it")
                     + f"B.ssl.truststore.password = {PASSWORD}\n")
    refused = CliRunner().invoke(app, ["validate", "--offline", str(wrong)])
    assert refused.exit_code == 2 and "B.ssl.keystore.location" in refused.output
    assert "Traceback" not in refused.output and not (work / "state").exists()
