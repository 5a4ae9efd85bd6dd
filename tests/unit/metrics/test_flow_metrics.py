"""A flow's metrics, on a real prometheus registry (MirrorMetrics): counters, gauges and rates per
remote partition, the REST figures, and series of topics that left the flow dropped."""
from __future__ import annotations

import pytest

from mirrorspark.metrics import flow_metrics
from mirrorspark.metrics.flow_metrics import FlowMetrics
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.sink_report import PartitionStats, parse_report


def test_series_of_topics_that_left_the_flow_are_removed():
    metrics = MirrorMetrics()
    figures = FlowMetrics(metrics, "A", "B")
    other = FlowMetrics(metrics, "C", "B")
    stats = "A.kept\t0\t5\t50\t1\t2\t3\t1\t2\t3\t1\nA.gone\t0\t5\t50\t1\t2\t3\t1\t2\t3\t1\n"
    figures.batch_written(parse_report(stats=stats).stats, {})
    other.batch_written(parse_report(stats="C.gone\t0\t5\t50\t1\t2\t3\t1\t2\t3\t1\n").stats, {})
    metrics.lag_offsets.labels(source="A", target="B", topic="gone", partition="0").set(3)
    removed = figures.forget_topics({"A.kept"}, {"kept"})
    text = "\n".join(f"{s.name}{s.labels}" for m in metrics.registry.collect() for s in m.samples)
    assert removed > 0 and "A.gone" not in text and "'gone'" not in text
    assert "A.kept" in text and "C.gone" in text  # another flow's series are its own
    assert [p["topic"] for p in figures.snapshot()["partitions"]] == ["A.kept"]


def stats(topic: str, partition: int, count: int, size: int, age: tuple[int, int, int] = (0, 0, 0),
          latency: tuple[int, int, int] = (0, 0, 0), timed: int = 0) -> PartitionStats:
    """One remote partition's figures of a batch; ``age``/``latency`` are (min, max, sum) over ``timed`` records."""
    return PartitionStats(topic, partition, count, size, *age, *latency, timed)


def value(metrics: MirrorMetrics, name: str, topic: str | None = None, partition: int = 0,
          **labels: str) -> float | None:
    labels = {"source": "A", "target": "B", **labels}
    if topic is not None:
        labels |= {"topic": topic, "partition": str(partition)}
    return metrics.registry.get_sample_value(name, labels)


