"""``promote``'s preflight: is flow ``A->B`` ready to have everything moved from A to B at once?

The verdict is a pure function (:func:`judge`) of facts read beforehand (:class:`Facts`): the
running flow as its REST API shows it, an audit of the flow's replicated records with each
checkpointed group's failover verdict (``audit``'s and ``failover``'s), the groups' state on B, A's
authorizer, and whether the reverse flow ``B->A`` would copy back what producers will write on B.
So every verdict can be tested from facts alone, and the command reads the clusters once.

Each failed check says what to fix; the plan lists the cutover's steps and what each waits for.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mirrorspark.audit.report import AuditReport
from mirrorspark.control.groups import GroupDescription, GroupRequestRefused


@dataclass(frozen=True, kw_only=True)
class Check:
    """One precondition of the cutover; ``fix`` says what the operator does when it fails."""

    name: str
    ok: bool
    text: str
    fix: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.name, "ok": self.ok, "text": self.text, "fix": self.fix}


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What ``judge`` decides from, read once by :func:`mirrorspark.cutover.gather.gather`.

    ``view``: the flow in the running process's REST API (None: ``view_problem`` says why not);
    ``audit``: the audit of the flow (None: ``audit_problem``); ``on_target``: the state on B of
    every group with checkpoints; ``authorizer``: whether A has one (None: ``authorizer_problem``);
    ``not_copied_back``: the flow's source topics the reverse flow would not copy from B to A.
    """

    flow: str
    source: str
    target: str
    reverse: str
    max_lag: int
    quiet_seconds: float
    checkpoint_interval: float
    view: Mapping[str, Any] | None = None
    view_problem: str = ""
    audit: AuditReport | None = None
    audit_problem: str = ""
    on_target: Mapping[str, GroupDescription | GroupRequestRefused] = field(default_factory=dict)
    authorizer: bool | None = None
    authorizer_problem: str = ""
    topics: Sequence[str] = ()
    not_copied_back: Sequence[str] = ()
    failback_groups: Sequence[str] = ()   # groups on A reading what the reverse flow copied there, failing back
    failback_problem: str = ""


@dataclass(frozen=True, kw_only=True)
class PromotePreflight:
    """The checks, then the steps the cutover takes (each with what it waits for)."""

    flow: str
    checks: list[Check]
    steps: list[str]
    facts: Facts  # what the checks were judged from: the cutover starts from them

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {"flow": self.flow, "ok": self.ok, "checks": [c.as_dict() for c in self.checks], "steps": self.steps}


def judge(facts: Facts) -> PromotePreflight:
    """Every check, in the order an operator fixes them: the flow, its records, its groups, the way back."""
    checks = [_running(facts), _loss(facts), _audit(facts), _groups(facts), _groups_on_target(facts),
              _copied_back(facts), _fence(facts)]
    return PromotePreflight(flow=facts.flow, checks=checks, steps=_steps(facts), facts=facts)


def _running(facts: Facts) -> Check:
    start = (f"start `mirrorspark run` with this configuration (mirrorspark.rest.enabled = true), or pass --url of "
             f"the instance that writes {facts.flow}")
    view = facts.view
    if view is None:
        return Check(name="running", ok=False, text=f"the flow's running instance did not answer: {facts.view_problem}",
                     fix=start)
    if view.get("role") == "standby":
        return Check(name="running", ok=False, text=f"the instance asked is a standby of {facts.flow}",
                     fix="pass --url of the instance that writes the flow (its `mirrorspark status` says writer)")
    state = str(view.get("state"))
    if state != "running":
        error = f": {view['error']}" if view.get("error") else ""
        return Check(name="running", ok=False, text=f"{facts.flow} is {state}{error}",
                     fix="promote when the flow runs (`mirrorspark status` shows it); a paused flow is resumed with "
                         f"POST /flows/{facts.flow}/resume")
    return Check(name="running", ok=True, text=f"{facts.flow} is running, lag {view.get('lag_offsets', 0)} record(s)")


def _loss(facts: Facts) -> Check:
    reported = int((facts.view or {}).get("records_lost") or 0)
    logged = sum(r.records for r in facts.audit.data_loss) if facts.audit is not None else 0
    lost = max(reported, logged)
    if lost:
        return Check(name="loss", ok=False,
                     text=f"{lost} record(s) of the flow's topics were never copied to {facts.target} and are gone "
                          f"from {facts.source} (data loss reported by the flow)",
                     fix=f"a cutover cannot be exact over lost records: restore them on {facts.target} from another "
                         f"copy, or move groups one by one with `mirrorspark failover --allow-loss` "
                         f"(`mirrorspark audit --flow {facts.flow}` lists the offsets)")
    return Check(name="loss", ok=True, text="no data loss reported")


def _audit(facts: Facts) -> Check:
    report = facts.audit
    if report is None:
        return Check(name="audit", ok=False, text=f"the audit did not run: {facts.audit_problem}",
                     fix=f"run `mirrorspark audit --flow {facts.flow}` to see why, fix it and run promote again")
    totals = report.totals()
    if not report.ok:
        wrong = [p for p in report.partitions if p.problems]
        first = ", ".join(f"{p.remote_topic}[{p.partition}]" for p in wrong[:3]) + (" ..." if len(wrong) > 3 else "")
        return Check(name="audit", ok=False,
                     text=f"{totals['missing']} missing, {totals['duplicated']} duplicated, {totals['differing']} "
                          f"differing record(s) on {facts.target} ({first})",
                     fix=f"`mirrorspark audit --flow {facts.flow}` gives the first offset of each; a record on "
                         f"{facts.target} that the flow did not write was written there by another producer")
    return Check(name="audit", ok=True,
                 text=f"{totals['matched']} record(s) of {len(report.partitions)} partition(s) match, none missing, "
                      "duplicated or differing")


