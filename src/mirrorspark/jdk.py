"""The JDK's command-line tools: finding ``java`` and ``keytool``, and running keytool.

Two layers need them: ``local/`` (the local clusters' JVMs and their TLS material) and
``control/`` (JKS/PKCS12 stores converted for librdkafka). The module sits at the package top,
beside ``paths`` and ``private_files``, and imports nothing from mirrorspark, so ``control/`` can
use keytool without importing the local-cluster package. Each caller raises its own error when a
tool is missing or keytool fails; the texts shared by several callers are here.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

JAVA_MISSING = "java not found: install Java 17+ and put it on PATH (or set JAVA_HOME)"
KEYTOOL_MISSING = "keytool not found: it ships with the JDK; put the JDK's bin on PATH or set JAVA_HOME"


def find_tool(name: str) -> str | None:
    """``$JAVA_HOME/bin/<name>`` when that file exists, else ``<name>`` on PATH, else None."""
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / name if home else None
    return str(candidate) if candidate and candidate.is_file() else shutil.which(name)


def keytool_command(keytool: str, args: list[str], passwords: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """keytool's argv and environment with each password passed as ``-storepass:env NAME`` (or
    ``-keypass``, ``-srcstorepass``, ``-deststorepass``): never on the command line, where any
    local user reads it from ``/proc/<pid>/cmdline`` or ``ps``."""
    argv, env = [keytool, "-J-Xmx64m", *args], dict(os.environ)
    for option, password in passwords.items():
        name = f"MIRRORSPARK_KEYTOOL_{option.lstrip('-').upper()}"
        argv += [f"{option}:env", name]
        env[name] = password
    return argv, env


def run_keytool(keytool: str, args: list[str], passwords: Mapping[str, str],
                stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``keytool`` (a path from ``find_tool``) with the passwords in its environment; output
    captured, the exit code left to the caller."""
    argv, env = keytool_command(keytool, args, passwords)
    return subprocess.run(argv, input=stdin, capture_output=True, env=env, check=False)


KRB5_PROPERTY = "java.security.krb5.conf"


def kerberos_options(existing: str = "") -> list[str]:
    """``-Djava.security.krb5.conf`` from ``KRB5_CONFIG``, as MIT's tools read it, for the JVMs mirrorspark
    starts (the client JVM, Spark's driver and executors): Java itself only reads the property (or
    /etc/krb5.conf), and an MM2 user puts it in KAFKA_OPTS. Nothing when unset, or when ``existing``
    JVM options already set the property."""
    import os

    location = os.environ.get("KRB5_CONFIG", "").strip()
    if not location or f"-D{KRB5_PROPERTY}=" in existing:
        return []
    return [f"-D{KRB5_PROPERTY}={location}"]
