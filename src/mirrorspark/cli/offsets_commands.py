"""``mirrorspark offsets translate`` and ``mirrorspark failover``: checkpoints made usable."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from mirrorspark.cli.config_file import ConfigArg, ConfigOption, config_file

GroupOpt = Annotated[str, typer.Option("--group", "-g", help="Consumer group id.")]
FromOpt = Annotated[str, typer.Option("--from", help="Cluster alias the group consumed on.")]
ToOpt = Annotated[str, typer.Option("--to", help="Cluster alias the group moves to.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
StateOpt = Annotated[Path | None, typer.Option(
    "--state-dir", help="mirrorspark's state (default: MIRRORSPARK_STATE_DIR or the per-user folder): the flow's "
                        "loss reports, and what a failover reads twice on a topic both clusters write, are read "
                        "from it.")]

app = typer.Typer(no_args_is_help=True, help="Offset translation from checkpoints (MM2's RemoteClusterUtils).")

_COLUMNS = (("topic", "topic"), ("partition", "part"), ("source_committed", "committed@from"),
            ("checkpoint_upstream", "checkpoint@from"), ("translated", "translated@to"), ("end", "end@to"),
            ("current", "group@to"), ("behind_checkpoint", "behind-ckpt"), ("not_replicated", "not-replicated"),
            ("lost", "lost"), ("read_twice", "read-twice"))


def _table(rows: list[dict], columns) -> str:
    header = [title for _, title in columns]
    body = [["-" if row.get(key) is None else str(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max(len(cell) for cell in col) for col in zip(header, *body, strict=True)]
    return "\n".join("  ".join(cell.rjust(w) if i else cell.ljust(w)
                               for i, (cell, w) in enumerate(zip(line, widths, strict=True)))
                     for line in [header, *body])


def _flow_state(mirror, source: str, target: str, state_dir: Path | None):
    """The flow source->target's state folder when it is local (None: e.g. state on HDFS or S3, which
    only the running process reads)."""
    from mirrorspark.paths import default_state_dir
    from mirrorspark.state.files import LocalFiles
    from mirrorspark.state.location import StateLocation

    location = StateLocation.parse(mirror.driver.state_location, (state_dir or default_state_dir()).resolve())
    return None if location.path is None else LocalFiles(location.path / source / target)


def _plan(config: Path, group: str, source: str, target: str, state_dir: Path | None = None):
    from mirrorspark.client.failover import plan_failover
    from mirrorspark.config import load_config
    from mirrorspark.config.redaction import Redactor, install
    from mirrorspark.integrity.loss import load
    from mirrorspark.offsets import read_twice

    mirror = load_config(config)
    install(Redactor(mirror.secret_values()))  # error messages never echo a configured secret
    files = _flow_state(mirror, source, target, state_dir)
    return plan_failover(mirror, group, source, target, None if files is None else load(files),
                         None if files is None else read_twice.load(files))


def _print_plan(plan, as_json: bool, extra: dict | None = None) -> None:
    rows = [row.as_dict() for row in plan.partitions]
    if as_json:
        typer.echo(json.dumps({"group": plan.group, "from": plan.source, "to": plan.target,
                               "group_state_on_to": plan.state, "from_reachable": plan.source_reachable,
                               "partitions": rows, **(extra or {})}, indent=2))
        return
    if not rows:
        typer.echo(f"no checkpoints for group {plan.group!r} from {plan.source!r} on {plan.target!r} "
                   f"(is the flow {plan.source}->{plan.target} running with checkpoints enabled, and has the "
                   "group committed offsets on replicated topics?)")
        return
    typer.echo(_table(rows, _COLUMNS))
    if not plan.source_reachable:
        typer.echo(f"(cluster {plan.source!r} did not answer: source-side columns are empty)")


def translate(group: GroupOpt, source: FromOpt, target: ToOpt, config: ConfigArg = None,
              config_option: ConfigOption = None, state_dir: StateOpt = None, as_json: JsonOpt = False) -> None:
    """Where GROUP, consuming on --from, would resume on --to (from the checkpoints on --to)."""
    _print_plan(_plan(config_file(config, config_option), group, source, target, state_dir), as_json)


def failover(group: GroupOpt, source: FromOpt, target: ToOpt, config: ConfigArg = None,
             config_option: ConfigOption = None,
             execute: Annotated[bool, typer.Option("--execute", help="Commit the offsets (default: dry run).")] = False,
             allow_loss: Annotated[bool, typer.Option(
                 "--allow-loss",
                 help="Fail over even where records the group has not read were reported lost.")] = False,
             state_dir: StateOpt = None, as_json: JsonOpt = False) -> None:
    """Move GROUP from --from to --to: show lag and the offsets to commit; --execute commits them
    (only when the group has no active members on --to; never moves a partition backwards).
    Failback is the same command with --from and --to swapped."""
    from mirrorspark.cli.reporting import EXIT_RUNTIME, fail
    from mirrorspark.client.failover import execute_failover
    from mirrorspark.config import load_config

    config = config_file(config, config_option)
    plan = _plan(config, group, source, target, state_dir)
    if not execute:
        _print_plan(plan, as_json, {"executed": False})
        if not as_json:
            typer.echo("dry run: add --execute to commit these offsets")
        return
    if not plan.partitions:
        _print_plan(plan, as_json)
        fail(f"nothing to commit for group {group!r}", EXIT_RUNTIME)
    written = execute_failover(load_config(config), plan, allow_loss)  # GroupActive, CheckpointAhead, RecordsLost
    _print_plan(plan, as_json, {"executed": True, "committed": [
        {"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(written.items())]})
    if not as_json:
        typer.echo(f"committed {len(written)} offset(s) for group {group!r} on {target!r}")
    missing = [f"{r.topic}[{r.partition}]" for r in plan.partitions if r.missing]
    if missing:
        typer.echo(f"not committed: {', '.join(missing)} (no such partition on {target!r} any more; its checkpoint "
                   "is stale)", err=True)
