"""How a mirrorspark process ends: non-zero when flows failed, and nothing left behind by a failed start."""
from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from mirrorspark.control.scheduler import Scheduler
from mirrorspark.errors import OperationalError
from mirrorspark.pipeline.runner import FlowsFailed, Replicator


class Supervisor:
    def __init__(self, name: str, failed: bool) -> None:
        self.failed, self.last_error = failed, "TopicAuthorizationException" if failed else None
        self.query = SimpleNamespace(flow=SimpleNamespace(name=name), loss_stop=None)

    def poll(self, spark) -> None:
        pass


class Offsets:
    closed = 0

    def close(self) -> None:
        Offsets.closed += 1


def bare(supervisors) -> Replicator:
    """A Replicator with nothing started but the pieces stop() and run() walk through."""
    replicator = object.__new__(Replicator)
    replicator.supervisors = {s.query.flow.name: s for s in supervisors}
    replicator._stop = threading.Event()
    replicator.scheduler, replicator.rest, replicator.lag_probes = Scheduler(), None, {}
    replicator.flows, replicator.offsets, replicator.spark = [], [Offsets()], None
    replicator.seats = {}
    return replicator


def test_a_stop_while_one_flow_had_failed_is_not_a_clean_exit():
    replicator = bare([Supervisor("a->b", failed=True), Supervisor("b->a", failed=False)])
    replicator.request_stop()  # SIGTERM
    with pytest.raises(FlowsFailed, match=r"1 of 2 flows failed: a->b: TopicAuthorizationException"):
        replicator.run()


def test_a_stop_with_every_flow_healthy_is_a_clean_exit():
    replicator = bare([Supervisor("a->b", failed=False)])
    replicator.request_stop()
    replicator.run()


def test_a_failed_start_undoes_what_it_began(monkeypatch):
    replicator = bare([])
    begun: list[str] = []
    monkeypatch.setattr(Replicator, "prepare", lambda self: begun.append("prepared"))

    def start(self) -> None:
        raise RuntimeError("the target refused the first write")

    monkeypatch.setattr(Replicator, "start", start)
    monkeypatch.setattr(Replicator, "stop", lambda self: begun.append("stopped"))
    with pytest.raises(RuntimeError, match="refused"):
        replicator.launch()
    assert begun == ["prepared", "stopped"]


def test_the_control_plane_opens_while_spark_starts_in_the_launching_thread(monkeypatch):
    replicator = bare([])
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


def test_a_control_plane_failure_beside_spark_is_raised_once_spark_is_up(monkeypatch):
    replicator = bare([])
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


class Seat:
    """A flow's seat as steer() sees it: its lease group holds another member or not."""

    def __init__(self, name: str, others: bool) -> None:
        self.flow = SimpleNamespace(name=name)
        self.lease = SimpleNamespace(group="g")
        self.others, self.handed, self.rejoined = others, 0, 0
        self.assembled = object()
        self.rejoin_at: float | None = None

    def rejoin_due(self) -> bool:
        return self.rejoin_at is not None

    def rejoin(self) -> None:
        self.rejoined += 1
        self.rejoin_at = None

    def another_member(self) -> bool:
        return self.others

    def hand_over(self) -> None:
        self.handed += 1
        self.rejoin_at = 1.0

    def should_leave(self) -> bool:
        return False

    def should_take(self) -> bool:
        return False


@pytest.mark.parametrize("others", [True, False])
def test_a_flow_failed_here_is_handed_to_a_waiting_standby_and_joined_again_later(others):
    """What a retry cannot fix here may pass on another instance (another host, another state): a flow
    that failed holds its lease no longer while a standby waits; alone, it stays failed, as before."""
    replicator = bare([Supervisor("a->b", failed=True)])
    seat = Seat("a->b", others)
    replicator.seats = {"a->b": seat}
    left: list[str] = []
    replicator._leave = lambda s: (left.append(s.flow.name), replicator.supervisors.pop(s.flow.name))
    replicator.steer()
    assert (seat.handed, left) == ((1, ["a->b"]) if others else (0, []))
    replicator.steer()
    assert seat.rejoined == (1 if others else 0) and seat.handed == (1 if others else 0)


def test_a_flow_stopped_by_data_loss_fail_is_not_handed_over():
    """The gap needs a person: another instance would only copy past it."""
    supervisor = Supervisor("a->b", failed=True)
    supervisor.query.loss_stop = "source records are gone before they were copied"
    replicator = bare([supervisor])
    seat = Seat("a->b", others=True)
    replicator.seats = {"a->b": seat}
    replicator.steer()
    assert seat.handed == 0
