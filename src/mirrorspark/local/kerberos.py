"""A Kerberos realm for a local GSSAPI cluster: a real MIT KDC (Debian's ``krb5-kdc``) with keytabs
for the broker and for the client, so MM2's Kerberos settings can be tried end to end on loopback.

Everything lives in the cluster's folder under ``kerberos/`` (0700): the KDC's profile and database,
a ``krb5.conf`` for the JVMs (``-Djava.security.krb5.conf``; ``KRB5_CONFIG`` for mirrorspark's own,
see ``jdk.kerberos_options``), and the two keytabs. Principals get random keys (``-randkey``) and the
database's master password goes to ``kdb5_util`` on its standard input, so no secret is ever on a
command line. The KDC runs detached, like the broker, and stops with it.
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from mirrorspark.errors import OperationalError
from mirrorspark.private_files import private_dir

REALM = "MIRRORSPARK.LOCAL"
SERVICE = "kafka"
BROKER_PRINCIPAL = f"{SERVICE}/localhost@{REALM}"
CLIENT_PRINCIPAL = f"mirrorspark@{REALM}"
KRB5_LOGIN = "com.sun.security.auth.module.Krb5LoginModule"
INSTALL_HINT = "apt-get install krb5-kdc krb5-admin-server (`make setup` does it when it runs as root)"


class KerberosError(OperationalError):
    """The local realm could not be made or started; the message says which step and why."""


def folder_of(cluster_folder: Path) -> Path:
    return cluster_folder / "kerberos"


def krb5_conf(cluster_folder: Path) -> Path:
    return folder_of(cluster_folder) / "krb5.conf"


def keytab(cluster_folder: Path, who: str) -> Path:
    """``who``: ``broker`` or ``client``."""
    return folder_of(cluster_folder) / f"{who}.keytab"


def jaas(cluster_folder: Path, who: str) -> str:
    """The JAAS entry of the broker or the client, as an MM2 user writes one for a keytab."""
    principal = BROKER_PRINCIPAL if who == "broker" else CLIENT_PRINCIPAL
    return (f'{KRB5_LOGIN} required useKeyTab=true storeKey=true keyTab="{keytab(cluster_folder, who)}" '
            f'principal="{principal}";')


def _tool(name: str) -> str:
    found = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.access(p, os.X_OK)),
                                       None)
    if found is None:
        raise KerberosError(f"{name} is not installed: a local GSSAPI cluster needs an MIT KDC ({INSTALL_HINT})")
    return found


def _env(cluster_folder: Path) -> dict[str, str]:
    kerberos = folder_of(cluster_folder)
    return {**os.environ, "KRB5_CONFIG": str(kerberos / "krb5.conf"), "KRB5_KDC_PROFILE": str(kerberos / "kdc.conf")}


def _port(cluster_folder: Path) -> int:
    """The KDC's loopback port, chosen once and kept for the realm's life."""
    path = folder_of(cluster_folder) / "kdc.json"
    if path.is_file():
        return int(json.loads(path.read_text())["port"])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path.write_text(json.dumps({"port": port}))
    return port


def ensure_realm(cluster_folder: Path) -> None:
    """The realm's files, database, principals and keytabs, made once; later starts reuse them."""
    kerberos = private_dir(folder_of(cluster_folder))
    if keytab(cluster_folder, "broker").is_file() and keytab(cluster_folder, "client").is_file():
        return
    port = _port(cluster_folder)
    (kerberos / "kdc.conf").write_text(
        f"[kdcdefaults]\n kdc_listen = 127.0.0.1:{port}\n kdc_tcp_listen = 127.0.0.1:{port}\n"
        f"[realms]\n {REALM} = {{\n  database_name = {kerberos / 'principal'}\n"
        f"  key_stash_file = {kerberos / 'stash'}\n  acl_file = {kerberos / 'kadm5.acl'}\n"
        "  max_life = 24h\n  max_renewable_life = 7d\n"
        "  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n }\n"
        f"[logging]\n kdc = FILE:{kerberos / 'kdc.log'}\n")
    (kerberos / "krb5.conf").write_text(
        f"[libdefaults]\n default_realm = {REALM}\n udp_preference_limit = 1\n dns_lookup_kdc = false\n"
        f" dns_lookup_realm = false\n rdns = false\n[realms]\n {REALM} = {{\n  kdc = 127.0.0.1:{port}\n }}\n"
        f"[domain_realm]\n localhost = {REALM}\n")
    (kerberos / "kadm5.acl").write_text("")
    master = secrets.token_urlsafe(24)
    _run(cluster_folder, [_tool("kdb5_util"), "create", "-s", "-r", REALM], stdin=f"{master}\n{master}\n")
    admin = _tool("kadmin.local")
    for principal, who in ((BROKER_PRINCIPAL, "broker"), (CLIENT_PRINCIPAL, "client")):
        _run(cluster_folder, [admin, "-q", f"addprinc -randkey {principal}"])
        _run(cluster_folder, [admin, "-q", f"ktadd -k {keytab(cluster_folder, who)} {principal}"])
        keytab(cluster_folder, who).chmod(0o600)


def _run(cluster_folder: Path, cmd: list[str], stdin: str | None = None) -> None:
    done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=_env(cluster_folder), timeout=60)
    if done.returncode != 0 or "error" in done.stderr.lower():
        raise KerberosError(f"{Path(cmd[0]).name} {' '.join(cmd[1:2])} failed (exit {done.returncode}): "
                            f"{(done.stderr or done.stdout).strip()[-800:]}")


def _pid_file(cluster_folder: Path) -> Path:
    return folder_of(cluster_folder) / "kdc.pid"


def _alive(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"krb5kdc" in cmdline


def start_kdc(cluster_folder: Path, timeout: float = 15.0) -> None:
    """The realm's KDC, detached; a running one is kept."""
    pid_file = _pid_file(cluster_folder)
    if pid_file.is_file() and _alive(int(pid_file.read_text() or 0)):
        return
    ensure_realm(cluster_folder)
    port = _port(cluster_folder)
    log = (folder_of(cluster_folder) / "kdc.out").open("ab")
    proc = subprocess.Popen([_tool("krb5kdc"), "-n"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=_env(cluster_folder), start_new_session=True)
    log.close()
    pid_file.write_text(str(proc.pid))
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as probe:
            probe.settimeout(0.5)
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        if proc.poll() is not None or time.monotonic() > deadline:
            out = (folder_of(cluster_folder) / "kdc.out").read_text(errors="replace")[-800:]
            raise KerberosError(f"the KDC did not start on port {port} (exit {proc.poll()}): {out}")
        time.sleep(0.1)


def stop_kdc(cluster_folder: Path) -> None:
    pid_file = _pid_file(cluster_folder)
    if not pid_file.is_file():
        return
    pid = int(pid_file.read_text() or 0)
    if pid and _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            time.sleep(0.1)
    pid_file.unlink(missing_ok=True)
