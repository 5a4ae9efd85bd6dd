"""How a mirrorspark process ends: non-zero when flows failed, and nothing left behind by a failed start."""
from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from mirrorspark.config import parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.errors import OperationalError
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.pipeline.flow import Flow
from mirrorspark.pipeline.flow_assembly import FlowContext
from mirrorspark.pipeline.runner import FlowsFailed, Replicator
from mirrorspark.takeover.lost_state import StateLost


class Supervisor:
    def __init__(self, name: str, failed: bool) -> None:
        self.failed, self.last_error = failed, "TopicAuthorizationException" if failed else None
        self.query = Query(name)
        self.polled = 0

    def poll(self, spark) -> None:
        self.polled += 1

    def state(self) -> str:
        return "failed" if self.failed else "running"


class Offsets:
    """A flow's offsets: closed, and its last checkpoint round (when its query had stopped; ``hang``: a
    round that does not end, as against a source that does not answer)."""

    def __init__(self, query: Query) -> None:
        self.query, self.closed, self.rounds, self.after_query_stop = query, 0, 0, None
        self.hang = threading.Event()
        self.release = threading.Event()

    def last_checkpoints(self) -> threading.Thread:
        self.rounds += 1
        self.after_query_stop = self.query.stopped == 1
        thread = threading.Thread(target=lambda: self.release.wait(30) if self.hang.is_set() else None, daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        self.closed += 1


class Probe:
    def close(self) -> None:
        pass


class Query:
    def __init__(self, name: str) -> None:
        self.flow, self.loss_stop, self.stopped, self.metrics = SimpleNamespace(name=name), None, 0, None

    def stop(self, commit_timeout: float = 60.0) -> None:
        self.stopped += 1


class Lease:
    """A flow's lease as the steering sees it: joined, left, and the late writes it had none of."""

    def __init__(self, group: str) -> None:
        self.group, self.started, self.stopped, self.losses = group, 0, 0, 0

    def start(self) -> None:
        self.started += 1

    def stop(self) -> None:
        self.stopped += 1

    def held(self) -> bool:
        return True

    def active(self) -> bool:
        return True

    def late_writes(self) -> None:
        return None


CONFIG = parse_config(parse_properties("clusters = a, b\na.bootstrap.servers = localhost:9\n"
                                       "b.bootstrap.servers = localhost:9\na->b.enabled = true\n"))


def written_here(supervisor: Supervisor, others: bool = False) -> Flow:
    """A real ``Flow`` this process writes, its parts small fakes; ``others``: another instance waits
    in its lease group."""
    name = supervisor.query.flow.name
    source, target = name.split("->")
    config = SimpleNamespace(name=name, source=SimpleNamespace(alias=source), target=SimpleNamespace(alias=target),
                             options=SimpleNamespace(lease_enabled=False, lease_timeout=10.0))
    shared = SimpleNamespace(metrics=MirrorMetrics(), scheduler=SimpleNamespace(cancel=lambda lanes: None))
    flow = Flow(context=FlowContext(config=config, policy=None, shared=shared, instance="me"))  # type: ignore[arg-type]
    flow.parts = SimpleNamespace(query=supervisor.query, supervisor=supervisor,  # type: ignore[assignment]
                                 offsets=Offsets(supervisor.query), probe=Probe())
    flow.lease = Lease("g")  # type: ignore[assignment]
    flow._new_lease = Lease  # type: ignore[method-assign]
    flow.another_member = lambda: others  # type: ignore[method-assign]
    return flow


def bare(supervisors, tmp_path: Path, others: bool = False) -> Replicator:
    """A Replicator of one configuration, nothing started; each supervisor's flow is written here."""
    replicator = Replicator(CONFIG, tmp_path)
    for supervisor in supervisors:
        flow = written_here(supervisor, others)
        replicator.flows[flow.name] = flow
    return replicator


def test_a_stop_while_one_flow_had_failed_is_not_a_clean_exit(tmp_path):
    replicator = bare([Supervisor("a->b", failed=True), Supervisor("b->a", failed=False)], tmp_path)
    replicator.request_stop()  # SIGTERM
    with pytest.raises(FlowsFailed, match=r"1 of 2 flows failed: a->b: TopicAuthorizationException"):
        replicator.run()


def test_a_stop_with_every_flow_healthy_is_a_clean_exit(tmp_path):
    replicator = bare([Supervisor("a->b", failed=False)], tmp_path)
    replicator.request_stop()
    replicator.run()
    flow = replicator.flows["a->b"]
    parts = flow.parts
    assert parts is not None and (parts.query.stopped, parts.offsets.closed, flow.lease.stopped) == (1, 1, 1), \
        "each part of the flow is stopped once"
    assert (parts.offsets.rounds, parts.offsets.after_query_stop) == (1, True), \
        "one last checkpoint round, after the query recorded its last batch"


def test_the_last_checkpoint_rounds_skip_a_failed_flow_and_a_hanging_one_does_not_hold_the_stop(monkeypatch,
                                                                                                tmp_path):
    monkeypatch.setattr("mirrorspark.pipeline.runner.LAST_CHECKPOINTS_S", 0.3)
    replicator = bare([Supervisor("a->b", failed=True), Supervisor("b->a", failed=False)], tmp_path)
    hanging = replicator.flows["b->a"].parts.offsets
    hanging.hang.set()
    replicator.request_stop()
    with pytest.raises(FlowsFailed):
        replicator.run()
    hanging.release.set()
    assert replicator.flows["a->b"].parts.offsets.rounds == 0, "a failed flow's ranges are not trusted for it"
    assert hanging.rounds == 1 and hanging.closed == 1, "the stop went on past the bound"


def test_a_failed_start_undoes_what_it_began(monkeypatch, tmp_path):
    replicator = bare([], tmp_path)
    begun: list[str] = []
    monkeypatch.setattr(Replicator, "prepare", lambda self: begun.append("prepared"))

    def start(self) -> None:
        raise RuntimeError("the target refused the first write")

    monkeypatch.setattr(Replicator, "start", start)
    monkeypatch.setattr(Replicator, "stop", lambda self: begun.append("stopped"))
    with pytest.raises(RuntimeError, match="refused"):
        replicator.launch()
    assert begun == ["prepared", "stopped"]


def test_the_control_plane_opens_while_spark_starts_in_the_launching_thread(monkeypatch, tmp_path):
    replicator = bare([], tmp_path)
    replicator.location, replicator.ship_files = SimpleNamespace(needs_spark=False), False
    where: dict[str, str] = {}
    spark_started = threading.Event()

    def open_(self) -> None:
        where["open"] = threading.current_thread().name
        assert spark_started.wait(5), "the control plane waited for Spark instead of opening beside it"

    def start_spark(self) -> None:
        where["spark"] = threading.current_thread().name
        spark_started.set()

    monkeypatch.setattr(Replicator, "_check", lambda self: None)
    monkeypatch.setattr(Replicator, "_open", open_)
    monkeypatch.setattr(Replicator, "_start_spark", start_spark)
    replicator.prepare()
    assert where == {"open": "mirrorspark-prepare", "spark": threading.current_thread().name}


def test_a_control_plane_failure_beside_spark_is_raised_once_spark_is_up(monkeypatch, tmp_path):
    replicator = bare([], tmp_path)
    replicator.location, replicator.ship_files = SimpleNamespace(needs_spark=False), False
    begun: list[str] = []

    def open_(self) -> None:
        raise OperationalError("cluster 'dst' does not answer")

    monkeypatch.setattr(Replicator, "_check", lambda self: None)
    monkeypatch.setattr(Replicator, "_open", open_)
    monkeypatch.setattr(Replicator, "_start_spark", lambda self: begun.append("spark"))
    with pytest.raises(OperationalError, match="does not answer"):
        replicator.prepare()
    assert begun == ["spark"]


@pytest.mark.parametrize("others", [True, False])
def test_a_flow_failed_here_is_handed_to_a_waiting_standby_and_joined_again_later(others, tmp_path):
    """What a retry cannot fix here may pass on another instance (another host, another state): a flow
    that failed holds its lease no longer while a standby waits; alone, it stays failed, as before."""
    replicator = bare([Supervisor("a->b", failed=True)], tmp_path, others=others)
    flow = replicator.flows["a->b"]
    first = flow.lease
    replicator.steer()
    assert (first.stopped, flow.parts is None) == ((1, True) if others else (0, False))
    assert [f.name for f in replicator.writing()] == ([] if others else ["a->b"]), "a flow left is written no more"
    assert flow.state() == ("standby" if others else "failed")
    if others:
        assert flow.rejoin_at is not None and flow.lease is not first, "a new lease, joined later"
        flow.rejoin_at = 0.0  # the time out of the group has passed
    replicator.steer()
    assert flow.lease.started == (1 if others else 0) and first.stopped == (1 if others else 0)


def test_a_flow_stopped_by_data_loss_fail_is_not_handed_over(tmp_path):
    """The gap needs a person: another instance would only copy past it."""
    supervisor = Supervisor("a->b", failed=True)
    supervisor.query.loss_stop = "source records are gone before they were copied"
    replicator = bare([supervisor], tmp_path, others=True)
    replicator.steer()
    flow = replicator.flows["a->b"]
    assert flow.parts is not None and flow.lease.stopped == 0


def test_a_stop_that_hangs_ends_the_process_at_the_deadline_naming_the_step(tmp_path):
    """A batch that cannot end (its target down) must not keep the process: the deadline exits with
    143 and says which step was still running."""
    from mirrorspark.pipeline.stop_deadline import StopDeadline

    replicator = bare([Supervisor("a->b", failed=False)], tmp_path)
    release = threading.Event()
    exits: list[int] = []
    query = replicator.flows["a->b"].parts.query  # type: ignore[union-attr]
    query.stop = lambda commit_timeout=60.0: release.wait(30)  # the running batch never ends on its own
    replicator.deadline = StopDeadline(seconds=0.5, step=lambda: replicator._stopping,
                                       exit_now=lambda code: (exits.append(code), release.set()))
    replicator.request_stop()
    with pytest.MonkeyPatch.context() as patch:
        records: list[str] = []
        patch.setattr("mirrorspark.pipeline.stop_deadline.log.error",
                      lambda fmt, *args: records.append(fmt % args))
        replicator.run()
    assert exits == [143]
    assert "the running batch of flow a->b" in records[0] and "within 0.5 s" in records[0]


def test_a_second_stop_signal_exits_at_once(tmp_path):
    from mirrorspark.pipeline.stop_deadline import StopDeadline

    replicator = bare([Supervisor("a->b", failed=False)], tmp_path)
    exits: list[int] = []
    replicator.deadline = StopDeadline(seconds=60, step=lambda: replicator._stopping, exit_now=exits.append)
    replicator.request_stop()
    assert exits == []
    replicator.request_stop()
    assert exits == [143]
    replicator.deadline.disarm()


@pytest.mark.parametrize("others", [True, False])
def test_a_state_lost_at_start_is_handed_to_another_member_and_refused_alone(others, tmp_path):
    """Restarted holding the lease of a flow another instance wrote last, without state to resume it: that
    instance may resume it, so the flow is handed over and the process stays up; alone in the lease group,
    nobody can, and the refusal (exit 2) stands."""
    replicator = bare([Supervisor("a->b", failed=False)], tmp_path, others=others)
    flow = replicator.flows["a->b"]
    first = flow.lease
    flow.parts = None

    def assemble() -> None:
        raise StateLost("flow a->b: no state, and its remote topics hold records")

    flow.assemble = assemble  # type: ignore[method-assign]
    if not others:
        with pytest.raises(StateLost):
            replicator._take_at_start(flow)
        return
    replicator._take_at_start(flow)
    assert (first.stopped, flow.parts is None, flow.rejoin_at is not None) == (1, True, True)
    assert flow.lease is not first and flow.state() == "degraded", "as a takeover that failed: why is shown"


def test_a_flow_whose_takeover_waits_holds_no_other_flows_supervision(tmp_path):
    """The fifth soak hour: one flow's stateless takeover compared records for 7.5 minutes while the other
    flow's failed query waited, unrestarted, behind it in the same loop."""
    slow, quick = Supervisor("a->b", failed=False), Supervisor("b->a", failed=False)
    replicator = bare([slow, quick], tmp_path)
    released = threading.Event()
    replicator.flows["a->b"].steer = lambda spark, assembled: released.wait(30)  # type: ignore[method-assign]
    try:
        for _ in range(3):
            replicator.steer()
        assert quick.polled == 3, "the other flow is supervised every round"
        assert slow.polled == 0 and replicator._steering["a->b"].busy(), "the slow round is not started again"
    finally:
        released.set()
    replicator._steering["a->b"].wait(5)
    replicator.steer()
    assert slow.polled == 2  # its first round ended with a poll, and a new round began


def test_what_a_flows_steering_raised_stops_the_loop(tmp_path):
    replicator = bare([Supervisor("a->b", failed=False)], tmp_path)

    def bad_input(spark, assembled) -> None:
        raise OperationalError("flow a->b: a key the cluster refuses")

    replicator.flows["a->b"].steer = bad_input  # type: ignore[method-assign]
    with pytest.raises(OperationalError, match="refuses"):
        replicator.steer()


def test_a_flows_rounds_run_in_one_thread_of_its_own(tmp_path):
    """A thread new to py4j opens a JVM connection of its own: one thread per round made one twice a second."""
    replicator = bare([Supervisor("a->b", failed=False)], tmp_path)
    seen: list[int] = []
    replicator.flows["a->b"].steer = lambda spark, assembled: seen.append(threading.get_ident())  # type: ignore[method-assign]
    for _ in range(3):
        replicator.steer()
    assert len(seen) == 3 and len(set(seen)) == 1, "every round in the same thread"
    assert seen[0] != threading.get_ident(), "not the loop's own"
    replicator._steering["a->b"].close()
