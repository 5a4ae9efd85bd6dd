"""One flow's Structured Streaming query: Kafka source -> (JVM projection) -> mirrorspark's sink.

Python steers once per micro-batch in ``foreachBatch``: it makes sure every remote topic and
partition the batch may write exists, then hands the batch to the MirrorSink (records stay on
the JVM, in executors wherever they run), whose commit messages bring each record's target offset
back to the driver before the batch is committed.
"""
from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from mirrorspark.config.model import FlowConfig
from mirrorspark.control.admin import topic_partitions
from mirrorspark.control.remote_topics import RemoteTopics, TopicPlan
from mirrorspark.errors import ConfigError, OperationalError
from mirrorspark.integrity.batch_guard import BatchGuard, DataLossStop
from mirrorspark.integrity.spark_offsets import SparkOffsetLog
from mirrorspark.metrics.flow_metrics import FlowMetrics
from mirrorspark.pipeline.executors import through_provider
from mirrorspark.pipeline.record_columns import SINK_FORMAT, to_target_rows
from mirrorspark.policy.topic_selection import TopicSelection
from mirrorspark.sink_report import WrittenRun, drain_figures, drain_written
from mirrorspark.state.files import StateFiles

log = logging.getLogger(__name__)

# Settings Spark's Kafka source/sink manage themselves and refuse as kafka.* options.
_SOURCE_MANAGED = {"group.id", "auto.offset.reset", "key.deserializer", "value.deserializer",
                   "enable.auto.commit", "interceptor.classes", "bootstrap.servers"}
_SINK_MANAGED = {"key.serializer", "value.serializer", "bootstrap.servers"}
# mirrorspark's Kafka source: tasks that each read a group of partitions with one consumer.
SOURCE_FORMAT = "io.mirrorspark.source.MirrorSource"


def root_cause(text: str) -> str:
    """The line of a query failure that says what went wrong (Spark wraps the Kafka client's or
    Python's error in several layers of its own)."""
    causes = re.findall(r"Caused by: ([\w.$]+(?:Exception|Error)\b[^\n]*)", text)
    if causes:
        return causes[-1][:500]
    raised = [line for line in text.splitlines() if re.match(r"^[\w.]+(Exception|Error|Stop): ", line)
              and not line.startswith(("py4j.", "org.apache.spark."))]
    return (raised[-1] if raised else text.splitlines()[0] if text else "unknown")[:500]


class StopRequested(OperationalError):
    """Raised inside a batch that starts after a stop was requested, so it is never committed."""


def source_options(flow: FlowConfig, pattern: str, ship_files: bool = False) -> dict[str, str]:
    """Spark Kafka source options; with ``ship_files`` client files resolve on every executor."""
    consumer = flow.source_consumer()
    reset = consumer.get("auto.offset.reset", "earliest").strip().lower()
    if reset not in ("earliest", "latest"):
        raise ConfigError(f"{flow.source.alias}.consumer.auto.offset.reset must be earliest or latest, "
                          f"got {reset!r}", f"{flow.source.alias}.consumer.auto.offset.reset")
    options = {
        "kafka.bootstrap.servers": flow.source.bootstrap_servers,
        "subscribePattern": pattern,
        "includeHeaders": "true",
        "startingOffsets": reset,
        # A deleted source topic or retention must not stop the other topics (MM2 keeps going).
        "failOnDataLoss": "false",
    }
    if flow.options.batch_max_records > 0:
        options["maxOffsetsPerTrigger"] = str(flow.options.batch_max_records)
    if ship_files:
        consumer = through_provider(consumer)
    options.update({f"kafka.{k}": v for k, v in consumer.items() if k not in _SOURCE_MANAGED})
    return options


