"""``promote``'s preflight facts: a real-time flow's copies are recorded when its batch ends, so the
audit is asked again until then, within two batches; a micro-batch flow's audit is asked once."""
from __future__ import annotations

import pytest

from mirrorspark.audit.report import AuditReport
from mirrorspark.audit.settings import NotRecordedYet
from mirrorspark.config.loader import parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.cutover import gather as gather_module

BASE = ("clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"
        "A->B.enabled = true\nB->A.enabled = true\n")
REALTIME = "mirrorspark.trigger = realtime\nmirrorspark.realtime.batch.seconds = 5\nspark.master = local[4]\n"


def facts(monkeypatch, tmp_path, extra: str, unrecorded: int):
    """gather() with the clusters left out; the audit finds the copies unrecorded ``unrecorded`` times."""
    asked: list[float] = []
    clock = [0.0]

    def run_audit(config, flow, topics, state_dir):
        asked.append(clock[0])
        if len(asked) <= unrecorded:
            raise NotRecordedYet(f"flow {flow}: the copies of 1 topic(s) (t) are not in the range log yet", "--topics")
        return AuditReport(flow=flow, state="file:/s", partitions=[], data_loss=[], groups=[])

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    import mirrorspark.audit.run as audit_run
    monkeypatch.setattr(audit_run, "run_audit", run_audit)
    monkeypatch.setattr(gather_module.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(gather_module.time, "sleep", sleep)
    monkeypatch.setattr(gather_module, "_failing_back", lambda *a: ([], ""))
    monkeypatch.setattr(gather_module, "_on_target", lambda *a: {})
    monkeypatch.setattr(gather_module, "_authorizer", lambda *a: (False, ""))
    config = parse_config(parse_properties(BASE + extra))
    found = gather_module.gather(config, flow_name="A->B", state_dir=tmp_path, view=None, view_problem="",
                                 max_lag=0, quiet_seconds=1.0)
    return found, asked


def test_a_real_time_flows_audit_is_asked_again_until_its_batch_is_recorded(monkeypatch, tmp_path):
    found, asked = facts(monkeypatch, tmp_path, REALTIME, unrecorded=3)
    assert found.audit is not None and found.audit_problem == "" and asked == [0.0, 1.0, 2.0, 3.0]


def test_copies_still_unrecorded_after_two_real_time_batches_are_refused(monkeypatch, tmp_path):
    with pytest.raises(NotRecordedYet, match="not in the range log yet"):
        facts(monkeypatch, tmp_path, REALTIME, unrecorded=100)


def test_a_micro_batch_flows_audit_is_asked_once(monkeypatch, tmp_path):
    with pytest.raises(NotRecordedYet):
        facts(monkeypatch, tmp_path, "mirrorspark.trigger = microbatch\n", unrecorded=1)
