"""One flow's Structured Streaming query: mirrorspark's Kafka source -> MirrorSink (the rows unchanged),
and its life: start, pause, resume, restart and a stop that never leaves a batch half-committed.
What happens in each batch is ``batch_writer``'s; the options are ``query_options``'s; where the
query starts reading (a takeover from MM2, ``auto.offset.reset = none``) is ``query_start``'s; the
real-time trigger's pieces are ``realtime``'s; the figures Spark reports are ``query_progress``'s.
"""
from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from mirrorspark.config.model import FlowConfig
from mirrorspark.errors import Conflict
from mirrorspark.integrity.batch_guard import BatchGuard, DataLossStop
from mirrorspark.integrity.spark_offsets import SparkOffsetLog
from mirrorspark.jvm_bridge import SparkJvm
from mirrorspark.metrics.flow_metrics import FlowMetrics
from mirrorspark.pipeline import realtime
from mirrorspark.pipeline.batch_writer import BatchWriter
from mirrorspark.pipeline.query_options import SOURCE_FORMAT, sink_options, source_options
from mirrorspark.pipeline.query_progress import QueryProgress
from mirrorspark.pipeline.query_start import QueryStart
from mirrorspark.pipeline.record_columns import SINK_FORMAT
from mirrorspark.schemas.sync import SchemaSync
from mirrorspark.sink_report import WrittenRun, topic_ids_option
from mirrorspark.state.files import StateFiles

if TYPE_CHECKING:
    from pyspark import StatusTracker

log = logging.getLogger(__name__)


def root_cause(text: str) -> str:
    """The line of a query failure that says what went wrong (Spark wraps the Kafka client's or
    Python's error in several layers of its own)."""
    causes = re.findall(r"Caused by: ([\w.$]+(?:Exception|Error)\b[^\n]*)", text)
    if causes:
        return causes[-1][:500]
    # An exception's line: Java's and Python's named ...Exception/Error/Stop, and mirrorspark's own
    # (a dotted module path and a class, as a Python traceback ends: batch_guard.Fenced, ...).
    raised = [line for line in text.splitlines()
              if (re.match(r"^[\w.]+(Exception|Error|Stop): ", line) or re.match(r"^mirrorspark(\.\w+)+: ", line))
              and not line.startswith(("py4j.", "org.apache.spark."))]
    return (raised[-1] if raised else text.splitlines()[0] if text else "unknown")[:500]


