"""``mirrorspark status``: a readable table of a running replicator's flows, from its REST API."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from mirrorspark.cli.reporting import EXIT_RUNTIME, fail
from mirrorspark.rest.client import RestUnanswered, read_json


def read_marker(state_dir: Path) -> dict[str, Any] | None:
    """``<state-dir>/rest.json`` as written by a running ``mirrorspark run``, or None."""
    try:
        marker = json.loads((state_dir / "rest.json").read_text())
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) and "url" in marker else None


def find_url(state_dir: Path) -> str:
    marker = read_marker(state_dir)
    if marker is None:
        fail(f"no running mirrorspark found: {state_dir / 'rest.json'} is missing (is `mirrorspark run --state-dir "
             f"{state_dir}` running with mirrorspark.rest.enabled = true?); or pass --url", EXIT_RUNTIME)
        raise AssertionError  # unreachable: fail() exits
    return str(marker["url"])


def endpoint(state_dir: Path, url: str | None, token_file: Path | None) -> tuple[str, str | None]:
    """The REST address and the token to send: the one in ``--token-file``, else ``$MIRRORSPARK_REST_TOKEN``,
    else the token the running process generated into ``<state-dir>/rest.token`` (only sent to the
    address that same state dir names, never to another server). Never from the command line, where
    any local user reads it."""
    from mirrorspark.rest.security import TOKEN_FILE, read_token

    marker = read_marker(state_dir)
    base = (url or find_url(state_dir)).rstrip("/")
    token = None
    if token_file is not None:
        try:
            token = token_file.read_text().strip() or None
        except OSError as exc:
            fail(f"--token-file {token_file}: {exc.strerror or exc}", EXIT_RUNTIME)
    token = token or os.environ.get("MIRRORSPARK_REST_TOKEN") or None
    if token is None and marker is not None and str(marker["url"]).rstrip("/") == base and marker.get("token_file"):
        token = read_token(state_dir / TOKEN_FILE)
    return base, token


def get_json(url: str, token: str | None, cacert: Path | None = None) -> Any:
    """``read_json``, a failure ending the command (exit 1)."""
    try:
        return read_json(url, token, cacert)
    except RestUnanswered as exc:
        fail(str(exc), EXIT_RUNTIME)


def _age(timestamp: float | None) -> str:
    return "-" if timestamp is None else f"{max(0.0, time.time() - timestamp):.0f}s ago"


def table(flows: list[dict[str, Any]]) -> list[str]:
    header = ("FLOW", "STATE", "TOPICS", "RECORDS", "RECOPIED", "LOST", "RESTARTS", "LAG", "LAG(S)", "LAST BATCH")
    rows = [header] + [(f["name"], f["state"], str(f["topics"]), str(f["records_replicated"]),
                        str(f["records_recopied"]), str(f.get("records_lost", 0)), str(f.get("restarts", 0)),
                        str(f["lag_offsets"]), f"{f['lag_seconds']:.1f}", _age(f["last_batch_time"])) for f in flows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines += [f"{f['name']}: {f['error']}" for f in flows if f.get("error")]
    lines += [f"{f['name']}: {promotion_line(f['promotion'])}" for f in flows if f.get("promotion")]
    return lines


def promotion_line(promotion: dict[str, Any]) -> str:
    """A ``promote`` under way, as one line: its step among the steps, since when, what it fenced."""
    if promotion.get("error"):
        return f"promotion journal unreadable: {promotion['error']}"
    steps = promotion.get("steps") or []
    step = promotion.get("step", "?")
    where = f" ({steps.index(step) + 1} of {len(steps)})" if step in steps else ""
    fenced = f", {promotion['fenced']} topic(s) fenced by ACLs" if promotion.get("fenced") else ""
    return (f"promotion under way: next step {step}{where}, started {_age(promotion.get('started'))}, "
            f"{promotion.get('topics', 0)} topic(s), {promotion.get('groups', 0)} group(s){fenced}")


def status(
    state_dir: Annotated[
        Path | None, typer.Option(
            "--state-dir", help="The run's state dir (default ~/.local/state/mirrorspark).")] = None,
    url: Annotated[str | None, typer.Option(help="The REST API's address, instead of --state-dir.")] = None,
    token_file: Annotated[Path | None, typer.Option(
        "--token-file", help="A file holding the REST token (default: $MIRRORSPARK_REST_TOKEN, else the generated "
                             "one in <state-dir>/rest.token).")] = None,
    cacert: Annotated[Path | None, typer.Option(
        "--cacert", help="PEM CA certificates for an https REST API (default: $MIRRORSPARK_REST_CACERT, else the "
                         "system's).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The REST answer as JSON.")] = False,
) -> None:
    """Flows of a running mirrorspark: state, records, re-copies, lag and the last batch."""
    from mirrorspark.paths import default_state_dir

    base, token = endpoint((state_dir or default_state_dir()).resolve(), url, token_file)
    flows = get_json(f"{base}/flows", token, cacert)
    if as_json:
        typer.echo(json.dumps(flows, indent=2))
        return
    for line in table(flows):
        typer.echo(line)
