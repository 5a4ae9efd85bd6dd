"""A flow's metrics, on a real prometheus registry (MirrorMetrics): counters and histograms of
mirrorspark's own series, MM2's windowed series under Strimzi's names, the REST figures, flow state
with its role, and series of topics that left the flow dropped."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from mirrorspark.metrics import window
from mirrorspark.metrics.flow_metrics import FlowMetrics
from mirrorspark.metrics.histograms import BUCKET_BOUNDS_MS
from mirrorspark.metrics.mm2_names import consumer_client_id, producer_client_id
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.sink_report import PartitionStats, parse_report

ROOT = Path(__file__).resolve().parents[3]
SOURCE = "kafka_connect_mirror_mirrorsourceconnector_"
BUCKETS = len(BUCKET_BOUNDS_MS) + 1


def line(topic: str, *numbers: int, age: int = 0, latency: int = 0) -> str:
    """A FlowStats.drain line: the nine figures, then the age and latency histograms with all their
    timed records in bucket ``age`` / ``latency``."""
    timed = numbers[-1]
    hist = [[timed if i == b else 0 for i in range(BUCKETS)] for b in (age, latency)]
    return "\t".join(map(str, (topic, *numbers, *hist[0], *hist[1]))) + "\n"


def stats(topic: str, partition: int, count: int, size: int, age: tuple[int, int, int] = (0, 0, 0),
          latency: tuple[int, int, int] = (0, 0, 0), timed: int = 0, bucket: int = 0) -> PartitionStats:
    """One remote partition's figures of a batch; ``age``/``latency`` are (min, max, sum) over ``timed``
    records, all of them in histogram bucket ``bucket``."""
    hist = tuple(timed if i == bucket else 0 for i in range(BUCKETS))
    return PartitionStats(topic, partition, count, size, *age, *latency, timed, age_buckets=hist,
                          latency_buckets=hist)


def value(metrics: MirrorMetrics, name: str, topic: str | None = None, partition: int = 0,
          **labels: str) -> float | None:
    labels = {"source": "A", "target": "B", **labels}
    if topic is not None:
        labels |= {"topic": topic, "partition": str(partition)}
    return metrics.registry.get_sample_value(name, labels)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(window.Window.__init__, "__defaults__", (fake,))
    return fake


def test_the_histogram_bounds_are_the_jvm_sinks():
    java = (ROOT / "jvm/mirrorspark/src/main/java/io/mirrorspark/kafka/FlowStats.java").read_text()
    found = re.search(r"BOUNDS_MS = \{([^}]*)\}", java)
    assert found is not None
    assert tuple(int(b) for b in found.group(1).replace("\n", " ").split(",")) == BUCKET_BOUNDS_MS


def test_a_batch_feeds_counters_histograms_and_rest_figures(clock):
    metrics = MirrorMetrics()
    flow = FlowMetrics(metrics, "A", "B")
    flow.batch_written([stats("A.t", 0, 4, 400, age=(10, 40, 100), latency=(5, 20, 40), timed=4, bucket=1),
                        stats("A.t", 1, 3, 30, age=(1, 3, 4), latency=(2, 2, 4), timed=2)], {})  # one untimed
    assert value(metrics, "mirrorspark_records_total", "A.t", 0) == 4
    assert value(metrics, "mirrorspark_bytes_total", "A.t", 0) == 400
    assert value(metrics, "mirrorspark_records_total", "A.t", 1) == 3
    topic = {"source": "A", "target": "B", "topic": "A.t"}  # histograms per topic: partitions would be too many
    get = metrics.registry.get_sample_value
    assert get("mirrorspark_replication_latency_seconds_count", topic) == 6
    assert get("mirrorspark_replication_latency_seconds_sum", topic) == pytest.approx(0.044)
    assert get("mirrorspark_replication_latency_seconds_bucket", {**topic, "le": "0.005"}) == 2
    assert get("mirrorspark_replication_latency_seconds_bucket", {**topic, "le": "0.01"}) == 6
    assert get("mirrorspark_replication_latency_seconds_bucket", {**topic, "le": "+Inf"}) == 6
    assert get("mirrorspark_record_age_seconds_sum", topic) == pytest.approx(0.104)
    snapshot = flow.snapshot()
    assert {k: snapshot[k] for k in ("batches_written", "records", "bytes", "recopied")} == {
        "batches_written": 1, "records": 7, "bytes": 430, "recopied": 0}
    assert snapshot["partitions"][0]["replication_latency_ms_avg"] == 10


def test_mm2_series_are_windowed_as_mm2s_and_expire_when_a_partition_goes_quiet(clock):
    metrics = MirrorMetrics()
    flow = FlowMetrics(metrics, "A", "B")
    flow.batch_written([stats("A.t", 0, 4, 400, age=(10, 40, 100), latency=(5, 20, 40), timed=4)], {})
    clock.now += 10
    flow.batch_written([stats("A.t", 0, 6, 600, age=(2, 2, 12), latency=(1, 9, 30), timed=6)], {})
    assert value(metrics, SOURCE + "record_count", "A.t", 0) == 10  # cumulative, as MM2's
    assert value(metrics, SOURCE + "byte_count", "A.t", 0) == 1000
    assert value(metrics, SOURCE + "replication_latency_ms_min", "A.t", 0) == 1  # over the window, not one batch
    assert value(metrics, SOURCE + "replication_latency_ms_max", "A.t", 0) == 20
    assert value(metrics, SOURCE + "replication_latency_ms_avg", "A.t", 0) == 7
    assert value(metrics, SOURCE + "replication_latency_ms", "A.t", 0) == 5  # the last value
    assert value(metrics, SOURCE + "record_age_ms_max", "A.t", 0) == 40
    assert value(metrics, SOURCE + "record_rate", "A.t", 0) == pytest.approx(10 / 30)  # at least one sample window
    clock.now += window.SAMPLES * window.SAMPLE_SECONDS + 1  # quiet longer than MM2's window
    assert math.isnan(value(metrics, SOURCE + "replication_latency_ms_max", "A.t", 0) or 0)
    assert math.isnan(value(metrics, SOURCE + "record_age_ms_avg", "A.t", 0) or 0)
    assert value(metrics, SOURCE + "record_rate", "A.t", 0) == 0
    assert value(metrics, SOURCE + "record_count", "A.t", 0) == 10
    assert value(metrics, "mirrorspark_records_total", "A.t", 0) == 10


def test_connect_and_client_series_the_strimzi_dashboard_reads(clock):
    metrics = MirrorMetrics()
    flow = FlowMetrics(metrics, "A", "B")
    metrics.set_state("A", "B", "running")
    flow.set_running(True)
    flow.batch_written([stats("A.t", 0, 4, 400)], {})
    flow.offsets_handed(12.0)
    metrics.lag_records.labels(source="A", target="B", source_topic="t", partition="0").set(9)
    client = consumer_client_id("A", "B")
    assert client == '"A->B|A->B.MirrorSourceConnector-0|replication-consumer"'  # quoted, as JMX writes it
    get = metrics.registry.get_sample_value
    assert get("kafka_consumer_fetch_manager_records_lag", {"clientid": client, "topic": "t", "partition": "0"}) == 9
    assert get("kafka_consumer_incoming_byte_total", {"clientid": client}) == 400
    assert get("kafka_producer_outgoing_byte_total", {"clientid": producer_client_id("A", "B")}) == 400
    assert re.fullmatch(r'".*SourceConnector-[0-9]+"', producer_client_id("A", "B"))  # the dashboard's selector
    assert get("kafka_connect_worker_connector_count", {}) == 2
    assert get("kafka_connect_connector_task_offset_commit_avg_time_ms",
               {"connector": '"A->B.MirrorSourceConnector"', "task": "0"}) == 12
    connector = {"connector": '"A->B.MirrorSourceConnector"', "task": "0"}
    assert get("kafka_connect_source_task_source_record_active_count", connector) == 0  # between batches
    flow.in_flight(70)
    assert get("kafka_connect_source_task_source_record_active_count", connector) == 70
    metrics.jvm.feed("kafka_producer_buffer_available_bytes\tflow=A->B\t33554432.0\n")
    assert get("kafka_producer_buffer_available_bytes", {"jvm": "driver", "clientid": producer_client_id("A", "B")}) \
        == 33554432
    status = {"connector": '"A->B.MirrorSourceConnector"', "task": "0"}
    assert get("kafka_connect_connector_status", {**status, "status": "running"}) == 1
    metrics.set_state("A", "B", "failed")  # what Strimzi's ConnectFailedConnector / ConnectFailedTask read
    assert get("kafka_connect_connector_status", {**status, "status": "failed"}) == 1
    assert get("kafka_connect_worker_connector_failed_task_count", {"connector": status["connector"]}) == 1
    metrics.set_state("A", "B", "standby")
    flow.set_running(False)
    assert get("kafka_connect_connector_status", {**status, "status": "failed"}) is None
    assert get("kafka_connect_worker_connector_count", {}) == 0  # a standby runs no connector
    assert get("kafka_consumer_incoming_byte_total", {"clientid": client}) is None


def test_flow_state_carries_the_role_and_health_and_a_role_change_leaves_no_stale_series():
    metrics = MirrorMetrics()
    get = metrics.registry.get_sample_value
    metrics.set_state("A", "B", "standby")
    assert get("mirrorspark_flow_state", {"source": "A", "target": "B", "role": "standby", "state": "standby"}) == 1
    assert get("mirrorspark_flow_healthy", {"source": "A", "target": "B", "role": "standby"}) == 1
    assert get("mirrorspark_flow_running", {"source": "A", "target": "B", "role": "standby"}) == 0
    metrics.set_state("A", "B", "running")
    metrics.set_running("A", "B", True)
    assert get("mirrorspark_flow_state", {"source": "A", "target": "B", "role": "standby", "state": "standby"}) is None
    assert get("mirrorspark_flow_running", {"source": "A", "target": "B", "role": "writer"}) == 1
    for state, healthy in (("degraded", 0), ("failed", 0), ("restarting", 0), ("paused", 1), ("running", 1)):
        metrics.set_state("A", "B", state)
        assert get("mirrorspark_flow_healthy", {"source": "A", "target": "B", "role": "writer"}) == healthy, state
        assert get("mirrorspark_flow_state", {"source": "A", "target": "B", "role": "writer", "state": state}) == 1


def test_recopied_records_are_counted_per_remote_partition():
    metrics = MirrorMetrics()
    flow = FlowMetrics(metrics, "A", "B")
    flow.batch_written([stats("A.t", 0, 5, 50)], {("A.t", 0): 2, ("A.t", 1): 0})
    flow.batch_written([], {("A.t", 0): 1, ("A.u", 3): 4})  # a batch that only re-copied
    assert value(metrics, "mirrorspark_records_recopied_total", "A.t", 0) == 3
    assert value(metrics, "mirrorspark_records_recopied_total", "A.t", 1) is None  # nothing re-copied: no series
    assert value(metrics, "mirrorspark_records_recopied_total", "A.u", 3) == 4
    flow.count_recopied({("A.t", 0): 2})  # a paused writer's late sends, outside any batch
    assert value(metrics, "mirrorspark_records_recopied_total", "A.t", 0) == 5
    assert flow.snapshot()["recopied"] == 9 and flow.snapshot()["batches_written"] == 2


def test_series_of_topics_that_left_the_flow_are_removed():
    metrics = MirrorMetrics()
    figures = FlowMetrics(metrics, "A", "B")
    other = FlowMetrics(metrics, "C", "B")
    text = line("A.kept", 0, 5, 50, 1, 2, 3, 1, 2, 3, 1) + line("A.gone", 0, 5, 50, 1, 2, 3, 1, 2, 3, 1)
    figures.batch_written(parse_report(stats=text).stats, {})
    other.batch_written(parse_report(stats=line("C.gone", 0, 5, 50, 1, 2, 3, 1, 2, 3, 1)).stats, {})
    metrics.lag_records.labels(source="A", target="B", source_topic="gone", partition="0").set(3)
    removed = figures.forget_topics({"A.kept"}, {"kept"})
    text = "\n".join(f"{s.name}{s.labels}" for m in metrics.registry.collect() for s in m.samples)
    assert removed > 0 and "A.gone" not in text and "'gone'" not in text
    assert "A.kept" in text and "C.gone" in text  # another flow's series are its own
    assert [p["topic"] for p in figures.snapshot()["partitions"]] == ["A.kept"]
    assert figures.forget_topics({"A.kept", "A.new"}, {"kept", "new"}) == 0  # only more topics: nothing to look for


def test_lost_records_are_labelled_by_the_source_topic():
    metrics = MirrorMetrics()
    flow = FlowMetrics(metrics, "A", "B")
    flow.records_lost("t", 2, 7)
    flow.records_lost("t", 2, 1)
    assert metrics.registry.get_sample_value("mirrorspark_records_lost_total", {
        "source": "A", "target": "B", "source_topic": "t", "partition": "2"}) == 8


def test_checkpoint_latency_as_mm2_names_it_and_as_a_histogram(clock):
    metrics = MirrorMetrics()
    metrics.checkpoint_acknowledged(source="A", target="B", group="g", topic="A.t", partition=0, millis=40)
    metrics.checkpoint_timed(source="A", target="B", millis=40)
    labels = {"source": "A", "target": "B", "group": "g", "topic": "A.t", "partition": "0"}
    get = metrics.registry.get_sample_value
    assert get("kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms_max", labels) == 40
    assert get("mirrorspark_checkpoint_latency_seconds_count", {"source": "A", "target": "B"}) == 1
    metrics.forget_groups(source="A", target="B", keep=set())
    assert get("kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms_max", labels) is None


def test_jvm_series_come_from_the_last_sample_and_build_info_is_there():
    metrics = MirrorMetrics()
    metrics.jvm.feed("jvm_memory_used_bytes\tarea=heap\t1024.0\njvm_threads_current\t\t42.0\n"
                     "jvm_process_cpu_seconds_total\t\t3.5\nnot a line\n")
    get = metrics.registry.get_sample_value
    assert get("jvm_memory_used_bytes", {"jvm": "driver", "area": "heap"}) == 1024
    assert get("jvm_threads_current", {"jvm": "driver"}) == 42
    assert get("jvm_process_cpu_seconds_total", {"jvm": "driver"}) == 3.5
    build = [s for f in metrics.registry.collect() if f.name == "mirrorspark_build_info" for s in f.samples]
    assert build and build[0].value == 1 and set(build[0].labels) == {
        "version", "spark_version", "kafka_version", "python_version"}
    assert get("process_cpu_seconds_total", {}) is not None  # the Python process
