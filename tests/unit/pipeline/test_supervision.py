"""A flow's supervisor: what a retry can fix is retried for as long as it takes, with the flow up and
``degraded``; what it cannot fix fails the flow after ``mirrorspark.flow.restart.attempts``."""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from mirrorspark.integrity.loss import LossLog
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.pipeline import supervision
from mirrorspark.pipeline.retriable import retriable
from mirrorspark.pipeline.supervision import FlowSupervisor
from mirrorspark.state.files import LocalFiles

SOURCE_DOWN = ("org.apache.spark.sql.streaming.StreamingQueryException: Failed to get offsets by times in 30000ms\n"
               "Caused by: org.apache.kafka.common.errors.TimeoutException: Failed to get offsets by times in 30000ms")
STALLED = ("Job aborted due to stage failure: ... io.mirrorspark.source.GroupReader$SourceStalledException: no record "
           "for 60012 ms from t-0 at 5 (batch end 90)")
AUTH = "Caused by: org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access topics: [t]"


class FailingQuery:
    """Stands for FlowQuery: every start fails at once with ``text``."""

    flow = SimpleNamespace(name="a->b", source=SimpleNamespace(alias="a"), target=SimpleNamespace(alias="b"),
                           options=SimpleNamespace(restart_attempts=2, restart_backoff=0.0))
    paused, restarting, loss_stop, metrics, schemas = False, False, None, None, None

    def __init__(self, text: str) -> None:
        self.text = text
        self.query = SimpleNamespace(isActive=False)
        self.batches_written = 0
        self.restarts = 0

    def take_restart_reason(self):
        return None

    def restart(self, spark, unpause=False):
        self.restarts += 1

    def state(self):
        return "failed"

    def error(self):
        return self.text.splitlines()[-1]

    def failure_text(self):
        return self.text


def supervise(query: FailingQuery, tmp_path) -> FlowSupervisor:
    return FlowSupervisor(query=query, loss=LossLog(LocalFiles(tmp_path), "a->b"), metrics=MirrorMetrics())  # type: ignore[arg-type]


@pytest.mark.parametrize("text", [SOURCE_DOWN, STALLED, "KafkaException: KafkaError{code=_TRANSPORT,val=-195,"
                                  "str=\"Broker transport failure\"}"])
def test_a_cluster_out_of_reach_is_retried_for_ever_and_the_flow_stays_up_degraded(text, tmp_path):
    query = FailingQuery(text)
    supervisor = supervise(query, tmp_path)
    for _ in range(40):  # far more than restart.attempts = 2
        supervisor.poll(None)
    assert not supervisor.failed and supervisor.attempts == 0 and query.restarts >= 19
    assert supervisor.state() == "degraded"
    reason = supervisor.reason() or ""
    assert reason.startswith("retrying since ") and "nothing is skipped" in reason
    query.batches_written = 1  # the cluster answers: a batch is written
    query.query = SimpleNamespace(isActive=True)
    supervisor.poll(None)
    assert supervisor.retrying_since is None and supervisor.retries == 0


def test_health_a_retrying_flow_is_not_healthy_one_degraded_only_by_a_reported_loss_is(tmp_path):
    query = FailingQuery(SOURCE_DOWN)
    supervisor = supervise(query, tmp_path)
    supervisor.poll(None)
    assert supervisor.state() == "degraded" and not supervisor.healthy()  # a cluster out of reach
    running = FailingQuery("")
    running.state = lambda: "running"  # type: ignore[method-assign]
    supervisor = supervise(running, tmp_path)
    assert supervisor.healthy()
    supervisor.loss.since_start.append(SimpleNamespace(line=lambda: "DATA LOSS: 3 record(s) ..."))  # type: ignore[arg-type]
    assert supervisor.state() == "degraded" and supervisor.healthy()  # the loss has its own count and alert
    supervisor._publish()
    labels = {"source": "a", "target": "b", "role": "writer"}
    assert supervisor.metrics.registry.get_sample_value("mirrorspark_flow_healthy", labels) == 1
    assert supervisor.metrics.registry.get_sample_value("mirrorspark_flow_state", {**labels, "state": "degraded"}) == 1


def test_the_retry_backoff_is_capped(tmp_path):
    query = FailingQuery(SOURCE_DOWN)
    query.flow = SimpleNamespace(**{**vars(FailingQuery.flow), "options": SimpleNamespace(restart_attempts=2,
                                                                                             restart_backoff=1.0)})
    supervisor = supervise(query, tmp_path)
    for _ in range(30):
        supervisor._failed_once("down", 0.0, may_pass=True)
    assert supervisor.restart_at == supervision.RETRY_BACKOFF_CAP


def test_what_a_retry_cannot_fix_fails_the_flow_after_the_attempts(tmp_path):
    query = FailingQuery(AUTH)
    supervisor = supervise(query, tmp_path)
    for _ in range(10):
        supervisor.poll(None)
    assert supervisor.failed and supervisor.state() == "failed" and supervisor.attempts == 3


