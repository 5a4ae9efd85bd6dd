"""``promote``'s preflight judged from facts alone: each check fails on its own fact, says what to fix,
and a clean set of facts passes with the cutover's steps."""
from __future__ import annotations

import json
from dataclasses import replace

from mirrorspark.audit.report import AuditReport, PartitionAudit
from mirrorspark.cli.promote_command import render
from mirrorspark.control.groups import GroupDescription, GroupRequestRefused
from mirrorspark.cutover.preflight import Facts, judge
from mirrorspark.integrity.failover_verdict import GroupVerdict, Reason
from mirrorspark.integrity.loss import LossReport

CLEAN_PARTITION = PartitionAudit(source_topic="orders", remote_topic="A.orders", partition=0, runs=1,
                                 source_range=(0, 99), target_range=(0, 99), source_records=100, target_records=100,
                                 matched=100)
SAFE = GroupVerdict("billing", (Reason(True, "checkpoints: 1 partition(s), matching"), Reason(True, "lag on A: 0")))
UNSAFE = GroupVerdict("shipping", (Reason(False, "checkpoints: 1 partition(s); 40 record(s) consumed on A after the "
                                          "checkpoints would be read again", kind="checkpoints"),
                                   Reason(False, "lag on A: 40 record(s) not consumed yet, 40 of them not replicated",
                                          kind="lag")))
LAGGING = GroupVerdict("billing", (Reason(True, "checkpoints: fine", kind="checkpoints"),
                                   Reason(False, "lag on A: 40 record(s) not consumed yet, 40 of them not replicated",
                                          kind="lag")))


def audit(**changes) -> AuditReport:
    fields = {"flow": "A->B", "state": "file:/s/A/B", "partitions": [CLEAN_PARTITION], "data_loss": [],
              "groups": [SAFE]}
    return AuditReport(**{**fields, **changes})


def facts(**changes) -> Facts:
    clean = Facts(flow="A->B", source="A", target="B", reverse="B->A", max_lag=1000, quiet_seconds=30.0,
                  checkpoint_interval=5.0,
                  view={"name": "A->B", "role": "writer", "state": "running", "lag_offsets": 12, "records_lost": 0},
                  audit=audit(), on_target={"billing": GroupDescription(state="EMPTY", members=0)},
                  authorizer=False, topics=["orders"])
    return replace(clean, **changes)


def failed(preflight) -> dict[str, str]:
    return {c.name: c.text for c in preflight.checks if not c.ok}


def test_clean_facts_pass_and_list_the_cutover_steps():
    preflight = judge(facts())
    assert preflight.ok and failed(preflight) == {}
    assert [c.name for c in preflight.checks] == ["running", "loss", "audit", "groups", "groups-on-target",
                                                  "reverse-flow", "fence"]
    assert "lag is at most 1000 record(s) (now 12)" in preflight.steps[0]
    assert "stay still for 30 s" in preflight.steps[1]  # no authorizer: the source is watched, not fenced
    assert "1 group(s)" in preflight.steps[3] and "start B->A" in preflight.steps[4]
    with_acls = judge(facts(authorizer=True))
    assert "deny WRITE on the 1 source topic(s) on A" in with_acls.steps[1]
    body = json.loads(json.dumps(preflight.as_dict()))
    assert body["ok"] is True and body["checks"][0] == {"check": "running", "ok": True,
                                                        "text": "A->B is running, lag 12 record(s)", "fix": ""}
    assert render(preflight)[-1] == "preflight passed"


def test_a_flow_not_running_or_asked_on_a_standby_fails_with_how_to_reach_the_writer():
    gone = judge(facts(view=None, view_problem="no running mirrorspark found (/s/rest.json is missing)"))
    assert "rest.json is missing" in failed(gone)["running"]
    assert "start `mirrorspark run`" in gone.checks[0].fix
    degraded = judge(facts(view={"name": "A->B", "state": "degraded", "error": "cluster A does not answer"}))
    assert failed(degraded)["running"] == "A->B is degraded: cluster A does not answer"
    standby = judge(facts(view={"name": "A->B", "role": "standby", "state": "standby"}))
    assert "standby" in failed(standby)["running"] and "writer" in standby.checks[0].fix


