"""``mirrorspark migrate from-mm2``: continue where a stopped MirrorMaker 2 left off."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from mirrorspark.cli.config_file import ConfigArg, ConfigOption, SecretsDir, config_file

app = typer.Typer(no_args_is_help=True, help="Take flows over from another replicator.")

_COLUMNS = (("topic", "topic"), ("partition", "part"), ("remote", "remote topic"),
            ("mm2_committed", "MM2 committed"), ("target_end", "target end"), ("resume", "resume at"),
            ("written_after_commit", "MM2 wrote after commit"), ("copied_twice", "copied twice"), ("lost", "lost"),
            ("method", "how"))


def _table(rows: list[dict]) -> str:
    header = [title for _, title in _COLUMNS]
    body = [["?" if row.get(k) is None else str(row.get(k)) for k, _ in _COLUMNS] for row in rows]
    widths = [max(len(cell) for cell in col) for col in zip(header, *body, strict=True)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
                     for line in [header, *body])


def from_mm2(
    config: ConfigArg = None,
    config_option: ConfigOption = None,
    execute: Annotated[bool, typer.Option("--execute", help="Write the positions (default: dry run).")] = False,
    clusters: Annotated[list[str] | None, typer.Option("--clusters", help="As for run.")] = None,
    state_dir: Annotated[Path | None, typer.Option(
        "--state-dir", help="As for run (default ~/.local/state/mirrorspark).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    wait: Annotated[float, typer.Option(help="Seconds to watch for heartbeats of a still running MM2.")] = 3.0,
) -> None:
    """Plan (and with --execute, prepare) each enabled flow's first start just after the last record
    the stopped MM2 wrote: nothing lost, nothing copied twice where MM2's offset syncs anchor it.
    Refuses while MM2 runs, or when its remote topics are not where this file's policy writes."""
    from mirrorspark.config import load_config
    from mirrorspark.paths import default_state_dir
    from mirrorspark.state import StateLocation
    from mirrorspark.state.location import KEY as STATE_KEY
    from mirrorspark.takeover.plan import check_first_start, plan_flow
    from mirrorspark.takeover.plan import execute as carry_out

    mirror = load_config(config_file(config, config_option), list(clusters) if clusters else None)
    from mirrorspark.pipeline.preflight import preflight

    preflight(mirror)
    plans = [(flow, plan_flow(flow, wait)) for flow in mirror.enabled_flows]  # all planned before any is written
    if execute:
        location = StateLocation.parse(mirror.driver.state_location, (state_dir or default_state_dir()).resolve())
        if location.needs_spark:
            from mirrorspark.takeover.mm2_state import TakeoverRefused

            raise TakeoverRefused(f"{STATE_KEY} is {location.describe()}: run the migration with the state on a local "
                                  "path, then copy it there")
        state = location.open()
        folders = [state.child(flow.source.alias).child(flow.target.alias) for flow, _ in plans]
        for (flow, _), folder in zip(plans, folders, strict=True):
            check_first_start(flow, folder)  # every flow before anything is written
        for (flow, plan), folder in zip(plans, folders, strict=True):
            carry_out(flow, plan, folder)
    if as_json:
        typer.echo(json.dumps({"executed": execute, "flows": [p.as_dict() for _, p in plans]}, indent=2))
        return
    for flow, plan in plans:
        body = plan.as_dict()
        twice = body["copied_twice"]
        typer.echo(f"flow {flow.name} (from {plan.offsets_topic}; {plan.skipped_records} unreadable record(s) skipped)")
        typer.echo(_table(body["partitions"]))
        lost = sum(p.lost for p in plan.partitions)
        copied = "unknown (no offset sync anchored some partitions)" if twice is None else twice
        retention = " (deleted by retention before anyone copied them; reported again at start)" if lost else ""
        typer.echo(f"records copied twice: {copied}; records lost: {lost}{retention}\n")
    typer.echo("written: start `mirrorspark run` with the same config and state dir" if execute
               else "dry run: add --execute to write these positions")


def from_strimzi(
    resource: Annotated[Path, typer.Argument(help="A file holding one KafkaMirrorMaker2 resource (YAML).")],
    secrets: SecretsDir = None,
) -> None:
    """Print the mm2.properties a Strimzi KafkaMirrorMaker2 resource means (mirrorspark also runs the
    resource itself). Secrets stay in their mounted files: the properties refer to them."""
    from mirrorspark.config.strimzi import convert, secrets_dir, to_properties
    from mirrorspark.errors import ConfigError

    try:
        text = resource.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {resource}: {getattr(exc, 'strerror', None) or exc}") from None
    conversion = convert(text, str(resource), secrets_dir(secrets))
    typer.echo(to_properties(conversion, resource.name), nl=False)
