"""Options of the commands that talk to a running instance's REST API (``promote``, ``reconcile``),
and those commands' common start."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any

import typer

RunStateDir = Annotated[Path | None, typer.Option(
    "--state-dir", help="The state dir `run` used (default ~/.local/state/mirrorspark).")]
InstanceUrl = Annotated[str | None, typer.Option(
    "--url", help="The REST API of the instance that writes the flow, instead of --state-dir's.")]
TokenFile = Annotated[Path | None, typer.Option(
    "--token-file", help="A file holding the REST token (default: $MIRRORSPARK_REST_TOKEN, else the generated one "
                         "in <state-dir>/rest.token).")]
CaCert = Annotated[Path | None, typer.Option("--cacert", help="PEM CA certificates for an https REST API.")]
AsJson = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v")]


def load_for_command(config: Path, state_dir: Path | None, verbose: bool) -> tuple[Any, Path]:
    """A short command's start: its logging, the configuration (its secrets scrubbed from every log
    line, its warnings logged) and the state dir, where converted key material is kept."""
    from mirrorspark.cli.logging_setup import scrub_secrets, setup_logging
    from mirrorspark.config import load_config
    from mirrorspark.control.client_settings import use_state_dir
    from mirrorspark.paths import default_state_dir

    setup_logging(verbose)
    mirror = load_config(config)
    scrub_secrets(mirror.secret_values())
    state = (state_dir or default_state_dir()).resolve()
    use_state_dir(state)
    for warning in mirror.warnings:
        logging.getLogger("mirrorspark.config").warning("%s", warning)
    return mirror, state
