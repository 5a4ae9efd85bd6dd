"""mirrorspark.jdk without a JDK: where tools are looked up, and keytool's passwords kept off argv."""
from __future__ import annotations

import stat
from pathlib import Path

from mirrorspark import jdk


def fake_tool(folder: Path, name: str, body: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / name
    tool.write_text(f"#!/bin/sh\n{body}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return tool


def test_java_home_first_then_path_then_none(tmp_path, monkeypatch):
    home, on_path = tmp_path / "jdk", tmp_path / "path"
    in_home, in_path = fake_tool(home / "bin", "keytool"), fake_tool(on_path, "keytool")
    monkeypatch.setenv("PATH", str(on_path))
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert jdk.find_tool("keytool") == str(in_home)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "elsewhere"))  # JAVA_HOME without the tool: PATH
    assert jdk.find_tool("keytool") == str(in_path)
    monkeypatch.delenv("JAVA_HOME")
    assert jdk.find_tool("keytool") == str(in_path)
    assert jdk.find_tool("java") is None


def test_passwords_in_environment_not_argv(monkeypatch):
    argv, env = jdk.keytool_command("/x/keytool", ["-list", "-keystore", "s.jks"],
                                    {"-storepass": "s3cret", "-keypass": "k3y"})
    assert argv == ["/x/keytool", "-J-Xmx64m", "-list", "-keystore", "s.jks",
                    "-storepass:env", "MIRRORSPARK_KEYTOOL_STOREPASS", "-keypass:env", "MIRRORSPARK_KEYTOOL_KEYPASS"]
    assert env["MIRRORSPARK_KEYTOOL_STOREPASS"] == "s3cret" and env["MIRRORSPARK_KEYTOOL_KEYPASS"] == "k3y"


def test_run_keytool_passes_stdin_and_returns_exit_code(tmp_path):
    tool = fake_tool(tmp_path, "keytool", 'echo "$@"; echo "$MIRRORSPARK_KEYTOOL_STOREPASS"; cat; exit 3')
    done = jdk.run_keytool(str(tool), ["-list"], {"-storepass": "pw"}, stdin=b"typed")
    assert done.returncode == 3
    assert done.stdout.decode().splitlines() == ["-J-Xmx64m -list -storepass:env MIRRORSPARK_KEYTOOL_STOREPASS",
                                                 "pw", "typed"]
