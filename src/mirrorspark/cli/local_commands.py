"""``mirrorspark local``: real single-node Kafka clusters and a Spark standalone cluster on 127.0.0.1 for demos
and tests."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mirrorspark.cli.reporting import reported
from mirrorspark.local import ClusterSpec, LocalClusters
from mirrorspark.local.security import MECHANISMS, PROTOCOLS, SecurityOptions
from mirrorspark.local.spark_cluster import DAEMON_CONF, LocalSpark, valid_memory

app = typer.Typer(no_args_is_help=True, help="Run real Apache Kafka clusters (KRaft, one node each) and a Spark "
                                               "standalone cluster locally.")
spark_app = typer.Typer(no_args_is_help=True,
                        help="Run a real Spark standalone cluster (a master and N workers) on 127.0.0.1.")
app.add_typer(spark_app, name="spark")

StateDir = Annotated[Path | None, typer.Option(
    "--state-dir", help="Where cluster folders live (default ~/.local/state/mirrorspark).")]


def _clusters(state_dir: Path | None) -> LocalClusters:
    return LocalClusters(state_dir)


def _print_status(rows: list[tuple[str, str]], nothing: str) -> None:
    """One ``name: state`` line each; exit 1 when a pid file is stale."""
    if not rows:
        typer.echo(nothing)
    for name, state in rows:
        typer.echo(f"{name}: {state}")
    if any(state.startswith("stale") for _, state in rows):
        raise typer.Exit(1)


@app.command()
@reported
def up(names: Annotated[list[str], typer.Argument(help="NAME or NAME:PORT per cluster.")],
       state_dir: StateDir = None,
       timeout: Annotated[float, typer.Option(help="Seconds to wait for each broker.")] = 90.0,
       security: Annotated[str, typer.Option(
           "--security", help=f"Client listener protocol: {', '.join(PROTOCOLS)}. TLS material is made with "
                              "keytool; SASL uses a generated user 'mirrorspark' (GSSAPI: a principal of a "
                              "local MIT KDC, with keytabs).")] = "PLAINTEXT",
       sasl_mechanism: Annotated[str, typer.Option(
           "--sasl-mechanism", help=f"With SASL_*: {', '.join(MECHANISMS)}.")] = "SCRAM-SHA-512",
       authorizer: Annotated[bool, typer.Option(
           "--authorizer", help="Start with StandardAuthorizer (ACLs enforced; local tooling is super user).")]
       = False,
       schema_registry: Annotated[bool, typer.Option(
           "--schema-registry", help="Also start a schema registry per cluster (Apicurio Registry, in memory, "
                                     "Confluent's API); its URL is printed as NAME.schema.registry.url.")]
       = False) -> None:
    """Start the clusters (those already running are left as they are); print NAME=BOOTSTRAP lines.

    Secured clusters also print where their Java-style client settings are (``client.properties``,
    ready to copy into mm2.properties as ``NAME.<key>``).
    """
    options = SecurityOptions(security.upper(), sasl_mechanism.upper(), authorizer)
    specs = [ClusterSpec.parse(n, options, schema_registry) for n in names]
    local = _clusters(state_dir)
    for cluster in local.up(specs, timeout=timeout):
        typer.echo(f"{cluster.name}={cluster.bootstrap}")
        if (schemas := local.registry_url(cluster.name)) is not None:
            typer.echo(f"{cluster.name}.schema.registry.url={schemas}")
        if cluster.security.secured:
            typer.echo(f"# {cluster.name} client settings: {local.folder(cluster.name) / 'client.properties'}")
        if cluster.security.uses_sasl and cluster.security.sasl_mechanism == "GSSAPI":
            from mirrorspark.local.kerberos import REALM, krb5_conf

            conf = krb5_conf(local.folder(cluster.name))
            typer.echo(f"# {cluster.name} Kerberos realm {REALM}: export KRB5_CONFIG={conf}")


@app.command()
def status(state_dir: StateDir = None) -> None:
    """Say what runs where; exits 1 if a pid file is stale."""
    _print_status(_clusters(state_dir).status(), "no local clusters")


@app.command()
@reported
def down(names: Annotated[list[str] | None, typer.Argument(help="Clusters to stop (default: all).")] = None,
         state_dir: StateDir = None,
         purge: Annotated[bool, typer.Option(help="Also delete their data and logs.")] = False) -> None:
    """Stop clusters by pid and wait until they are gone."""
    for line in _clusters(state_dir).down(names or None, purge=purge):
        typer.echo(line)


def _memory(value: str) -> str:
    if not valid_memory(value):
        raise typer.BadParameter(f"{value!r} is not a size such as 512m or 2g")
    return value


@spark_app.command("up")
@reported
def spark_up(workers: Annotated[int, typer.Option(min=1, help="Number of workers.")] = 2,
             cores: Annotated[int, typer.Option(min=1, help="Cores each worker offers.")] = 1,
             memory: Annotated[str, typer.Option(callback=_memory, help="Memory each worker offers to executors.")]
             = "1g",
             port: Annotated[int, typer.Option(
                 min=0, max=65535, help="Master port (default: the previous one if free, else any free port).")] = 0,
             state_dir: StateDir = None,
             timeout: Annotated[float, typer.Option(help="Seconds to wait for every worker to register.")]
             = 90.0) -> None:
    """Start a master and workers (left as they are if running); print the spark.master line.

    Paste it into mm2.properties. The daemons outlive this command; `mirrorspark local spark down` stops them.
    """
    local = LocalSpark(state_dir)
    typer.echo(f"spark.master = {local.up(workers, cores, memory, port, timeout)}")
    layout = local.load()
    if layout is not None:
        typer.echo(f"# Spark master web UI: {layout.web_ui}")
        typer.echo(f"# Drivers must know its secret: mirrorspark finds it; other drivers take spark.authenticate* and "
                   f"spark.network.crypto.* from {local.folder / DAEMON_CONF}")


@spark_app.command("status")
def spark_status(state_dir: StateDir = None) -> None:
    """Say whether the master and each worker run; exit 1 if a pid file is stale."""
    _print_status(LocalSpark(state_dir).status(), "no local Spark cluster")


@spark_app.command("down")
@reported
def spark_down(state_dir: StateDir = None,
               purge: Annotated[bool, typer.Option(help="Also delete its logs and work folders.")] = False) -> None:
    """Stop the workers (and their executors), then the master; wait until they are gone."""
    for line in LocalSpark(state_dir).down(purge=purge):
        typer.echo(line)
