"""``mirrorspark reconcile``: after an unplanned failover, move aside what the old primary took that
never reached the new one (``cutover.reconcile``); a dry run by default."""
from __future__ import annotations

import json
import urllib.parse
from typing import Annotated, Any

import typer

from mirrorspark.cli.config_file import ConfigArg, ConfigOption, config_file
from mirrorspark.cli.reporting import EXIT_RUNTIME, fail
from mirrorspark.cli.rest_options import AsJson, CaCert, InstanceUrl, RunStateDir, TokenFile, Verbose, load_for_command


def reconcile(
    flow: Annotated[str, typer.Option("--flow", help="The flow whose source failed, source->target.")],
    config: ConfigArg = None,
    config_option: ConfigOption = None,
    execute: Annotated[bool, typer.Option(
        "--execute", help="Copy the records aside and make the flow skip them (default: report them only). The "
                          "flow must be paused. Killed, the same command continues.")] = False,
    topics: Annotated[str | None, typer.Option(
        "--topics", help="Only source topics whose name fully matches this regex.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1.0, help="Seconds to read one partition's "
                                                                      "records.")] = 120.0,
    state_dir: RunStateDir = None,
    url: InstanceUrl = None,
    token_file: TokenFile = None,
    cacert: CaCert = None,
    as_json: AsJson = False,
    verbose: Verbose = False,
) -> None:
    """After an unplanned failover from FLOW's source A to its target B, with A back: find, per source
    partition, the records A took after the last one copied to B; with --execute, copy them in order
    into side topics on B and on A (`<name>.diverged.internal`, each record's origin in a header) and
    make FLOW skip them, so nothing is appended late to B's remote topics and a group failing back to
    A resumes after them. Nothing is deleted. FLOW stays paused: B->A carries B's records to A."""
    from mirrorspark.audit.settings import find_flow
    from mirrorspark.cli.status_command import endpoint, read_marker
    from mirrorspark.errors import ConfigError
    from mirrorspark.rest.client import RestUnanswered, read_json

    mirror, state = load_for_command(config_file(config, config_option), state_dir, verbose)
    found = find_flow(mirror, flow)
    if found.same_names:
        raise ConfigError(f"{found.name} runs active/active on the same topic names: its target's topics hold the "
                          "target's own records after the copy, which reconcile cannot tell apart yet",
                          "replication.policy.class")
    if not found.options.emit_offset_syncs:
        raise ConfigError(f"{found.name} keeps no offset mapping (emit.offset-syncs.enabled = false): where its "
                          "copy ends is not known", "emit.offset-syncs.enabled")
    if url is None and read_marker(state) is None:
        fail(f"no running mirrorspark found ({state / 'rest.json'} is missing): reconcile asks the instance that "
             f"writes {found.name} where its copy ends; start it with {found.name} paused, or pass --url",
             EXIT_RUNTIME)
    base, token = endpoint(state, url, token_file)
    path = f"{base}/flows/" + urllib.parse.quote(found.name, safe="")
    try:
        view = read_json(path, token, cacert)
        rows = read_json(f"{path}/copy-ends", token, cacert)
    except RestUnanswered as exc:
        fail(str(exc), EXIT_RUNTIME)
        raise AssertionError from None  # unreachable: fail() exits
    say = (lambda line: typer.echo(line, err=True)) if as_json else typer.echo
    if view.get("state") != "paused":
        message = (f"{found.name} is {view.get('state')}, not paused: pause it (POST {path}/pause) before the source "
                   "comes back, or it copies these records into the remote topics itself")
        if execute:
            fail(message + "; nothing was changed", EXIT_RUNTIME)
        say(f"warning: {message}")
    report = _reconcile(mirror, found, rows, topics=topics, timeout=timeout, execute=execute, say=say)
    if execute:
        moves = [{"topic": t["topic"], "partition": t["partition"], "copied": t["copied"], "end": t["end"]}
                 for t in report["tails"] if t["records"] or t["gone"]]
        if moves:
            try:
                report["moved"] = read_json(f"{path}/move-aside", token, cacert, body={"moves": moves})
            except RestUnanswered as exc:
                fail(f"{exc}; the records are copied aside, the flow was not moved: run the same command again",
                     EXIT_RUNTIME)
        from mirrorspark.cutover.reconcile import stamp
        from mirrorspark.state.files import LocalFiles

        kept = f"{found.name.replace('->', '-to-')}-{stamp()}.json"
        LocalFiles(state / "reconcile").write(kept, json.dumps(report, indent=2))
        report["report"] = str(state / "reconcile" / kept)
    _print(report, as_json)


