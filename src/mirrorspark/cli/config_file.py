"""The mm2.properties file of a command, given either way: as an argument (``run FILE``, MM2's form)
or as ``--config FILE``, so no user has to remember which command takes which."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mirrorspark.errors import ConfigError

ConfigArg = Annotated[Path | None, typer.Argument(help="An MM2 mm2.properties file, or a Strimzi KafkaMirrorMaker2 "
                                                       "resource (YAML), or give it with --config.",
                                                  show_default=False)]
SecretsDir = Annotated[Path | None, typer.Option(
    "--secrets-dir", help="A Strimzi resource's Secrets: one folder per Secret, one file per key, as Kubernetes "
                          "mounts them (default $MIRRORSPARK_SECRETS_DIR or /etc/mirrorspark/secrets).")]
ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", help="The mm2.properties file, as an option "
                                                                          "(or give it as the argument).")]


def config_file(argument: Path | None, option: Path | None) -> Path:
    """The one file given; two different ones, or none, is bad input."""
    if argument is not None and option is not None and argument != option:
        raise ConfigError(f"two files given: {argument} and --config {option}; give one", "--config")
    path = argument if argument is not None else option
    if path is None:
        raise ConfigError("no mm2.properties file given: pass it as the argument or with --config", "--config")
    return path
