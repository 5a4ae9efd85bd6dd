"""A writer that loses its flow's lease: /metrics says standby no later than REST does."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from mirrorspark.config.loader import parse_config
from mirrorspark.control.clusters import ClusterUnreachable
from mirrorspark.coordination.claims import Claims
from mirrorspark.errors import ConfigError
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.pipeline.flow import Flow
from mirrorspark.pipeline.flow_assembly import FlowContext
from mirrorspark.state.files import LocalFiles
from mirrorspark.takeover.plan import FILE as TAKEOVER_FILE


def _gauge(metrics: MirrorMetrics, state: str) -> float | None:
    return metrics.registry.get_sample_value("mirrorspark_flow_state",
                                             {"source": "a", "target": "b", "role": "standby", "state": state})


def test_the_standby_gauge_is_set_before_the_role_changes_and_before_the_slow_query_stop():
    metrics = MirrorMetrics()
    scheduler = SimpleNamespace(cancel=lambda lanes: None)
    flow = SimpleNamespace(name="a->b", source=SimpleNamespace(alias="a"), target=SimpleNamespace(alias="b"),
                           options=SimpleNamespace(lease_enabled=False))
    shared = SimpleNamespace(metrics=metrics, scheduler=scheduler)
    seat = Flow(context=FlowContext(config=flow, policy=None, shared=shared, instance="me"))  # type: ignore[arg-type]
    # held by another member now: what REST shows as a standby
    seat.lease = SimpleNamespace(group="g", late_writes=lambda: None)
    seen: list[tuple[float | None, bool]] = []

    def stop(commit_timeout: float) -> None:  # a fenced query can take seconds to stop
        seen.append((_gauge(metrics, "standby"), seat.standby() is not None))

    query = SimpleNamespace(stop=stop, metrics=None)
    seat.parts = SimpleNamespace(query=query, probe=SimpleNamespace(close=lambda: None),
                                     offsets=SimpleNamespace(close=lambda: None))
    assert seat.standby() is None and _gauge(metrics, "standby") is None
    seat.leave()
    assert seen == [(1.0, True)]
    assert _gauge(metrics, "standby") == 1.0 and _gauge(metrics, "running") == 0.0


def _leased_flow(tmp_path, *, ran_before: bool):
    """A flow with its lease on a target that does not answer; ``ran_before``: its state says where it stopped."""

    config = parse_config({"clusters": "a, b", "a.bootstrap.servers": "a:9092", "b.bootstrap.servers": "b:9092",
                           "a->b.enabled": "true"}).enabled_flows[0]
    state = LocalFiles(tmp_path)
    if ran_before:
        state.child("a").child("b").write(TAKEOVER_FILE, "{}")

    class Down:
        up = False  # the target answers

        def settings(self, cluster):
            return {"bootstrap.servers": "b:9092"}

        def admin(self, cluster):
            if not self.up:
                raise ClusterUnreachable(f"cannot reach cluster {cluster.alias!r} at b:9092")
            return None, self.settings(cluster)

    metrics = MirrorMetrics()
    shared = SimpleNamespace(metrics=metrics, scheduler=SimpleNamespace(cancel=lambda lanes: None), clusters=Down(),
                             state=state)
    flow = Flow(context=FlowContext(config=config, policy=None, shared=shared, instance="me"))  # type: ignore[arg-type]
    started: list[bool] = []
    flow.lease.start = lambda: started.append(True)  # the lease's consumer would join when the target answers
    return flow, metrics, started


def test_a_flow_restarted_while_its_target_is_down_waits_degraded_and_joins_its_lease_group_later(
        tmp_path, monkeypatch):
    made: list[bool] = []
    monkeypatch.setattr(Claims, "ensure_topic", lambda self: made.append(True))
    flow, metrics, started = _leased_flow(tmp_path, ran_before=True)
    flow.join()  # no ClusterUnreachable: the process stays up
    assert started == [True] and flow.unreached
    assert flow.state() == "degraded" and "cannot reach cluster 'b'" in (flow.standby().failure or "")
    assert metrics.status.status("a", "b").state == "degraded"
    flow.wait(limit=60)  # returns at once: nothing to decide before the target answers
    # The target answers and another instance holds the lease: a standby, no longer degraded.
    flow.lease.decided = lambda settle=2.0: True
    flow.lease.active = lambda: False
    flow.steer(None, assembled=lambda: None)  # decided, but the target is out of reach again: still waiting
    assert flow.unreached and flow.state() == "degraded" and made == []
    flow.context.shared.clusters.up = True
    flow.steer(None, assembled=lambda: None)
    assert not flow.unreached and flow.state() == "standby" and flow.standby().failure is None
    assert made == [True]  # the claims' topic made if the target lost it meanwhile
    assert metrics.status.status("a", "b").state == "standby"


def test_a_first_start_whose_target_does_not_answer_is_refused(tmp_path):
    flow, _, started = _leased_flow(tmp_path, ran_before=False)
    with pytest.raises(ClusterUnreachable, match="cannot reach cluster 'b'"):
        flow.join()
    assert started == []


def test_a_lease_group_the_target_refuses_once_it_answers_stops_the_process_as_at_a_start(tmp_path, monkeypatch):
    monkeypatch.setattr(Claims, "ensure_topic", lambda self: None)
    flow, _, _ = _leased_flow(tmp_path, ran_before=True)
    flow.join()
    flow.context.shared.clusters.up = True
    flow.lease.refused = "Broker: Group authorization failed"
    flow.lease.decided = lambda settle=2.0: True
    with pytest.raises(ConfigError, match="Group authorization failed"):
        flow.steer(None, assembled=lambda: None)


def test_a_takeover_failing_with_an_empty_message_is_retried_naming_the_error_class(tmp_path):
    """A future's ``TimeoutError()`` says nothing: the soak's standby crashed formatting it (internal
    error, exit 1) instead of retrying the takeover."""
    flow, metrics, _ = _leased_flow(tmp_path, ran_before=True)
    flow.take_failed(TimeoutError())
    assert flow.last_failure == "TimeoutError"
    assert flow.failed_takes == 1 and metrics.status.status("a", "b").state == "degraded"


def test_a_lease_lost_and_held_again_makes_the_flow_taken_again_and_another_writers_claim_sets_the_state_aside(
        tmp_path, monkeypatch):
    """The fault soak's third hour: a writer whose coordinator was out of reach lost the lease, another
    instance wrote the flow on and was killed, and the first was given the lease back with its query
    still running. A re-created source topic was then counted from its own, older positions: 49,146
    records reported lost that the other instance had copied. Lost and held again, the flow is left
    and taken again, so the claims decide whether its state is still current."""
    import mirrorspark.pipeline.flow as flow_module
    from mirrorspark.coordination.claims import Claim

    flow, _, _ = _leased_flow(tmp_path, ran_before=True)
    flow.context.shared.clusters.up = True
    claims: list[Claim] = [Claim("a->b", "me", "h", 1, "s", 0.0, flow.lease.group)]
    monkeypatch.setattr(Claims, "ensure_topic", lambda self: None)
    monkeypatch.setattr(Claims, "last", lambda self, flow, group: claims[-1])
    monkeypatch.setattr(Claims, "write", lambda self, claim: claims.append(claim))
    monkeypatch.setattr(Flow, "bind_fence", lambda self, spark: None)
    stopped: list[bool] = []

    def assembled(context, **kwargs):
        query = SimpleNamespace(start=lambda spark: None, stop=lambda commit_timeout=None: stopped.append(True),
                                metrics=None)
        return SimpleNamespace(query=query, probe=SimpleNamespace(close=lambda: None),
                               offsets=SimpleNamespace(close=lambda: None),
                               supervisor=SimpleNamespace(requests=SimpleNamespace(take=lambda: None), failed=False))
    monkeypatch.setattr(flow_module, "assemble_flow", assembled)
    lease = SimpleNamespace(group=flow.lease.group, writer="me-run", losses=0, held=lambda: True, active=lambda: True,
                            confirmed=lambda: True, decided=lambda settle=2.0: True, refused=None,
                            late_writes=lambda: None)
    flow.lease = lease
    flow.take_over(object(), assembled=lambda: None)
    assert flow.parts is not None and flow._writing_allowed() and not flow.should_leave()
    assert flow.folder.read(TAKEOVER_FILE) == "{}", "its own claim: the state is current"

    claims.append(Claim("a->b", "other", "h2", 2, "s2", 1.0, lease.group))  # the other instance took it meanwhile
    lease.losses = 1  # ... while this one's lease was lost; it is held again now
    assert not flow._writing_allowed(), "no batch or control task writes from this state now"
    flow.steer(object(), assembled=lambda: None)
    assert flow.parts is None and stopped == [True], "left: the running query is stopped"
    flow.steer(object(), assembled=lambda: None)
    assert flow.parts is not None and flow._writing_allowed()
    assert flow.folder.read(TAKEOVER_FILE) is None, "the other writer's claim: this state is set aside"
    assert any(name.startswith(TAKEOVER_FILE + ".stale-") for name in flow.folder.list())


def _flow_waiting_on(tmp_path, members: list[int], held_after: int | None):
    """A started flow whose lease has decided without the lease; the target describes its lease group
    with ``members`` members at each look, and the lease is held after ``held_after`` looks (never: None)."""
    flow, _, _ = _leased_flow(tmp_path, ran_before=False)
    looks: list[int] = []

    class Groups:
        def describe(self, group):
            looks.append(members[min(len(looks), len(members) - 1)])
            return SimpleNamespace(members=looks[-1])

    flow.context.shared.clusters.groups = lambda cluster: Groups()
    flow.lease.wait_decided = lambda limit: None
    flow.lease.active = lambda: held_after is not None and len(looks) >= held_after
    return flow, looks


def test_a_member_alone_in_its_lease_group_without_the_lease_waits_for_it_rather_than_standing_by(
        tmp_path, monkeypatch):
    """A lease topic just created on a busy broker: the group's first assignment was made before the
    topic was in the leader's metadata, so nobody holds the partition; the first start logged a standby
    and waited for a takeover (ADR 0027 section 16)."""
    monkeypatch.setattr("mirrorspark.pipeline.flow.ALONE_RECHECK", 0.0)
    flow, looks = _flow_waiting_on(tmp_path, members=[1], held_after=3)
    flow.wait(limit=60)
    assert flow.may_write() and looks == [1, 1, 1]


def test_another_member_in_the_lease_group_makes_a_standby_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr("mirrorspark.pipeline.flow.ALONE_RECHECK", 0.0)
    flow, looks = _flow_waiting_on(tmp_path, members=[1, 2], held_after=None)
    flow.wait(limit=60)
    assert not flow.may_write() and looks == [1, 2]


def test_a_member_alone_without_the_lease_stands_by_when_the_wait_runs_out(tmp_path, monkeypatch):
    monkeypatch.setattr("mirrorspark.pipeline.flow.ALONE_RECHECK", 0.01)
    flow, looks = _flow_waiting_on(tmp_path, members=[1], held_after=None)
    flow.wait(limit=0.1)
    assert not flow.may_write() and 1 <= len(looks) <= 11


def test_a_member_alone_waits_past_the_decision_limit_up_to_its_own(tmp_path, monkeypatch):
    """10,000 remote partitions being applied: the lease topic became visible 25 s after it was made,
    past the lease's decision limit; the start stood by and took the flow over 13 s after holding the
    lease (ADR 0027 section 17)."""
    monkeypatch.setattr("mirrorspark.pipeline.flow.ALONE_RECHECK", 0.02)
    flow, looks = _flow_waiting_on(tmp_path, members=[1], held_after=6)
    flow.wait(limit=0.01, alone=30)
    assert flow.may_write() and len(looks) == 6
