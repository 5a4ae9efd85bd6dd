"""The lag probe's cadence: every interval while anything lags, every sixth while the flow is caught up
(lag only in the held heartbeat topics counts as caught up). No broker: run_once is replaced by the
rounds' results, the decision under test is safe_run's."""
from __future__ import annotations

from mirrorspark.metrics import lag as lag_module
from mirrorspark.metrics.lag import LagProbe, PartitionLag
from mirrorspark.metrics.registry import MirrorMetrics


def probe(rounds: list[list[PartitionLag]]) -> tuple[LagProbe, list[int]]:
    made = LagProbe(metrics=MirrorMetrics(), flow_name="A->B", source="A", target="B", admin=None,  # type: ignore[arg-type]
                    source_conf={}, read_committed=False, planned_topics=list, positions=dict,
                    held=r"(?:.*\.)?heartbeats", idle_interval=30.0)
    ran: list[int] = []

    def run_once() -> list[PartitionLag]:
        ran.append(len(ran))
        return rounds[min(len(ran) - 1, len(rounds) - 1)]

    made.run_once = run_once  # type: ignore[method-assign]
    return made, ran


def at(monkeypatch, seconds: float) -> None:
    monkeypatch.setattr(lag_module.time, "monotonic", lambda: seconds)


CAUGHT_UP = [PartitionLag("orders", 0, 10, 10, 0, 0.0), PartitionLag("heartbeats", 0, 9, 5, 4, 4.0)]
LAGGING = [PartitionLag("orders", 0, 12, 10, 2, 1.5)]


def test_a_caught_up_flow_is_measured_every_idle_interval_and_lag_brings_the_interval_back(monkeypatch):
    made, ran = probe([CAUGHT_UP, CAUGHT_UP, LAGGING, LAGGING, CAUGHT_UP])
    for second in (0, 5, 10, 25):  # caught up at 0 (heartbeats' lag is held on purpose): the next at 30
        at(monkeypatch, second)
        made.safe_run()
    assert len(ran) == 1
    at(monkeypatch, 30)
    made.safe_run()
    assert len(ran) == 2  # still caught up: skip again until 60
    at(monkeypatch, 59)
    made.safe_run()
    assert len(ran) == 2
    for second in (60, 65, 70):  # lag found at 60: every interval again, until caught up at 70
        at(monkeypatch, second)
        made.safe_run()
    assert len(ran) == 5
    at(monkeypatch, 75)
    made.safe_run()
    assert len(ran) == 5


def test_lag_in_a_topic_that_is_not_held_is_never_caught_up():
    made, _ = probe([])
    assert not made.caught_up([PartitionLag("heartbeats-not", 0, 3, 2, 1, 0.0)])
    assert not made.caught_up([PartitionLag("orders", 1, 3, 2, 1, 0.0)])
    assert made.caught_up([PartitionLag("B.heartbeats", 0, 3, 2, 1, 0.0), PartitionLag("orders", 1, 3, 3, 0, 0.0)])
    no_hold = LagProbe(metrics=MirrorMetrics(), flow_name="A->B", source="A", target="B",
                       admin=None, source_conf={}, read_committed=False,  # type: ignore[arg-type]
                       planned_topics=list, positions=dict)
    assert not no_hold.caught_up([PartitionLag("heartbeats", 0, 3, 2, 1, 0.0)])
    assert no_hold.due(0.0)


def test_each_round_is_told_and_a_failed_round_brings_the_interval_back(monkeypatch):
    from confluent_kafka import KafkaError, KafkaException

    told: list[str | None] = []
    made, ran = probe([CAUGHT_UP])
    made.on_round = told.append
    at(monkeypatch, 0)
    made.safe_run()  # caught up: the next round at 30
    assert told == [None]

    def down() -> list[PartitionLag]:
        ran.append(len(ran))
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Broker transport failure"))

    made.run_once = down  # type: ignore[method-assign]
    at(monkeypatch, 30)
    made.safe_run()
    assert len(told) == 2 and told[1] is not None and "_TRANSPORT" in told[1]
    at(monkeypatch, 35)  # a failed round is no caught-up one: the next runs on the interval
    made.safe_run()
    assert len(ran) == 3 and len(told) == 3
