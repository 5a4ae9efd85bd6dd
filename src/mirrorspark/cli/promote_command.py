"""``mirrorspark promote``: a whole-flow cutover; its preflight (every check in one run), its steps
(``--execute``, resumable), ``--abort`` and ``--release``."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from mirrorspark.cli.config_file import ConfigArg, ConfigOption, config_file
from mirrorspark.cli.reporting import EXIT_RUNTIME
from mirrorspark.cli.rest_options import AsJson, CaCert, InstanceUrl, RunStateDir, TokenFile, Verbose, load_for_command


def _view(flow: str, state_dir: Path, url: str | None, token_file: Path | None,
          cacert: Path | None) -> tuple[dict[str, Any] | None, str]:
    """The flow as its running instance's REST API shows it, or why it could not be read."""
    from mirrorspark.cli.status_command import endpoint, read_marker
    from mirrorspark.rest.client import RestUnanswered, read_json

    if url is None and read_marker(state_dir) is None:
        return None, f"no running mirrorspark found ({state_dir / 'rest.json'} is missing)"
    base, token = endpoint(state_dir, url, token_file)
    try:
        flows = read_json(f"{base}/flows", token, cacert)
    except RestUnanswered as exc:
        return None, str(exc)
    views = [view for view in flows if isinstance(view, dict) and view.get("name") == flow]
    writer = [view for view in views if view.get("role") != "standby"]
    if not views:
        return None, f"{base} does not run {flow}"
    return (writer or views)[0], ""


# How long the preflight waits for a flow that is starting (or restarting: real-time mode re-plans a
# topic added by restarting its query at a batch end) to run, before judging it.
STARTING_WAIT = 60.0


def _running_view(flow: str, state_dir: Path, url: str | None, token_file: Path | None,
                  cacert: Path | None) -> tuple[dict[str, Any] | None, str]:
    """``_view``, asked again each second while the flow is ``starting``, up to ``STARTING_WAIT``."""
    deadline = time.monotonic() + STARTING_WAIT
    while True:
        view, problem = _view(flow, state_dir, url, token_file, cacert)
        if view is None or view.get("state") != "starting" or time.monotonic() >= deadline:
            return view, problem
        time.sleep(1.0)


def render(preflight) -> list[str]:
    width = max(len(check.name) for check in preflight.checks)
    lines = [f"promote {preflight.flow}: preflight"]
    for check in preflight.checks:
        lines.append(f"  {'ok  ' if check.ok else 'FAIL'}  {check.name.ljust(width)}  {check.text}")
        if not check.ok and check.fix:
            lines.append(f"        {' ' * width}  fix: {check.fix}")
    lines.append("the cutover, once these pass:")
    lines += [f"  {n}. {step}" for n, step in enumerate(preflight.steps, 1)]
    failed = [check.name for check in preflight.checks if not check.ok]
    lines.append(f"preflight failed: {', '.join(failed)}" if failed else "preflight passed")
    return lines


def promote(
    flow: Annotated[str, typer.Option("--flow", help="The flow whose target takes over, source->target.")],
    config: ConfigArg = None,
    config_option: ConfigOption = None,
    execute: Annotated[bool, typer.Option(
        "--execute", help="Run the cutover (default: the preflight only). Killed or stopped by --timeout, the same "
                          "command resumes where it stopped.")] = False,
    abort: Annotated[bool, typer.Option(
        "--abort", help="Undo a cutover under way: resume the flow, put the groups' offsets back, remove the "
                        "ACLs it created.")] = False,
    release: Annotated[bool, typer.Option(
        "--release", help="Remove the DENY WRITE ACLs the last finished cutover of FLOW left on its source, "
                          "when that cluster takes writes again.")] = False,
    max_lag: Annotated[int, typer.Option(
        "--max-lag", min=0, help="Records of lag under which the cutover fences the source's writers.")] = 10_000,
    quiet_seconds: Annotated[float, typer.Option(
        "--quiet-seconds", min=1.0, help="How long the source topics' ends must stay still after fencing before "
                                         "the cutover drains.")] = 30.0,
    timeout: Annotated[float, typer.Option(
        "--timeout", min=1.0, help="Seconds a step may wait for what it needs before the command stops (exit 1; "
                                   "run it again to resume).")] = 600.0,
    topics: Annotated[str | None, typer.Option(
        "--topics", help="Audit only topics whose source or remote name fully matches this regex.")] = None,
    state_dir: RunStateDir = None,
    url: InstanceUrl = None,
    token_file: TokenFile = None,
    cacert: CaCert = None,
    as_json: AsJson = False,
    verbose: Verbose = False,
) -> None:
    """Move everything from FLOW's source to its target at once. Without --execute, the preflight:
    the flow runs without loss, its records audit clean, every consumer group with checkpoints
    translates exactly and has no consumer on the target yet, the reverse flow copies back what
    producers will write there, and how the source's writers are fenced; every check with what to
    fix (exit 1 when one fails), and the steps. With --execute: wait for the lag, fence the source's
    writers, drain, commit every group's final offsets on the target, pause FLOW."""
    from mirrorspark.cutover.gather import promoted_flow
    from mirrorspark.errors import ConfigError

    if sum((execute, abort, release)) > 1:
        raise ConfigError("give one of --execute, --abort and --release", "--execute")
    mirror, state = load_for_command(config_file(config, config_option), state_dir, verbose)
    name = promoted_flow(mirror, flow)[0].name  # bad input ends here, before any cluster is asked
    options = _Options(mirror=mirror, flow=name, state=state, url=url, token_file=token_file, cacert=cacert,
                       max_lag=max_lag, quiet_seconds=quiet_seconds, timeout=timeout, topics=topics, as_json=as_json)
    if execute or abort or release:
        _change(options, "execute" if execute else "abort" if abort else "release")
        return
    preflight = _preflight(options)
    from mirrorspark.cutover.journal import Journals
    from mirrorspark.state.files import LocalFiles

    under_way = Journals(LocalFiles(state / "promote")).load(name)
    _print(preflight.as_dict() | {"under_way": None if under_way is None else under_way.step}, render(preflight)
           + ([] if under_way is None else [f"a cutover of {name} is under way at step {under_way.step}: --execute "
                                             "resumes it, --abort undoes it"]), as_json)
    if not preflight.ok:
        raise typer.Exit(EXIT_RUNTIME)