class FlowQuery:
    """Builds, starts and stops the streaming query of one flow."""

    def __init__(self, *, flow: FlowConfig, start: QueryStart, checkpoint: StateFiles, guard: BatchGuard,
                 slots: realtime.SlotBook,
                 on_written: Callable[[Sequence[WrittenRun], Mapping[str, str]], None] | None = None,
                 metrics: FlowMetrics | None = None, ship_files: bool = False,
                 before_start: Callable[[], None] | None = None, lease: tuple[str, str] | None = None,
                 schemas: SchemaSync | None = None, after_realtime_batch: realtime.GivenUp | None = None) -> None:
        """``slots``: the task slots of the process's Spark application, shared by its flows; ``lease``:
        the flow's lease group and this instance, which executors of their own fence themselves by;
        ``after_realtime_batch``: told after each recorded real-time batch what its tasks gave up."""
        self.flow = flow
        self.slots = slots
        self.starts = start  # the subscription and, on a first start, explicit positions
        self.remote_topics = start.remote_topics
        self.checkpoint = checkpoint  # Spark's checkpoint folder, in the flow's state location
        self.spark_log = SparkOffsetLog(checkpoint)
        self.before_start = before_start  # e.g. move the checkpoint back for a re-created topic
        self.after_realtime_batch = after_realtime_batch
        self.metrics = metrics
        self._ship_files = ship_files
        self.writer = BatchWriter(
            flow=flow, selection=start.selection, remote_topics=start.remote_topics, spark_log=self.spark_log,
            guard=guard, sink_options=sink_options(flow, report_offsets=on_written is not None, ship_files=ship_files,
                                                   lease=lease),
            on_written=on_written, metrics=metrics, takeover=start.takeover, schemas=schemas)
        self.progress = QueryProgress()
        self.query = None
        self._tracker: StatusTracker | None = None  # Spark's, once started: whether a stopped query's tasks ended
        self.recorder: realtime.EpochRecorder | None = None  # real-time mode: records each batch's pairs
        self.planned_partitions: dict[str, int] | None = None  # real-time mode: what the running query reads
        self.paused = False  # by the user (REST); stays paused across automatic restarts
        self.restarting = False  # stopped by a restart in progress: not a failure
        # Pause, resume and restart come from the REST threads and from the supervisor: one at a time,
        # so a pause is never undone by a restart and no two starts share the checkpoint.
        self._lifecycle = threading.RLock()

    # What the supervisor, the runner and the REST API read of the batches written.
    @property
    def batches_written(self) -> int:
        return self.writer.batches_written

    @property
    def loss_stop(self) -> str | None:
        return self.writer.loss_stop

    @property
    def schemas(self) -> SchemaSync | None:
        return self.writer.schemas

    def take_restart_reason(self) -> str | None:
        """Why the query stopped itself to be restarted at once (not a failure), taken once."""
        reason, self.writer.restart_for = self.writer.restart_for, None
        return reason

    @property
    def batch_phases_ms(self) -> dict[str, float]:
        return self.writer.batch_phases_ms

    @property
    def executors(self) -> set[str]:
        return self.writer.executors

    @property
    def records_read(self) -> int:
        return self.progress.records_read

    @property
    def last_batch_id(self) -> int | None:
        return self.progress.last_batch_id

    @property
    def last_rate(self) -> float:
        return self.progress.last_rate

    @property
    def data_batches(self) -> int:
        return self.progress.data_batches

    def collect_progress(self) -> None:
        self.progress.collect(self.query)

    def batch_durations(self) -> dict[str, int]:
        return self.progress.durations(self.query)

    def start(self, spark) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        if self.before_start is not None:
            self.before_start()
        if self.flow.options.realtime:
            self._start_realtime(spark)
            return
        self.slots.hold(self.flow.name, 1)  # its tasks need one slot next to real-time flows
        rerun = self.spark_log.pending()
        self.writer.starting(rerun)
        pattern = self.starts.subscribe_pattern()
        options = source_options(self.flow, pattern, self._ship_files)
        # One task per core and batch, each reading a group of partitions with one consumer.
        options["groups"] = str(spark.sparkContext.defaultParallelism)
        if self.flow.options.heartbeats_hold > 0:  # an idle flow: heartbeats batched, not one batch each
            options["holdPattern"] = self.starts.selection.heartbeats_pattern()
            options["holdMs"] = str(self.flow.options.heartbeats_hold)
        if self.starts.explicit(self.spark_log.last_committed() is None and rerun is None):
            options["startingOffsets"] = self.starts.starting_json(pattern)
            self._align_first_positions(options["startingOffsets"])
        reader = spark.readStream.format(SOURCE_FORMAT)
        for key, value in options.items():
            reader = reader.option(key, value)
        # Each flow's jobs run in a scheduler pool of its own: flows share the executors fairly.
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", self.flow.name)
        self.query = (
            reader.load()
            .writeStream.queryName(self.flow.name)
            .option("checkpointLocation", self.checkpoint.uri())
            .foreachBatch(self.writer)
            .start()
        )

    def _start_realtime(self, spark) -> None:
        """The grouped source under the real-time trigger, the rename as an expression and the
        MirrorSink as streaming sink (``realtime``). The planned topics are assigned with their
        partitions, in groups of one task each: other topics or partitions are read after the topic
        refresh restarts the query."""
        plan = self.remote_topics.plan
        assign, partitions = realtime.assignment(plan)
        master = spark.conf.get("spark.master", "local[*]")
        slots, how = realtime.task_slots(spark, master)
        tasks = self.slots.claim(self.flow.name,
                                 where=(self.flow.where(realtime.TRIGGER_KEY), self.flow.where(realtime.TASKS_KEY)),
                                 partitions=partitions, wanted=self.flow.options.realtime_tasks, slots=slots, how=how)
        pattern = self.starts.subscribe_pattern()
        options = source_options(self.flow, pattern, self._ship_files)
        source_format = SOURCE_FORMAT
        if partitions:
            options["assign"] = assign
            options["groups"] = str(tasks)
            options["flow"] = self.flow.name  # the key of what its tasks give up (``SparkJvm.take_drops``)
            if self.flow.options.heartbeats_hold > 0:  # an idle flow: heartbeats fetched together, not one wake each
                options["holdPattern"] = self.starts.selection.heartbeats_pattern()
                options["holdMs"] = str(self.flow.options.heartbeats_hold)
        else:  # no topic yet: Spark's Kafka source on the pattern (reads nothing), until the refresh restarts the query
            source_format = "kafka"
        starting = self.starts.starting_json(pattern, partitions) \
            if self.starts.explicit(self.spark_log.last_committed() is None) else None
        try:
            starting = realtime.skip_removed(self.writer.guard, self.spark_log, starting,
                                             None if self.flow.same_names else plan.remote)
        except DataLossStop as exc:  # as a micro-batch's: the flow fails, is not restarted, the others go on
            self.writer.loss_stop = str(exc)
            raise
        if starting is not None:
            options["startingOffsets"] = starting
            self._align_first_positions(starting)
        sink = dict(self.writer.sink_options_for(plan))
        run = uuid.uuid4().hex  # the batches of this start share one ResumeLedger and what they know of progress
        if self.flow.exactly_once:  # the progress committed with the records says what is on the target
            sink.update(resume="", resumeRun=run, writeRun=run,
                        transactionMs=str(self.flow.options.realtime_transaction_ms),
                        topicIds=topic_ids_option(self.writer.guard.sink_topic_ids(plan.remote)))
        else:  # given once the query started: the target's ends are asked while Spark plans (ADR 0027 section 9)
            sink.update(resume="", resumeLater="true", resumeRun=run)
        self.writer.starting(None)
        spark.conf.set(realtime.ALLOWLIST_CHECK, "false")
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", self.flow.name)
        reader = spark.readStream.format(source_format)
        for key, value in options.items():
            reader = reader.option(key, value)
        rows = reader.load()
        self.recorder = realtime.EpochRecorder(self.writer, SparkJvm(session=spark), self.flow.name,
                                               after=self.after_realtime_batch)
        self.recorder.start()
        try:
            query = (
                rows.writeStream.queryName(self.flow.name).format(SINK_FORMAT).options(**sink)
                .outputMode("update").trigger(realTime=f"{self.flow.options.realtime_batch:g} seconds")
                .option("checkpointLocation", self.checkpoint.uri())
                .start()
            )
            self.query = query
        except Exception:
            self.recorder.stop()
            self.recorder = None
            raise
        if not self.flow.exactly_once:
            try:
                ranges, starts = realtime.resume_point(self.writer.guard, self.spark_log, plan)
            except BaseException:  # its first batch is still waiting: nothing was written
                try:
                    query.stop()
                finally:
                    self.recorder.stop()
                    self.recorder = None
                raise
            SparkJvm(session=spark).give_resume(run, ranges, starts)
        self.planned_partitions = partitions

    def _align_first_positions(self, starting: str) -> None:
        if self.spark_log.align_first_positions(starting):
            log.warning("flow %s: an earlier start of the query kept other first positions in %s/sources (it stopped "
                        "before its first batch was planned); this start reads from the positions given now",
                        self.flow.name, self.checkpoint.uri())

    def replan_reason(self, plan) -> str | None:
        """Why the running query must restart after a topic refresh (None: it reads what it should)."""
        if self.starts.filter_moved(plan):
            return "the Java topic.filter.class accepts other topics now"
        if self.planned_partitions is not None and self.query is not None and \
                realtime.assignment(plan)[1] != self.planned_partitions:
            return "topics or partitions to copy were added or removed (real-time mode re-plans by restarting)"
        return None

    def subscribe_pattern(self) -> str:
        """What the source subscribes to (``QueryStart.subscribe_pattern``)."""
        return self.starts.subscribe_pattern()

    def committed_positions(self) -> dict[tuple[str, int], int]:
        """Source offsets up to which the last committed batch read (Spark's offset and commit logs)."""
        return self.spark_log.committed_positions()

    def state(self) -> str:
        """starting, running, paused or failed."""
        if self.paused:
            return "paused"
        if self.query is None or self.restarting:
            return "starting"
        return "running" if self.query.isActive else "failed"

    def error(self) -> str | None:
        if self.paused or self.restarting or self.query is None or self.query.isActive:
            return None
        exc = self.query.exception()
        return root_cause(str(exc)) if exc is not None else "the query stopped"

    def failure_text(self) -> str:
        """The whole text of the query's failure, every cause included (what ``retriable`` reads)."""
        if self.query is None or self.query.isActive:
            return ""
        exc = self.query.exception()
        return str(exc) if exc is not None else ""

    def pause(self) -> None:
        """Finish and commit the batch in flight, then stop reading; ``resume`` continues from there."""
        with self._lifecycle:
            self.paused = True
            self.stop()
        if self.metrics is not None:
            self.metrics.set_running(False)
        log.info("flow %s paused", self.flow.name)

    def resume(self, spark) -> None:
        with self._lifecycle:
            if not self.paused:
                raise Conflict(f"flow {self.flow.name} is not paused (state {self.state()})")
            self.start(spark)
            self.paused = False
        if self.metrics is not None:
            self.metrics.set_running(True)
        log.info("flow %s resumed", self.flow.name)

    def restart(self, spark, unpause: bool = False) -> None:
        """Stop and start again. A flow the user paused stays paused (an automatic restart that
        comes after the pause only stops it), unless ``unpause`` (a restart asked for by the user)."""
        with self._lifecycle:
            self.restarting = True  # the runner must not take the stop for a failure
            try:
                try:
                    self.stop()
                except Exception as exc:  # noqa: BLE001 - a failed query may refuse to stop; start anew anyway
                    log.debug("flow %s: stopping before restart: %s", self.flow.name, exc)
                if self.paused and not unpause:
                    log.info("flow %s: paused meanwhile, so not started again", self.flow.name)
                    return
                self.start(spark)  # a failed start goes up: the supervisor sees it and retries
                self.paused = False
            finally:
                self.restarting = False
        if self.metrics is not None:
            self.metrics.set_running(True)

    def _await_commit(self, batch: int | None, limit: float) -> None:
        """Until Spark's commit log holds ``batch`` (written after the sink's commit), the query ends, or ``limit``."""
        if batch is None or self.query is None or not self.query.isActive:
            return
        deadline = time.monotonic() + limit
        while self.spark_log.commits.read(str(batch)) is None and self.query.isActive and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self, commit_timeout: float = 60.0) -> None:
        """Let a batch being written finish and be committed to the checkpoint, keep later ones
        from writing, then stop the query: a restart then neither loses nor re-copies records. A
        real-time batch is ended at once and recorded first: cut off, its copies were known only at the
        next start (compared with the target then; a flow's first batch not at all)."""
        if self.recorder is not None and self.query is not None and self.query.isActive:
            epoch = self.recorder.end_batch(min(commit_timeout, self.flow.options.realtime_batch + 5))
            self._await_commit(epoch, commit_timeout)
        ended, last = self.writer.stopping(commit_timeout)
        if not ended:  # stopping the query cancels the batch's tasks: its next attempt skips what it committed
            log.warning("flow %s: the batch in flight did not end within %.0f s; it is cancelled (the flow's next "
                        "start runs it again, skipping what it committed)", self.flow.name, commit_timeout)
        else:
            self._await_commit(last, commit_timeout)
        if self.query is not None:
            run = str(self.query.runId)  # the group of its Spark jobs
            self.query.stop()
            if not realtime.await_tasks_ended(self._tracker, run, commit_timeout):
                log.warning("flow %s: tasks of the stopped query still ran %.0f s later; a remote topic re-created "
                            "now may receive what they still send", self.flow.name, commit_timeout)
        if self.recorder is not None:
            self.recorder.stop()
            self.recorder = None
        self.slots.release(self.flow.name)