def sink_options(flow: FlowConfig, report_offsets: bool, ship_files: bool = False) -> dict[str, str]:
    """MirrorSink options: the target producer's settings as ``kafka.*`` and the flow's name. With
    ``report_offsets`` the producer must be idempotent: exact runs need each partition's records
    written in send order (a retried batch must not overtake an earlier one)."""
    producer = flow.target_producer()
    sent = through_provider(producer) if ship_files else producer
    options = {f"kafka.{k}": v for k, v in sent.items() if k not in _SINK_MANAGED}
    options["kafka.bootstrap.servers"] = flow.target.bootstrap_servers
    if report_offsets:
        if producer.get("enable.idempotence", "true").strip().lower() == "false":
            where = (f"{flow.name}.producer.override.enable.idempotence"
                     if "producer.override.enable.idempotence" in flow.flow_settings
                     else f"{flow.target.alias}.producer.enable.idempotence")
            raise ConfigError(
                f"{where}=false contradicts offset syncs, which need each partition written in send order; remove "
                f"it or set {flow.where('emit.offset-syncs.enabled')} = false", where)
        options["kafka.enable.idempotence"] = "true"
        # What idempotence needs, checked here: a conflict would otherwise fail every executor task.
        key = f"{flow.target.alias}.producer"
        if producer.get("acks", "all").strip().lower() not in ("all", "-1"):
            raise ConfigError(f"{key}.acks={producer['acks']} contradicts offset syncs (an idempotent producer needs "
                              "acks=all); remove it", f"{key}.acks")
        in_flight = producer.get("max.in.flight.requests.per.connection", "5").strip()
        if not in_flight.isdigit() or not 1 <= int(in_flight) <= 5:
            raise ConfigError(f"{key}.max.in.flight.requests.per.connection={in_flight} contradicts offset syncs (an "
                              "idempotent producer allows 1 to 5)", f"{key}.max.in.flight.requests.per.connection")
    options["flow"] = flow.name  # the runs and figures the driver drains are per flow
    return options


