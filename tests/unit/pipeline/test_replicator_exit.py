"""How a mirrorspark process ends: non-zero when flows failed, and nothing left behind by a failed start."""
from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from mirrorspark.config import parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.errors import OperationalError
from mirrorspark.pipeline.runner import FlowsFailed, Replicator


class Supervisor:
    def __init__(self, name: str, failed: bool) -> None:
        self.failed, self.last_error = failed, "TopicAuthorizationException" if failed else None
        self.query = Query(name)

    def poll(self, spark) -> None:
        pass


class Offsets:
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


class Probe:
    def close(self) -> None:
        pass


class Query:
    def __init__(self, name: str) -> None:
        self.flow, self.loss_stop, self.stopped = SimpleNamespace(name=name), None, 0

    def stop(self) -> None:
        self.stopped += 1


CONFIG = parse_config(parse_properties("clusters = a, b\na.bootstrap.servers = localhost:9\n"
                                       "b.bootstrap.servers = localhost:9\na->b.enabled = true\n"))


def bare(supervisors, tmp_path: Path, others: bool = False) -> Replicator:
    """A Replicator of one configuration, nothing started; each supervisor's flow is written here (a
    seat holding its assembled parts)."""
    replicator = Replicator(CONFIG, tmp_path)
    for supervisor in supervisors:
        name = supervisor.query.flow.name
        replicator.seats[name] = Seat(name, others=others, assembled=SimpleNamespace(
            query=supervisor.query, supervisor=supervisor, offsets=Offsets(), probe=Probe()))
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
    assembled = replicator.seats["a->b"].assembled
    assert (assembled.query.stopped, assembled.offsets.closed, replicator.seats["a->b"].closed) == (1, 1, 1), \
        "each part of the flow is stopped once"


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


class Seat:
    """A flow's seat as the process sees it: the parts it holds while written here, and whether its
    lease group holds another member."""

    def __init__(self, name: str, others: bool, assembled=None) -> None:
        self.flow = SimpleNamespace(name=name)
        self.lease = SimpleNamespace(group="g")
        self.others, self.handed, self.rejoined, self.closed = others, 0, 0, 0
        self.assembled = assembled
        self.left: list[str] = []
        self.rejoin_at: float | None = None

    def deactivate(self) -> None:
        self.left.append(self.flow.name)
        self.assembled = None

    def close(self) -> None:
        self.closed += 1

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
def test_a_flow_failed_here_is_handed_to_a_waiting_standby_and_joined_again_later(others, tmp_path):
    """What a retry cannot fix here may pass on another instance (another host, another state): a flow
    that failed holds its lease no longer while a standby waits; alone, it stays failed, as before."""
    replicator = bare([Supervisor("a->b", failed=True)], tmp_path, others=others)
    seat = replicator.seats["a->b"]
    replicator.steer()
    assert (seat.handed, seat.left) == ((1, ["a->b"]) if others else (0, []))
    assert list(replicator.supervisors) == ([] if others else ["a->b"]), "a flow left is gone from every view"
    replicator.steer()
    assert seat.rejoined == (1 if others else 0) and seat.handed == (1 if others else 0)


def test_a_flow_stopped_by_data_loss_fail_is_not_handed_over(tmp_path):
    """The gap needs a person: another instance would only copy past it."""
    supervisor = Supervisor("a->b", failed=True)
    supervisor.query.loss_stop = "source records are gone before they were copied"
    replicator = bare([supervisor], tmp_path, others=True)
    replicator.steer()
    assert replicator.seats["a->b"].handed == 0