def _groups(facts: Facts) -> Check:
    if facts.audit is None:
        return Check(name="groups", ok=False, text="not judged: the audit did not run",
                     fix="see the audit check")
    # The lag is not judged here: the cutover drains it before it commits a group's offsets.
    unsafe = [g for g in facts.audit.groups if any(not r.ok and r.kind != "lag" for r in g.reasons)]
    if unsafe:
        listed = "; ".join(f"{g.group}: " + ", ".join(r.text for r in g.reasons if not r.ok and r.kind != "lag")
                           for g in unsafe)
        return Check(name="groups", ok=False,
                     text=f"{len(unsafe)} of {len(facts.audit.groups)} group(s) would not move exactly: {listed}",
                     fix=f"checkpoints are emitted every {facts.checkpoint_interval:g} s: once the flow has caught up, "
                         "run promote again; a group that keeps failing is shown by `mirrorspark failover --group`")
    if facts.failback_problem:
        return Check(name="groups", ok=False, text=f"the groups failing back are not known: {facts.failback_problem}",
                     fix=f"mirrorspark's principal on {facts.target} needs READ on the checkpoints topic")
    back = (f"; {len(facts.failback_groups)} group(s) fail back to {facts.target}, from the topics {facts.reverse} "
            f"copied to {facts.source}: " + ", ".join(facts.failback_groups)) if facts.failback_groups else ""
    if not facts.audit.groups:
        return Check(name="groups", ok=True, text="no consumer group has checkpoints for the flow's topics" + back)
    return Check(name="groups", ok=True, text=f"{len(facts.audit.groups)} group(s), each translation exact: "
                                              + ", ".join(g.group for g in facts.audit.groups) + back)


def _groups_on_target(facts: Facts) -> Check:
    refused = {g: d for g, d in facts.on_target.items() if isinstance(d, GroupRequestRefused)}
    active = {g: d for g, d in facts.on_target.items() if isinstance(d, GroupDescription) and not d.idle}
    if refused:
        return Check(name="groups-on-target", ok=False,
                     text="; ".join(f"{g}: {d}" for g, d in sorted(refused.items())),
                     fix=f"mirrorspark's principal on {facts.target} needs DESCRIBE and READ on these groups")
    if active:
        named = "; ".join(f"{g} ({d.state}: {', '.join(d.names) or f'{d.members} member(s)'})"
                          for g, d in sorted(active.items()))
        return Check(name="groups-on-target", ok=False,
                     text=f"{len(active)} group(s) already have consumers on {facts.target}: {named}",
                     fix=f"stop these consumers on {facts.target} (their offsets there are overwritten by the "
                         "cutover), then run promote again")
    return Check(name="groups-on-target", ok=True,
                 text=f"no consumer of the {len(facts.on_target)} group(s) is connected to {facts.target}")


def _copied_back(facts: Facts) -> Check:
    if facts.not_copied_back:
        return Check(name="reverse-flow", ok=False,
                     text=f"{facts.reverse} would not copy back {', '.join(facts.not_copied_back)}: what producers "
                          f"write there on {facts.target} after the cutover would never reach {facts.source}",
                     fix=f"let {facts.reverse}.topics (and .topics.exclude) select these names")
    return Check(name="reverse-flow", ok=True,
                 text=f"{facts.reverse} copies back the {len(facts.topics)} topic(s) producers will write on "
                      f"{facts.target}")


def _fence(facts: Facts) -> Check:
    if facts.authorizer is None:
        return Check(name="fence", ok=False, text=f"{facts.source}'s authorizer could not be asked: "
                                                  f"{facts.authorizer_problem}",
                     fix=f"mirrorspark's principal on {facts.source} needs DESCRIBE on the cluster")
    if facts.authorizer:
        return Check(name="fence", ok=True, text=f"{facts.source} has an authorizer: writes are fenced by ACLs")
    return Check(name="fence", ok=True,
                 text=f"{facts.source} has no authorizer: writes cannot be fenced, the cutover waits until the "
                      f"source ends stay still for {facts.quiet_seconds:g} s")


def _steps(facts: Facts) -> list[str]:
    lag = (facts.view or {}).get("lag_offsets")
    now = "unknown" if lag is None else str(lag)
    groups = (len(facts.audit.groups) if facts.audit is not None else 0) + len(facts.failback_groups)
    fence = (f"deny WRITE on the {len(facts.topics)} source topic(s) on {facts.source} to every principal (the ACLs "
             "recorded, removed again by --abort)" if facts.authorizer else
             f"wait until the {len(facts.topics)} source topic(s)' ends on {facts.source} stay still for "
             f"{facts.quiet_seconds:g} s (stop their producers)")
    return [f"wait until the lag is at most {facts.max_lag} record(s) (now {now})",
            fence,
            f"drain: wait until every record of the source topics is on {facts.target} (lag 0)",
            f"write the final checkpoints and commit the offsets of {groups} group(s) on {facts.target}",
            f"stop {facts.flow}, start {facts.reverse} (the way back for failback)"]
