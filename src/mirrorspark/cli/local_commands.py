"""``mirrorspark local``: real single-node Kafka clusters on 127.0.0.1 for demos and tests."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from mirrorspark.local import ClusterSpec, LocalClusterError, LocalClusters
from mirrorspark.local.security import MECHANISMS, PROTOCOLS, SecurityError, SecurityOptions

app = typer.Typer(no_args_is_help=True, help="Run real Apache Kafka clusters (KRaft, one node each) locally.")

StateDir = Annotated[Optional[Path], typer.Option("--state-dir", help="Where cluster folders live (default ./state).")]


def _clusters(state_dir: Optional[Path]) -> LocalClusters:
    return LocalClusters(state_dir)


def _fail(exc: Exception) -> None:
    typer.echo(f"mirrorspark: error: {exc}", err=True)
    raise typer.Exit(1)


@app.command()
def up(names: Annotated[list[str], typer.Argument(help="NAME or NAME:PORT per cluster.")],
       state_dir: StateDir = None,
       timeout: Annotated[float, typer.Option(help="Seconds to wait for each broker.")] = 90.0,
       security: Annotated[str, typer.Option(
           "--security", help=f"Client listener protocol: {', '.join(PROTOCOLS)}. TLS material is made with "
                              "keytool; SASL uses a generated user 'mirrorspark'.")] = "PLAINTEXT",
       sasl_mechanism: Annotated[str, typer.Option(
           "--sasl-mechanism", help=f"With SASL_*: {', '.join(MECHANISMS)}.")] = "SCRAM-SHA-512",
       authorizer: Annotated[bool, typer.Option(
           "--authorizer", help="Start with StandardAuthorizer (ACLs enforced; local tooling is super user).")]
       = False) -> None:
    """Start the clusters (those already running are left as they are); print NAME=BOOTSTRAP lines.

    Secured clusters also print where their Java-style client settings are (``client.properties``,
    ready to copy into mm2.properties as ``NAME.<key>``).
    """
    try:
        options = SecurityOptions(security.upper(), sasl_mechanism.upper(), authorizer)
        specs = [ClusterSpec.parse(n, options) for n in names]
        local = _clusters(state_dir)
        for cluster in local.up(specs, timeout=timeout):
            typer.echo(f"{cluster.name}={cluster.bootstrap}")
            if cluster.security.secured:
                typer.echo(f"# {cluster.name} client settings: {local.folder(cluster.name) / 'client.properties'}")
    except (LocalClusterError, SecurityError) as exc:
        _fail(exc)


@app.command()
def status(state_dir: StateDir = None) -> None:
    """Say what runs where; exits 1 if a pid file is stale."""
    rows = _clusters(state_dir).status()
    if not rows:
        typer.echo("no local clusters")
    for name, state in rows:
        typer.echo(f"{name}: {state}")
    if any(state.startswith("stale") for _, state in rows):
        raise typer.Exit(1)


@app.command()
def down(names: Annotated[Optional[list[str]], typer.Argument(help="Clusters to stop (default: all).")] = None,
         state_dir: StateDir = None,
         purge: Annotated[bool, typer.Option(help="Also delete their data and logs.")] = False) -> None:
    """Stop clusters by pid and wait until they are gone."""
    try:
        for line in _clusters(state_dir).down(names or None, purge=purge):
            typer.echo(line)
    except LocalClusterError as exc:
        _fail(exc)