class Clock:
    """Stands in for the ``time`` module of flow_metrics: monotonic and wall time both set by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return 1_700_000_000.0 + self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(flow_metrics, "time", fake)
    return fake


def test_a_batch_feeds_the_counters_gauges_and_rest_figures_of_each_remote_partition(clock):
    metrics = MirrorMetrics()
    flow = FlowMetrics(metrics, "A", "B")
    flow.batch_written([stats("A.t", 0, 4, 400, age=(10, 40, 100), latency=(5, 20, 40), timed=4),
                        stats("A.t", 1, 3, 30, age=(1, 3, 4), latency=(2, 2, 4), timed=2)], {})  # one untimed
    assert value(metrics, "mirrorspark_record_count_total", "A.t", 0) == 4
    assert value(metrics, "mirrorspark_byte_count_total", "A.t", 0) == 400
    assert value(metrics, "mirrorspark_record_count_total", "A.t", 1) == 3
    assert [value(metrics, f"mirrorspark_record_age_ms_{s}", "A.t", 0) for s in ("min", "max", "avg")] == [10, 40, 25]
    assert [value(metrics, f"mirrorspark_replication_latency_ms_{s}", "A.t", 0)
            for s in ("min", "max", "avg")] == [5, 20, 10]
    assert value(metrics, "mirrorspark_last_batch_timestamp_seconds") == clock.time()

    clock.now += 5
    flow.batch_written([stats("A.t", 0, 6, 600, age=(2, 2, 12), latency=(1, 9, 30), timed=6)], {})
    assert value(metrics, "mirrorspark_record_count_total", "A.t", 0) == 10  # counters add up
    assert value(metrics, "mirrorspark_byte_count_total", "A.t", 0) == 1000
    assert value(metrics, "mirrorspark_record_age_ms_avg", "A.t", 0) == 2  # gauges show the last batch
    assert value(metrics, "mirrorspark_replication_latency_ms_max", "A.t", 0) == 9
    assert value(metrics, "mirrorspark_record_age_ms_avg", "A.t", 1) == 2  # 4 / 2 timed; kept by a batch without it
    assert value(metrics, "mirrorspark_last_batch_timestamp_seconds") == clock.time()

    snapshot = flow.snapshot()
    assert {k: snapshot[k] for k in ("batches_written", "last_batch_time", "records", "bytes", "recopied")} == {
        "batches_written": 2, "last_batch_time": clock.time(), "records": 13, "bytes": 1030, "recopied": 0}
    assert snapshot["partitions"] == [
        {"topic": "A.t", "partition": 0, "records": 10, "bytes": 1000, "recopied": 0,
         "replication_latency_ms_avg": 5.0, "record_age_ms_avg": 2.0},
        {"topic": "A.t", "partition": 1, "records": 3, "bytes": 30, "recopied": 0,
         "replication_latency_ms_avg": 2.0, "record_age_ms_avg": 2.0}]


def test_records_without_timestamps_leave_age_and_latency_unset():
    metrics = MirrorMetrics()
    flow = FlowMetrics(metrics, "A", "B")
    flow.batch_written([stats("A.t", 0, 3, 30)], {})
    assert value(metrics, "mirrorspark_record_count_total", "A.t", 0) == 3
    assert value(metrics, "mirrorspark_record_age_ms_avg", "A.t", 0) is None
    assert value(metrics, "mirrorspark_replication_latency_ms_min", "A.t", 0) is None
    partition = flow.snapshot()["partitions"][0]
    assert partition["record_age_ms_avg"] is None and partition["replication_latency_ms_avg"] is None


def test_recopied_records_are_counted_per_remote_partition():
    metrics = MirrorMetrics()
    flow = FlowMetrics(metrics, "A", "B")
    flow.batch_written([stats("A.t", 0, 5, 50)], {("A.t", 0): 2, ("A.t", 1): 0})
    flow.batch_written([], {("A.t", 0): 1, ("A.u", 3): 4})  # a batch that only re-copied
    assert value(metrics, "mirrorspark_records_recopied_total", "A.t", 0) == 3
    assert value(metrics, "mirrorspark_records_recopied_total", "A.t", 1) is None  # nothing re-copied: no series
    assert value(metrics, "mirrorspark_records_recopied_total", "A.u", 3) == 4
    snapshot = flow.snapshot()
    assert snapshot["recopied"] == 7 and snapshot["batches_written"] == 2
    assert [(p["topic"], p["partition"], p["records"], p["recopied"]) for p in snapshot["partitions"]] == [
        ("A.t", 0, 5, 3), ("A.u", 3, 0, 4)]
    flow.count_recopied({("A.t", 0): 2})  # a paused writer's late sends, outside any batch
    assert value(metrics, "mirrorspark_records_recopied_total", "A.t", 0) == 5
    assert flow.snapshot()["recopied"] == 9 and flow.snapshot()["batches_written"] == 2


def test_rates_cover_the_time_since_the_previous_update(clock):
    metrics = MirrorMetrics()
    flow = FlowMetrics(metrics, "A", "B")
    flow.batch_written([stats("A.t", 0, 10, 1000)], {})
    clock.now += 2
    flow.update_rates()
    assert value(metrics, "mirrorspark_record_rate", "A.t", 0) == 5
    assert value(metrics, "mirrorspark_byte_rate", "A.t", 0) == 500
    flow.batch_written([stats("A.t", 0, 10, 100)], {})
    clock.now += 4
    flow.update_rates()
    assert value(metrics, "mirrorspark_record_rate", "A.t", 0) == 2.5
    assert value(metrics, "mirrorspark_byte_rate", "A.t", 0) == 25
    clock.now += 1
    flow.update_rates()  # nothing written since
    assert value(metrics, "mirrorspark_record_rate", "A.t", 0) == 0
    metrics.record_rate.labels(source="A", target="B", topic="A.t", partition="0").set(7)
    clock.now += 1
    flow.update_rates()  # still quiet: its gauge already said 0, so it is not set again
    assert value(metrics, "mirrorspark_record_rate", "A.t", 0) == 7
    flow.batch_written([stats("A.t", 0, 1, 10)], {})
    clock.now += 1
    flow.update_rates()
    assert value(metrics, "mirrorspark_record_rate", "A.t", 0) == 1


def test_topics_are_looked_for_in_the_series_only_when_one_left():
    metrics = MirrorMetrics()
    flow = FlowMetrics(metrics, "A", "B")
    flow.batch_written(parse_report(stats="A.x\t0\t5\t50\t1\t2\t3\t1\t2\t3\t1\n").stats, {})
    assert flow.forget_topics({"A.x", "A.y"}, {"x", "y"}) == 0
    assert flow.forget_topics({"A.x", "A.y", "A.z"}, {"x", "y", "z"}) == 0  # only more topics: nothing to drop
    assert flow.forget_topics({"A.y"}, {"y"}) > 0  # A.x left: its series go


def test_a_topic_that_comes_back_starts_its_rate_afresh(clock):
    metrics = MirrorMetrics()
    flow = FlowMetrics(metrics, "A", "B")
    flow.batch_written([stats("A.t", 0, 10, 100)], {})
    clock.now += 1
    flow.update_rates()
    flow.forget_topics(set(), set())
    flow.batch_written([stats("A.t", 0, 3, 30)], {})
    clock.now += 1
    flow.update_rates()
    assert value(metrics, "mirrorspark_record_rate", "A.t", 0) == 3  # not 3 - 10 against the forgotten mark


def test_lost_records_and_running_state():
    metrics = MirrorMetrics()
    flow = FlowMetrics(metrics, "A", "B")
    flow.records_lost("t", 2, 7)
    flow.records_lost("t", 2, 1)
    assert value(metrics, "mirrorspark_records_lost_total", "t", 2) == 8  # labelled by the source topic
    flow.set_running(True)
    assert value(metrics, "mirrorspark_flow_running") == 1
    flow.set_running(False)
    assert value(metrics, "mirrorspark_flow_running") == 0
    assert value(metrics, "mirrorspark_flow_running", source="C") is None  # another flow's series
