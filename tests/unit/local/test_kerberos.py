"""A local Kerberos realm (local/kerberos.py) made with Debian's MIT KDC tools, and the realm handed to
mirrorspark's JVMs (jdk.kerberos_options): files private, keys random, no secret on a command line."""
from __future__ import annotations

import shutil
import socket
import stat
from pathlib import Path

import pytest

from mirrorspark import jdk
from mirrorspark.local import kerberos

HAVE_KDC = shutil.which("kdb5_util") is not None or Path("/usr/sbin/kdb5_util").exists()


@pytest.mark.skipif(not HAVE_KDC, reason="no MIT KDC tools (make setup installs krb5-kdc when it runs as root)")
def test_a_realm_is_made_once_with_keytabs_and_its_kdc_answers(tmp_path, monkeypatch):
    seen: list[list[str]] = []
    real_run = kerberos.subprocess.run

    def recording(cmd, **kwargs):
        seen.append(list(cmd))
        return real_run(cmd, **kwargs)

    monkeypatch.setattr(kerberos.subprocess, "run", recording)
    kerberos.ensure_realm(tmp_path)
    folder = tmp_path / "kerberos"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for who in ("broker", "client"):
        assert stat.S_IMODE(kerberos.keytab(tmp_path, who).stat().st_mode) == 0o600
        assert kerberos.keytab(tmp_path, who).stat().st_size > 0
    assert f"default_realm = {kerberos.REALM}" in kerberos.krb5_conf(tmp_path).read_text()
    assert any(c[-1].startswith("addprinc -randkey kafka/localhost") for c in seen)
    assert all("-P" not in c and "-pw" not in " ".join(c) for c in seen)  # the master password went on stdin
    made = len(seen)
    kerberos.ensure_realm(tmp_path)  # once: the keytabs are kept
    assert len(seen) == made
    assert 'keyTab="' + str(kerberos.keytab(tmp_path, "client")) + '"' in kerberos.jaas(tmp_path, "client")
    kerberos.start_kdc(tmp_path)
    try:
        port = int((folder / "kdc.json").read_text().split(":")[1].strip(" }"))
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        kerberos.stop_kdc(tmp_path)
    assert not (folder / "kdc.pid").exists()


def test_the_realm_reaches_the_jvms_from_krb5_config(monkeypatch):
    monkeypatch.delenv("KRB5_CONFIG", raising=False)
    assert jdk.kerberos_options() == []
    monkeypatch.setenv("KRB5_CONFIG", "/etc/realm/krb5.conf")
    assert jdk.kerberos_options() == ["-Djava.security.krb5.conf=/etc/realm/krb5.conf"]
    assert jdk.kerberos_options("-Xmx1g -Djava.security.krb5.conf=/other") == []  # the user's own setting wins


def test_spark_driver_and_executors_get_the_realm_after_the_users_options(monkeypatch):
    from mirrorspark.pipeline.spark_session import spark_conf

    monkeypatch.setenv("KRB5_CONFIG", "/etc/realm/krb5.conf")
    conf = spark_conf({"spark.executor.extraJavaOptions": "-Xss2m"})
    assert conf["spark.executor.extraJavaOptions"] == "-Xss2m -Djava.security.krb5.conf=/etc/realm/krb5.conf"
    assert conf["spark.driver.extraJavaOptions"].endswith(" -Djava.security.krb5.conf=/etc/realm/krb5.conf")
    own = spark_conf({"spark.driver.extraJavaOptions": "-Djava.security.krb5.conf=/mine"})
    assert own["spark.driver.extraJavaOptions"] == "-Djava.security.krb5.conf=/mine"
