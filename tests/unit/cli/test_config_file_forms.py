"""Every command that reads mm2.properties takes it as the argument or as --config."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mirrorspark.cli.app import app

GOOD = "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\nA->B.enabled = true\n"


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    return result, result.output + (result.stderr if result.stderr_bytes is not None else "")


@pytest.mark.parametrize("form", ["argument", "--config", "-c"])
def test_validate_reads_the_file_given_either_way(tmp_path, form):
    path = tmp_path / "mm2.properties"
    path.write_text(GOOD)
    args = [str(path)] if form == "argument" else [form, str(path)]
    result, output = invoke("validate", *args, "--offline")
    assert result.exit_code == 0, output


@pytest.mark.parametrize("command", [
    ["failover", "--group", "g", "--from", "A", "--to", "B"],
    ["offsets", "translate", "--group", "g", "--from", "A", "--to", "B"],
    ["migrate", "from-mm2"],
    ["audit", "--flow", "A->B"],
    ["run"],
])
@pytest.mark.parametrize("form", ["argument", "--config"])
def test_each_command_reads_the_file_given_either_way(tmp_path, command, form):
    path = tmp_path / "mm2.properties"
    path.write_text("clusters = A\n")  # refused at load, naming `clusters`: proof the file was read
    args = [str(path)] if form == "argument" else ["--config", str(path)]
    result, output = invoke(*command, *args)
    assert result.exit_code == 2, output
    assert "clusters" in output and "Traceback" not in output and "no mm2.properties" not in output


def test_no_file_or_two_different_files_are_refused(tmp_path):
    result, output = invoke("validate", "--offline")
    assert result.exit_code == 2 and "no mm2.properties file given" in output
    a, b = tmp_path / "a.properties", tmp_path / "b.properties"
    result, output = invoke("validate", str(a), "--config", str(b), "--offline")
    assert result.exit_code == 2 and "two files given" in output
