"""``mirrorspark --version`` says what runs: the package's version (pyproject.toml's) and what it runs on."""
from __future__ import annotations

import platform

from typer.testing import CliRunner

from mirrorspark.cli.app import app
from mirrorspark.version import version


def test_version_names_the_package_spark_kafka_clients_and_python():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"mirrorspark {version()} (Spark ") and version() != "unknown"
    assert f"Python {platform.python_version()})" in result.output


def test_commands_still_run_under_the_version_option():
    result = CliRunner().invoke(app, ["validate", "--help"])
    assert result.exit_code == 0 and "validate" in result.output.lower()
