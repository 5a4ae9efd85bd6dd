"""``mirrorspark audit``: does the target hold exactly what the source has, over the replicated range?

Exit codes: 0 nothing missing, duplicated or differing; 1 something is (or the job failed);
2 bad input (unknown flow, bad regex, no state for the flow).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from mirrorspark.cli.config_file import ConfigArg, ConfigOption, config_file
from mirrorspark.cli.offsets_commands import _table as table
from mirrorspark.cli.reporting import EXIT_RUNTIME

_COLUMNS = (("source_topic", "topic"), ("partition", "part"), ("remote_topic", "remote"),
            ("source_span", "source-range"), ("target_span", "target-range"), ("source_records", "source"),
            ("target_records", "target"), ("missing", "missing"), ("duplicated", "dup"), ("differing", "diff"),
            ("unverified", "unverified"), ("source_removed", "src-removed"), ("source_checksum", "source-sum"),
            ("target_checksum", "target-sum"))


def _span(pair: tuple[int, int]) -> str:
    return f"{pair[0]}..{pair[1]}"


def render(report) -> list[str]:
    """The readable form: the partition table, the first offset of each problem, data loss, notes,
    one verdict per consumer group, and a summary line."""
    rows = [{**p.as_dict(), "source_span": _span(p.source_range), "target_span": _span(p.target_range)}
            for p in report.partitions]
    lines = [f"flow {report.flow} (state {report.state})", table(rows, _COLUMNS)]
    for p in report.partitions:
        firsts = [f"first {kind} {side} offset {value}" for kind, side, value in
                  (("missing", "source", p.first_missing), ("duplicated", "target", p.first_duplicated),
                   ("differing", "source", p.first_differing)) if value is not None]
        if firsts:
            lines.append(f"{p.source_topic}[{p.partition}]: {'; '.join(firsts)}")
    lines += [f"data loss reported: {r.line()}" for r in report.data_loss]
    lines += [f"note: {note}" for note in report.notes]
    if report.checkpoints_skipped:
        lines.append(f"note: {report.checkpoints_skipped} malformed checkpoint record(s) skipped")
    for verdict in report.groups:
        lines.append(f"group {verdict.group}: {'SAFE' if verdict.safe else 'NOT SAFE'} to fail over")
        lines += [f"  {'ok  ' if r.ok else 'FAIL'}  {r.text}" for r in verdict.reasons]
    if not report.groups:
        lines.append("no consumer group has checkpoints for these topics")
    t = report.totals()
    lines.append(f"audit {report.flow}: {t['source_records']} source / {t['target_records']} target record(s) in "
                 f"{len(report.partitions)} partition(s): {t['missing']} missing, {t['duplicated']} duplicated, "
                 f"{t['differing']} differing ({report.seconds:.1f} s)")
    return lines


def audit(
    flow: Annotated[str, typer.Option("--flow", help="The flow to audit, source->target (e.g. primary->backup).")],
    config: ConfigArg = None,
    config_option: ConfigOption = None,
    topics: Annotated[str | None, typer.Option(
        "--topics", help="Only topics whose source or remote name fully matches this regex.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    state_dir: Annotated[Path | None, typer.Option(
        "--state-dir", help="The state dir `run` used (default ~/.local/state/mirrorspark).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Compare source and target record by record over the flow's replicated offset ranges (a Spark
    batch job): missing, duplicated and differing records per partition, checksums, and whether
    each consumer group with checkpoints is safe to fail over. Exit 1 when anything differs."""
    from mirrorspark.audit.run import run_audit
    from mirrorspark.cli.rest_options import load_for_command

    mirror, state = load_for_command(config_file(config, config_option), state_dir, verbose)
    report = run_audit(mirror, flow, topics, state)
    if as_json:
        typer.echo(json.dumps(report.as_dict(), indent=2))
    else:
        for line in render(report):
            typer.echo(line)
    if not report.ok:
        raise typer.Exit(EXIT_RUNTIME)