class FlowQuery:
    """Builds, starts and stops the streaming query of one flow."""

    def __init__(self, flow: FlowConfig, selection: TopicSelection, remote_topics: RemoteTopics,
                 checkpoint: StateFiles, guard: BatchGuard,
                 on_written: Callable[[Sequence[WrittenRun], Mapping[str, str]], None] | None = None,
                 metrics: FlowMetrics | None = None, ship_files: bool = False,
                 before_start: Callable[[], None] | None = None,
                 takeover: Mapping[tuple[str, int], int] | None = None) -> None:
        self.flow = flow
        self.selection = selection
        self.remote_topics = remote_topics
        self.checkpoint = checkpoint  # Spark's checkpoint folder, in the flow's state location
        self.spark_log = SparkOffsetLog(checkpoint)
        # The last offset log entry read (batch id, end positions): the next batch starts there, so it
        # is not read again from the state location (a round trip per batch on HDFS or S3).
        self._previous: tuple[int, dict[tuple[str, int], int]] | None = None
        self.guard = guard
        self._rerun: int | None = None  # the batch a crash interrupted, run again first
        self.before_start = before_start  # e.g. move the checkpoint back for a re-created topic
        self.takeover = dict(takeover or {})  # where MM2 stopped: the first start's positions (migrate from-mm2)
        self.batches_written = 0
        self.loss_stop: str | None = None  # set when mirrorspark.data.loss = fail stopped the flow
        self.query = None
        self._write_lock = threading.Lock()
        self._stopping = False
        self._ship_files = ship_files
        self._sink_options = sink_options(flow, report_offsets=on_written is not None, ship_files=ship_files)
        self._on_written = on_written
        self.metrics = metrics
        self.paused = False
        self.batch_phases_ms: dict[str, float] = {}  # where foreachBatch spent the latest batch
        self.records_read = 0
        self.last_batch_id: int | None = None
        self.last_rate = 0.0
        self._counted: set[int] = set()
        self._last_written: int | None = None
        self.executors: set[str] = set()  # executor ids that wrote this flow's records since start

    def start(self, spark) -> None:
        self._stopping = False
        if self.before_start is not None:
            self.before_start()
        self._rerun = self.spark_log.pending()
        self._previous = None  # a rewind (re-created topic) may have rewritten the entries meanwhile
        reader = spark.readStream.format(SOURCE_FORMAT)
        options = source_options(self.flow, self.subscribe_pattern(), self._ship_files)
        options["groups"] = str(spark.sparkContext.defaultParallelism)
        if self.takeover and self.spark_log.last_committed() is None and self._rerun is None:
            options["startingOffsets"] = self._takeover_offsets(options["startingOffsets"],
                                                                options["subscribePattern"])
        for key, value in options.items():
            reader = reader.option(key, value)
        # Each flow's jobs run in a scheduler pool of its own: flows share the executors fairly.
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", self.flow.name)
        self.query = (
            reader.load()
            .writeStream.queryName(self.flow.name)
            .option("checkpointLocation", self.checkpoint.uri())
            .foreachBatch(self._write_batch)
            .start()
        )

    def _takeover_offsets(self, reset: str, pattern: str) -> str:
        """Spark's startingOffsets for the first start after MM2: its positions where it has them, the
        flow's auto.offset.reset elsewhere. Spark wants an offset for every partition its pattern
        assigns, so every source topic the pattern matches is listed (the pattern is valid Python
        too; a topic created meanwhile fails the start, and the restart lists it)."""
        default = -2 if reset == "earliest" else -1
        plan = self.remote_topics.plan.partitions
        try:
            matched = {t: n for t, n in topic_partitions(self.remote_topics.source).items() if re.search(pattern, t)}
        except re.error:  # a Java-only construct in the flow's topics: the planned topics are the best guess
            matched = dict(plan)
        offsets = {topic: {str(p): self.takeover.get((topic, p), default) for p in range(count)}
                   for topic, count in sorted(matched.items())}
        log.info("flow %s: first start after MirrorMaker 2: %d partition(s) resume where MM2 stopped", self.flow.name,
                 sum(1 for key in self.takeover if key[0] in plan))
        return json.dumps(offsets)

    def subscribe_pattern(self) -> str:
        fixed = self.remote_topics.fixed_topics
        return self.selection.subscribe_pattern() if fixed is None else self.selection.exact_pattern(fixed)

    def _write_batch(self, df, batch_id: int) -> None:
        with self._write_lock:
            if self._stopping:
                raise StopRequested(f"flow {self.flow.name}: stop requested before batch {batch_id}")
            t0 = time.perf_counter()
            planned, ends = self.spark_log.entry(batch_id)  # Spark wrote it before the batch runs
            plan = self._plan_for(batch_id, {topic for topic, _ in ends})
            if not plan.remote:
                return  # only topics this flow must not copy (e.g. cycles of a custom policy)
            starts = self._starts(batch_id)
            self._previous = (batch_id, ends)
            try:
                resume = self.guard.before_write(batch_id, planned, starts, ends, plan.remote,
                                                 batch_id == self._rerun)
            except DataLossStop as exc:
                self.loss_stop = str(exc)
                raise
            options = {**self._sink_options, "resume": resume} if resume else self._sink_options
            t1 = time.perf_counter()
            to_target_rows(df, plan.remote).write.format(SINK_FORMAT).mode("append").options(**options).save()
            t2 = time.perf_counter()
            # save() returned after the sink's BatchWrite.commit received every task's commit
            # message on the driver: the report of this batch is all here, from whichever executor.
            jvm = df.sparkSession._jvm.io.mirrorspark
            report = drain_written(jvm, self.flow.name)
            self.executors |= report.executors
            self.guard.after_write(starts, ends, plan.remote, report.first_written())
            if self._on_written is not None:
                self._on_written(report.runs, plan.source_of)
            t3 = time.perf_counter()
            recopied = self.guard.marks.batch_written(batch_id, planned, report.runs, plan.source_of)
            figures = drain_figures(jvm, self.flow.name)
            for row in figures.resumed:
                recopied[(row.topic, row.partition)] = recopied.get((row.topic, row.partition), 0) + row.recopied
                log.info("flow %s: batch %d resumed %s[%s]: %s record(s) already on the target were not sent "
                         "again, %s written again", self.flow.name, batch_id, row.topic, row.partition, row.resumed,
                         row.recopied)
            if self.metrics is not None:
                self.metrics.batch_written(figures.stats, recopied)
            self._last_written = batch_id
            self.batches_written += 1
            self.batch_phases_ms = {"plan": round((t1 - t0) * 1000, 1), "write": round((t2 - t1) * 1000, 1),
                                    "offsets": round((t3 - t2) * 1000, 1),
                                    "metrics": round((time.perf_counter() - t3) * 1000, 1)}

    def _starts(self, batch_id: int) -> dict[tuple[str, int], int]:
        """Where ``batch_id`` starts: the end of the batch before it. Batch 0 starts where MM2 stopped
        after a takeover, so a gap there (retention) is reported too."""
        if batch_id == 0:
            return dict(self.takeover)
        if self._previous is not None and self._previous[0] == batch_id - 1:
            return self._previous[1]
        return self.spark_log.entry(batch_id - 1)[1]

    def _plan_for(self, batch_id: int, batch_topics: set[str]) -> TopicPlan:
        """The topic plan, checked against the topics Spark put in this batch (its offset log) so a
        record is never dropped just because its topic appeared after the last refresh."""
        plan = self.remote_topics.refresh()
        missing = {t for t in batch_topics - set(plan.remote) if self.selection.should_replicate(t)}
        if missing:
            plan = self.remote_topics.refresh(force_target_check=True)
            missing -= set(plan.remote)
            if missing:
                raise OperationalError(f"flow {self.flow.name}: batch {batch_id} reads {sorted(missing)}, which has no "
                                       "remote topic yet; the batch is retried on restart")
        return plan

    def committed_positions(self) -> dict[tuple[str, int], int]:
        """Source offsets up to which the last committed batch read (Spark's offset and commit logs)."""
        return self.spark_log.committed_positions()

    def collect_progress(self) -> None:
        """Fold Spark's progress reports of data batches not yet counted into the running totals."""
        if self.query is None:
            return
        for progress in self.query.recentProgress:
            batch = progress["batchId"]
            self.last_batch_id = batch if self.last_batch_id is None else max(batch, self.last_batch_id)
            if progress["numInputRows"] > 0 and batch not in self._counted:
                self._counted.add(batch)
                self.records_read += progress["numInputRows"]
                self.last_rate = progress.get("processedRowsPerSecond") or 0.0
        if len(self._counted) > 10_000:
            self._counted = {b for b in self._counted if b > self.last_batch_id - 1_000}

    def batch_durations(self) -> dict[str, int]:
        """Spark's own breakdown of the latest data batch (ms per phase: latestOffset, addBatch,
        walCommit, commitOffsets, triggerExecution...), for profiling and the REST API."""
        if self.query is None:
            return {}
        for progress in reversed(self.query.recentProgress):
            if progress["numInputRows"] > 0:
                return dict(progress["durationMs"])
        return {}

    @property
    def data_batches(self) -> int:
        """Batches that carried records, among those seen in Spark's recent progress."""
        return len(self._counted)

    def state(self) -> str:
        """starting, running, paused or failed."""
        if self.paused:
            return "paused"
        if self.query is None:
            return "starting"
        return "running" if self.query.isActive else "failed"

    def error(self) -> str | None:
        if self.paused or self.query is None or self.query.isActive:
            return None
        exc = self.query.exception()
        return root_cause(str(exc)) if exc is not None else "the query stopped"

    def pause(self) -> None:
        """Finish and commit the batch in flight, then stop reading; ``resume`` continues from there."""
        self.paused = True
        self.stop()
        if self.metrics is not None:
            self.metrics.set_running(False)
        log.info("flow %s paused", self.flow.name)

    def resume(self, spark) -> None:
        self.start(spark)
        self.paused = False
        if self.metrics is not None:
            self.metrics.set_running(True)
        log.info("flow %s resumed", self.flow.name)

    def restart(self, spark) -> None:
        self.paused = True  # the runner must not take the stop for a failure
        try:
            self.stop()
        except Exception as exc:  # noqa: BLE001 - a failed query may refuse to stop; start anew anyway
            log.debug("flow %s: stopping before restart: %s", self.flow.name, exc)
        try:
            self.resume(spark)
        except BaseException:
            self.paused = False  # not a pause: the supervisor must see the failed start and retry
            raise

    def stop(self, commit_timeout: float = 60.0) -> None:
        """Let a batch being written finish and be committed to the checkpoint, keep later ones
        from writing, then stop the query: a restart then neither loses nor re-copies records."""
        with self._write_lock:
            self._stopping = True
            last = self._last_written
        if last is not None and self.query is not None and self.query.isActive:
            deadline = time.monotonic() + commit_timeout
            while (self.spark_log.commits.read(str(last)) is None and self.query.isActive
                   and time.monotonic() < deadline):
                time.sleep(0.05)
        if self.query is not None:
            self.query.stop()