def test_loss_reported_by_the_running_flow_or_in_its_state_fails_the_preflight():
    by_flow = judge(facts(view={"name": "A->B", "state": "running", "records_lost": 7}))
    assert failed(by_flow)["loss"].startswith("7 record(s)")
    report = LossReport(flow="A->B", topic="orders", partition=0, first=10, last=19, records=10, reason="retention",
                        time=1.0)
    logged = judge(facts(audit=audit(data_loss=[report])))
    assert failed(logged)["loss"].startswith("10 record(s)") and "--allow-loss" in logged.checks[1].fix


def test_audit_problems_and_an_audit_that_could_not_run_fail_and_leave_groups_unjudged():
    tampered = replace(CLEAN_PARTITION, matched=97, missing=2, duplicated=1)
    found = judge(facts(audit=audit(partitions=[tampered])))
    assert failed(found) == {"audit": "2 missing, 1 duplicated, 0 differing record(s) on B (A.orders[0])"}
    none = judge(facts(audit=None, audit_problem="the state folder /s/A/B has no offset ranges"))
    assert set(failed(none)) == {"audit", "groups"}
    assert "offset ranges" in failed(none)["audit"]


def test_a_group_that_would_not_move_exactly_is_named_with_its_failing_reasons():
    preflight = judge(facts(audit=audit(groups=[SAFE, UNSAFE])))
    text = failed(preflight)["groups"]
    assert text.startswith("1 of 2 group(s)") and "shipping: checkpoints: 1 partition(s); 40 record(s)" in text
    assert "billing" not in text and "lag on" not in text and "every 5 s" in preflight.checks[3].fix


def test_a_group_behind_only_by_records_not_copied_yet_passes_the_cutover_drains_them():
    assert judge(facts(audit=audit(groups=[LAGGING]))).ok


def test_a_group_with_consumers_on_the_target_is_refused_naming_them():
    active = GroupDescription(state="STABLE", members=2, names=("app-1@10.0.0.5", "app-2@10.0.0.6"))
    preflight = judge(facts(on_target={"billing": active}))
    assert failed(preflight)["groups-on-target"] == ("1 group(s) already have consumers on B: billing (STABLE: "
                                                     "app-1@10.0.0.5, app-2@10.0.0.6)")
    refused = judge(facts(on_target={"billing": GroupRequestRefused("cluster B: describing group billing: denied")}))
    assert "denied" in failed(refused)["groups-on-target"]


def test_topics_the_reverse_flow_would_not_copy_back_are_named_with_the_key_to_change():
    preflight = judge(facts(not_copied_back=["orders"]))
    assert "B->A would not copy back orders" in failed(preflight)["reverse-flow"]
    assert "B->A.topics" in preflight.checks[5].fix


def test_an_authorizer_that_cannot_be_asked_fails_the_fence_check():
    preflight = judge(facts(authorizer=None, authorizer_problem="cluster A did not answer"))
    assert "cluster A did not answer" in failed(preflight)["fence"]
    lines = render(preflight)
    assert "  FAIL  fence" in "\n".join(lines) and lines[-1] == "preflight failed: fence"


def test_groups_failing_back_are_listed_and_counted_and_unreadable_checkpoints_fail_the_groups_check():
    preflight = judge(facts(failback_groups=["ledger", "reports"]))
    assert preflight.ok
    text = {c.name: c.text for c in preflight.checks}["groups"]
    assert text.endswith("; 2 group(s) fail back to B, from the topics B->A copied to A: ledger, reports")
    assert "3 group(s)" in preflight.steps[3]
    broken = judge(facts(failback_problem="B.checkpoints.internal on B could not be read: denied"))
    assert failed(broken) == {"groups": "the groups failing back are not known: B.checkpoints.internal on B could "
                                        "not be read: denied"}
