"""The ``mirrorspark`` command line."""
from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from typing import Annotated

import typer

from mirrorspark.cli import (
    audit_command,
    local_commands,
    migrate_command,
    offsets_commands,
    promote_command,
    reconcile_command,
    status_command,
)
from mirrorspark.cli.config_file import ConfigArg, ConfigOption, SecretsDir, config_file
from mirrorspark.cli.reporting import reported

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Kafka cross-cluster replication, MirrorMaker 2 compatible, on Apache Spark.")


def _version(value: bool) -> None:
    if value:
        from mirrorspark.metrics.registry import build_labels

        labels = build_labels()
        typer.echo(f"mirrorspark {labels['version']} (Spark {labels['spark_version']}, Kafka clients "
                   f"{labels['kafka_version']}, Python {labels['python_version']})")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """Kafka cross-cluster replication, MirrorMaker 2 compatible, on Apache Spark."""


app.add_typer(local_commands.app, name="local")
app.add_typer(offsets_commands.app, name="offsets")
app.add_typer(migrate_command.app, name="migrate")

def _setup_logging(verbose: bool, json_lines: bool = False) -> None:
    from mirrorspark.cli.logging_setup import setup_logging

    setup_logging(verbose, json_lines)


def _clusters_list(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


StateDir = Annotated[Path | None, typer.Option(
    "--state-dir", help="Checkpoints and local clusters (default ~/.local/state/mirrorspark).")]


@app.command()
@reported
def run(
    config: ConfigArg = None,
    config_option: ConfigOption = None,
    clusters: Annotated[list[str] | None, typer.Option(
        "--clusters", help="Only run flows whose target is one of these clusters (as MM2's --clusters).")] = None,
    state_dir: StateDir = None,
    progress_interval: Annotated[float, typer.Option(help="Seconds between progress lines.")] = 10.0,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    log_format: Annotated[str, typer.Option(help="plain, or json: one object per line naming the flow.")] = "plain",
    fresh_copy: Annotated[bool, typer.Option(
        "--fresh-copy", help="A flow with no state whose remote topics already hold records copies everything "
                             "again (default: resume after what the target holds, or refuse).")] = False,
    secrets: SecretsDir = None,
) -> None:
    """Replicate every enabled flow of CONFIG until SIGINT/SIGTERM."""
    from mirrorspark.config import load_config
    from mirrorspark.paths import default_state_dir
    from mirrorspark.pipeline.runner import Replicator

    if log_format not in ("plain", "json"):
        raise typer.BadParameter("must be plain or json", param_hint="--log-format")
    _setup_logging(verbose, log_format == "json")
    mirror = load_config(config_file(config, config_option), _clusters_list(clusters), secrets=secrets)
    from mirrorspark.cli.logging_setup import scrub_secrets
    scrub_secrets(mirror.secret_values())
    for warning in mirror.warnings:
        logging.getLogger("mirrorspark.config").warning("%s", warning)
    from mirrorspark.cutover.journal import Journals
    from mirrorspark.state.files import LocalFiles
    state = (state_dir or default_state_dir()).resolve()
    replicator = Replicator(mirror, state, fresh_copy=fresh_copy,
                            promotions=Journals(LocalFiles(state / "promote")).view)
    replicator.install_signal_handlers()
    replicator.launch()
    doing = f"replicating {', '.join(f.name for f in replicator.writing())}" if mirror.enabled_flows \
        else "heartbeats only (no flow enabled)"
    typer.echo(f"mirrorspark: {doing}; Ctrl-C or SIGTERM stops", err=True)
    # flows failed for good (all, or some before the stop): FlowsFailed, an operational error (exit 1)
    try:
        replicator.run(progress=lambda line: typer.echo(line, err=True), progress_interval=progress_interval)
    finally:
        # The stop has run. A stop signal now (a service manager's, sent as every flow failed) must not
        # end the exit by the signal: Python restores the default action while it shuts down, and the
        # exit code would say "killed" instead of 0 or 1. Ignored handlers are left as they are.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    typer.echo("mirrorspark: stopped", err=True)


@app.command()
@reported
def validate(
    config: ConfigArg = None,
    config_option: ConfigOption = None,
    clusters: Annotated[list[str] | None, typer.Option("--clusters", help="As for run.")] = None,
    offline: Annotated[bool, typer.Option(help="Check the file, not this machine: do not contact the clusters, and "
                                                "list secrets, files and stores it lacks as needed at run time.")
                       ] = False,
    strict: Annotated[bool, typer.Option(help="Exit 2 when the file has warnings (keys MM2 ignores, no-ops) or, "
                                               "offline, anything needed at run time: for CI.")] = False,
    show: Annotated[bool, typer.Option("--show", help="Print each flow's effective settings, defaults included "
                                                       "(secrets hidden).")] = False,
    secrets: SecretsDir = None,
) -> None:
    """Check CONFIG, print resolved flows and settings (secrets hidden) and, with the clusters
    reachable, which topics each flow would replicate under which remote names. Every error of
    the file is reported in one run."""
    from mirrorspark.cli.validate_command import describe
    from mirrorspark.config import load_config
    from mirrorspark.control.client_settings import check_stores_only
    from mirrorspark.errors import ConfigError
    from mirrorspark.pipeline.preflight import preflight

    mirror = load_config(config_file(config, config_option), _clusters_list(clusters), offline=offline,
                         secrets=secrets)
    pending = list(mirror.needed_at_run_time)
    check_stores_only(True)  # keystores are opened with their passwords, and no converted copy is kept
    try:
        preflight(mirror, pending if offline else None)  # the very checks run makes before it touches a cluster
    finally:
        check_stores_only(False)
    describe(mirror, typer.echo, probe=not offline, show=show, pending=pending)
    if strict and (mirror.warnings or pending):
        raise ConfigError(f"--strict: {len(mirror.warnings)} warning(s) (keys that have no effect) and {len(pending)} "
                          "item(s) needed at run time (not on this machine) above")


@app.command()
@reported
def demo(state_dir: StateDir = None) -> None:
    """Start two local clusters, replicate sample data primary->backup, show it, stop everything."""
    from mirrorspark.demo import run_demo
    from mirrorspark.paths import default_state_dir

    _setup_logging(False)
    logging.getLogger().setLevel(logging.WARNING)
    run_demo((state_dir or default_state_dir()).resolve() / "demo", typer.echo)


app.command()(reported(offsets_commands.failover))
app.command()(reported(status_command.status))
app.command()(reported(audit_command.audit))
app.command()(reported(promote_command.promote))
app.command()(reported(reconcile_command.reconcile))
offsets_commands.app.command()(reported(offsets_commands.translate))
migrate_command.app.command("from-mm2")(reported(migrate_command.from_mm2))
migrate_command.app.command("from-strimzi")(reported(migrate_command.from_strimzi))


def _normalise_clusters_flag(argv: list[str]) -> list[str]:
    """Accept MM2's ``--clusters A B`` as well as ``--clusters A --clusters B`` and ``--clusters A,B``."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        out.append(argv[i])
        if argv[i] == "--clusters":
            values = []
            while i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                values.append(argv[i + 1])
                i += 1
            out.append(",".join(values))
        i += 1
    return out


def main() -> None:
    app(args=_normalise_clusters_flag(sys.argv[1:]), prog_name="mirrorspark")