@dataclass(frozen=True, kw_only=True)
class _Options:
    mirror: Any
    flow: str
    state: Path
    url: str | None
    token_file: Path | None
    cacert: Path | None
    max_lag: int
    quiet_seconds: float
    timeout: float
    topics: str | None
    as_json: bool


def _print(body: dict[str, Any], lines: list[str], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(body, indent=2))
    else:
        for line in lines:
            typer.echo(line)


def _preflight(options: _Options):
    from mirrorspark.cutover.gather import gather
    from mirrorspark.cutover.preflight import judge

    view, problem = _running_view(options.flow, options.state, options.url, options.token_file, options.cacert)
    return judge(gather(options.mirror, flow_name=options.flow, state_dir=options.state, view=view,
                        view_problem=problem, max_lag=options.max_lag, quiet_seconds=options.quiet_seconds,
                        topics=options.topics))


def _change(options: _Options, action: str) -> None:
    """--execute, --abort or --release, under the flow's lock."""
    from mirrorspark.cli.offsets_commands import _flow_state
    from mirrorspark.cli.reporting import fail
    from mirrorspark.cli.status_command import endpoint
    from mirrorspark.cutover.gather import promoted_flow
    from mirrorspark.cutover.journal import Journal, Journals
    from mirrorspark.cutover.promotion import Promotion, Rest, exclusive
    from mirrorspark.integrity.loss import load
    from mirrorspark.state.files import LocalFiles

    flow, reverse = promoted_flow(options.mirror, options.flow)
    folder = options.state / "promote"
    journals = Journals(LocalFiles(folder))
    say = (lambda line: typer.echo(line, err=True)) if options.as_json else typer.echo
    with exclusive(folder, flow.name):
        journal = journals.load(flow.name)
        if action == "release":
            found = journals.last_finished(flow.name)
            if found is None or not found[1].acls:
                fail(f"no finished cutover of {flow.name} left ACLs on {flow.source.alias}", EXIT_RUNTIME)
        elif action == "abort" and journal is None:
            fail(f"no cutover of {flow.name} is under way (nothing to abort)", EXIT_RUNTIME)
        elif action == "execute" and journal is None:
            preflight = _preflight(options)
            if not preflight.ok:
                for line in render(preflight):
                    typer.echo(line, err=True)
                fail(f"the preflight failed ({', '.join(c.name for c in preflight.checks if not c.ok)}): nothing was "
                     "changed", EXIT_RUNTIME)
            facts = preflight.facts
            journal = Journal(flow=flow.name, topics=list(facts.topics),
                              groups=[*(g.group for g in (facts.audit.groups if facts.audit is not None else ())),
                                      *facts.failback_groups],
                              authorizer=bool(facts.authorizer))
            journals.save(journal)
        elif action == "execute" and journal is not None:
            say(f"resuming the cutover of {flow.name} at step {journal.step}")
        reachable = options.url is not None or (options.state / "rest.json").exists()
        if not reachable and (action == "execute" or (action == "abort" and journal is not None and journal.paused)):
            fail(f"no running mirrorspark found ({options.state / 'rest.json'} is missing): the cutover talks to the "
                 f"instance that writes {flow.name}; start it, or pass --url", EXIT_RUNTIME)
        base, token = endpoint(options.state, options.url, options.token_file) if reachable else ("", None)
        files = _flow_state(options.mirror, flow.source.alias, flow.target.alias, options.state)
        promotion = Promotion(config=options.mirror, flow=flow, reverse=reverse,
                              rest=Rest(base=base, token=token, cacert=options.cacert), journals=journals,
                              losses=None if files is None else load(files), max_lag=options.max_lag,
                              quiet_seconds=options.quiet_seconds, timeout=options.timeout, say=say)
        if action == "release":
            found = journals.last_finished(flow.name)
            assert found is not None
            kept_name, finished = found
            done = promotion.release(finished)
            finished.acls = []
            journals.files.write(kept_name, finished.as_json())
            _print({"flow": flow.name, "released": done}, done, options.as_json)
            return
        assert journal is not None
        if action == "abort":
            undone = promotion.abort(journal)
            kept = journals.close(journal, "aborted")
            _print({"flow": flow.name, "aborted_at": journal.step, "undone": undone, "journal": kept},
                   [*undone, f"the cutover of {flow.name} was undone at step {journal.step} (journal: {kept})"],
                   options.as_json)
            return
        journal = promotion.run(journal)
        kept = journals.close(journal, "done")
        _print({"flow": flow.name, "done": True, "timings": journal.timings, "ends": journal.quiet_ends,
                "committed": journal.committed, "acls": journal.acls, "journal": kept},
               [f"{flow.name} promoted: {flow.target.alias} takes over (steps: "
                + ", ".join(f"{s} {t:.1f} s" for s, t in journal.timings.items()) + ")",
                *([f"{flow.source.alias}'s {len(journal.acls)} topic(s) stay denied WRITE; `promote --flow "
                   f"{flow.name} --release` removes the ACLs when it takes writes again"] if journal.acls else [])],
               options.as_json)