@pytest.mark.parametrize(("text", "expected"), [
    (SOURCE_DOWN, True), (STALLED, True),
    ("org.apache.kafka.common.errors.NotLeaderOrFollowerException: For requests intended only for the leader", True),
    ("cannot reach cluster 'a' at localhost:1 (check a.bootstrap.servers ...): Local: Timed out", True),
    # the soak: the target's broker stopped while a batch's control-plane lookup ran (counted 1 of 6 before)
    ('cimpl.KafkaException: KafkaError{code=_NOENT,val=-156,str="Failed to query partition leaders: No leaders '
     'found"}', True),
    ("Timeout expired while fetching topic metadata", True),  # the soak: Kafka's message alone, no class name
    # the eleventh soak: a batch began a transaction on a remote topic deleted after its metadata was read
    ("java.io.IOException: flow src->dst: the transaction on src.soak-t2-0 did not end within transaction.timeout.ms "
     "(60000 ms): the target has not taken its records", True),
    (AUTH, False),
    ("TimeoutException after SaslAuthenticationException: bad credentials", False),
    ("RecordTooLargeException: The message is 2000000 bytes", False),
    ("InvalidProducerEpochException: Producer attempted to produce with an old epoch", False),
    ("ValueError: something nobody foresaw", False),
])
def test_retriable_reads_the_whole_failure(text, expected):
    assert retriable(text) is expected


def test_a_batch_that_finishes_after_the_lease_was_lost_records_nothing():
    """Executors in other JVMs are not fenced: a batch they finish after the driver lost the flow must
    not add offset pairs or marks next to the new writer's."""
    from mirrorspark.integrity.batch_guard import Fenced
    from mirrorspark.pipeline import batch_writer
    from mirrorspark.sink_report import BatchReport, WrittenRun

    jvm = SimpleNamespace(drain_written=lambda flow: BatchReport(runs=(WrittenRun.of("r.t", 0, 10, 3, 5),)))
    recorded: list[str] = []
    guard = SimpleNamespace(writing=lambda: False, after_write=lambda *a: recorded.append("loss check"))
    writer = batch_writer.BatchWriter(
        flow=SimpleNamespace(name="a->b"), selection=None, remote_topics=None, spark_log=None,  # type: ignore[arg-type]
        guard=guard, sink_options={}, on_written=lambda *a: recorded.append("offset pairs"), metrics=None,  # type: ignore[arg-type]
        takeover={})
    with pytest.raises(Fenced, match="5 record"):
        writer._record(jvm, 3, "planned", SimpleNamespace(), lambda r: ({}, {}))  # type: ignore[arg-type]
    assert recorded == []


def test_a_stop_waits_for_the_batch_in_flight_at_most_its_timeout():
    """The eleventh soak: a batch that never ended (its transaction's producer waiting for a deleted topic)
    held a restart for 9 minutes. The stop now waits for it a bounded time, then cancels it by stopping the
    query; later batches are refused either way."""
    import threading

    from mirrorspark.pipeline import batch_writer

    writer = batch_writer.BatchWriter(
        flow=SimpleNamespace(name="a->b"), selection=None, remote_topics=None, spark_log=None,  # type: ignore[arg-type]
        guard=None, sink_options={}, on_written=None, metrics=None, takeover={})  # type: ignore[arg-type]
    writer.last_written = 6
    in_flight, release = threading.Event(), threading.Event()

    def stuck_batch() -> None:
        with writer._lock:
            in_flight.set()
            release.wait(30)

    thread = threading.Thread(target=stuck_batch)
    thread.start()
    in_flight.wait(10)
    started = time.monotonic()
    assert writer.stopping(0.3) == (False, 6)
    assert 0.25 <= time.monotonic() - started < 5
    release.set()
    thread.join(10)
    assert writer.stopping(5) == (True, 6)
    with pytest.raises(batch_writer.StopRequested):
        writer(None, 7)


def test_a_start_that_met_a_gap_under_data_loss_fail_fails_the_flow_at_once_without_restarts(tmp_path):
    query = FailingQuery("")
    query.loss_stop = "flow a->b: 50 source record(s) are gone before they were copied; mirrorspark.data.loss = fail"
    supervisor = supervise(query, tmp_path)
    supervisor.stopped_for_loss(query.loss_stop)
    for _ in range(5):
        supervisor.poll(None)
    assert supervisor.failed and query.restarts == 0 and supervisor.last_error == query.loss_stop


def test_a_source_that_does_not_answer_the_lag_probe_makes_a_running_flow_degraded_until_it_answers(tmp_path):
    """A real-time query does not fail while its source is away (its consumers reconnect): the lag probe's
    failed rounds say it, with the same words as a retried query, and its next answer clears it."""
    running = FailingQuery("")
    running.state = lambda: "running"  # type: ignore[method-assign]
    running.error = lambda: None  # type: ignore[method-assign]
    supervisor = supervise(running, tmp_path)
    supervisor.source_round("KafkaError{code=TOPIC_AUTHORIZATION_FAILED,val=29,str=\"denied\"}")
    assert supervisor.state() == "running" and supervisor.healthy()  # no outage: the probe's log says it
    supervisor.source_round("KafkaError{code=_TRANSPORT,val=-195,str=\"Broker transport failure\"}")
    first = supervisor.source_away_since
    supervisor.source_round("KafkaError{code=_TIMED_OUT,val=-185,str=\"Local: Timed out\"}")
    assert supervisor.source_away_since == first
    assert supervisor.state() == "degraded" and not supervisor.healthy()
    reason = supervisor.reason() or ""
    assert reason.startswith("retrying since ") and "'a' does not answer" in reason and "_TIMED_OUT" in reason
    supervisor._publish()
    labels = {"source": "a", "target": "b", "role": "writer"}
    assert supervisor.metrics.registry.get_sample_value("mirrorspark_flow_healthy", labels) == 0
    supervisor.source_round(None)
    assert supervisor.state() == "running" and supervisor.healthy() and supervisor.reason() is None