def _reconcile(mirror, flow, rows: list[dict[str, Any]], *, topics: str | None, timeout: float, execute: bool,
               say) -> dict[str, Any]:
    from mirrorspark.control.admin import admin_client
    from mirrorspark.control.client_settings import admin_settings
    from mirrorspark.cutover.reconcile import (
        copy_aside,
        ensure_side_topic,
        find_tail,
        read_tail,
        side_topic,
        topic_pattern,
    )
    from mirrorspark.policy import policy_for_flow
    from mirrorspark.policy.topic_selection import TopicSelection

    wanted = topic_pattern(topics)
    policy = policy_for_flow(flow.settings, flow.source.alias)
    selection = TopicSelection(flow, policy)
    source_conf, target_conf = admin_settings(flow.source), admin_settings(flow.target)
    tails = []
    for row in sorted(rows, key=lambda r: (r["topic"], r["partition"])):
        if not wanted(row["topic"]) or policy.is_heartbeats_topic(row["topic"]) \
                or policy.is_internal_topic(row["topic"]):
            continue  # heartbeats are MM2's liveness marks, not records anyone consumes: copied late as MM2 does
        tail = find_tail(source_conf=source_conf, target_conf=target_conf, topic=row["topic"],
                         partition=row["partition"], remote=selection.remote_name(row["topic"]),
                         copy_end=row["upstream_end"], target_end=row["downstream_end"])
        records = read_tail(source_conf, tail, timeout)
        tail.records = len(records)
        tail.first, tail.last = (records[0][0], records[-1][0]) if records else (None, None)
        # the flow skips only what was read and copied aside: records of a transaction still open on the
        # source, or not read within --timeout, stay for the flow (or the next run) to copy
        tail.end = records[-1][0] + 1 if records else tail.copy_end + tail.gone
        tails.append((tail, records))
    diverged = [(tail, records) for tail, records in tails if records]
    for tail, _ in tails:
        if tail.gone:
            say(f"{tail.topic}[{tail.partition}]: {tail.gone} offset(s) from {tail.copy_end} were removed from "
                f"{flow.source.alias} (retention or deleteRecords) before they were copied: lost, and counted here")
    if execute and diverged:
        source_admin, target_admin = admin_client(source_conf), admin_client(target_conf)
        counts = {t: n for t, n in source_admin.list_topics(timeout=30).topics.items()}
        for tail, records in diverged:
            partitions = len(counts[tail.topic].partitions) if tail.topic in counts else tail.partition + 1
            for admin, conf, side in ((target_admin, target_conf, side_topic(tail.remote)),
                                      (source_admin, source_conf, side_topic(tail.topic))):
                ensure_side_topic(admin, side, partitions, flow.options.replication_factor)
                written = copy_aside(records=records, tail=tail, conf=conf, side=side,
                                     source_alias=flow.source.alias)
                say(f"{tail.topic}[{tail.partition}]: {written} record(s) written into {side}")
    return {"flow": flow.name, "executed": execute, "source": flow.source.alias, "target": flow.target.alias,
            "records": sum(t.records for t, _ in tails), "partitions": len(diverged),
            "gone": sum(t.gone for t, _ in tails),
            "tails": [t.as_dict() | {"side_topics": {flow.target.alias: side_topic(t.remote),
                                                     flow.source.alias: side_topic(t.topic)}} for t, _ in tails]}


def _print(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    source, target = report["source"], report["target"]
    diverged = [t for t in report["tails"] if t["records"]]
    verb = "moved aside" if report["executed"] else "to move aside (dry run: --execute does it)"
    typer.echo(f"{report['flow']}: {report['records']} record(s) of {source} in {len(diverged)} partition(s) never "
               f"reached {target}; {verb}")
    for tail in diverged:
        sides = tail["side_topics"]
        typer.echo(f"  {tail['topic']}[{tail['partition']}]: {tail['records']} record(s), offsets {tail['first']}.."
                   f"{tail['last']} -> {target}:{sides[target]} and {source}:{sides[source]}")
    if report["executed"] and diverged:
        typer.echo(f"{report['flow']} skips them and stays paused; a group failing back to {source} resumes after "
                   f"them. Report: {report.get('report')}")
