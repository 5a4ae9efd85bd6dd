"""One flow's ``foreachBatch`` function: a micro-batch checked, written and accounted for.

Python steers once per micro-batch: it makes sure every remote topic the batch may write exists,
lets the guard check for loss and resume an interrupted batch, then hands the batch to the
MirrorSink (records stay on the JVM, in executors wherever they run), whose commit messages bring
each record's target offset back to the driver before the batch is committed.
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence

from mirrorspark.config.model import FlowConfig
from mirrorspark.control.remote_topics import RemoteTopics, TopicPlan
from mirrorspark.errors import OperationalError
from mirrorspark.integrity.batch_guard import BatchGuard, DataLossStop, Fenced, RemoteTopicGone
from mirrorspark.integrity.spark_offsets import Positions, SparkOffsetLog
from mirrorspark.jvm_bridge import SparkJvm
from mirrorspark.metrics.flow_metrics import FlowMetrics
from mirrorspark.partition import Partition
from mirrorspark.pipeline.record_columns import SINK_FORMAT, remote_topics_option
from mirrorspark.policy.topic_selection import TopicSelection
from mirrorspark.schemas.sync import SchemaSync
from mirrorspark.sink_report import BatchReport, WrittenRun, topic_ids_option

log = logging.getLogger(__name__)

DEFAULT_MAX_REQUEST = 1048576  # the producer's max.request.size default
RECORD_OVERHEAD = 16384  # a request's and a record batch's headers around the largest record


# Write marks name a real-time batch by its id alone: Spark replays it from its last batch and the
# replay may end at other offsets than the interrupted attempt.
REALTIME_PLANNED = "realtime"


class StopRequested(OperationalError):
    """Raised inside a batch that starts after a stop was requested, so it is never committed."""


class BatchStarts:
    """Where each batch starts: the end of the batch before it. Batch 0 starts where MM2 stopped after
    a takeover (``takeover``), so a gap there (retention) is reported too. The last offset log entry
    read is kept: the next batch starts there without reading it again from the state location (a
    round trip per batch on HDFS or S3)."""

    def __init__(self, *, spark_log: SparkOffsetLog, takeover: Mapping[Partition, int]) -> None:
        self.spark_log = spark_log
        self.takeover = takeover  # shared with the query's start: a re-created topic's positions move
        self._previous: tuple[int, dict[Partition, int]] | None = None

    def of(self, batch_id: int) -> dict[Partition, int]:
        if batch_id == 0:
            return dict(self.takeover)
        if self._previous is not None and self._previous[0] == batch_id - 1:
            return self._previous[1]
        return self.spark_log.entry(batch_id - 1)[1]

    def remember(self, batch_id: int, ends: dict[Partition, int]) -> None:
        self._previous = (batch_id, ends)

    def forget(self) -> None:
        """A rewind (a re-created topic) may have rewritten the entries: read them again."""
        self._previous = None


class BatchWriter:
    """Called by Spark with each micro-batch; a stop lets the batch in flight finish and refuses later ones."""

    def __init__(self, *, flow: FlowConfig, selection: TopicSelection, remote_topics: RemoteTopics,
                 spark_log: SparkOffsetLog, guard: BatchGuard, sink_options: Mapping[str, str],
                 on_written: Callable[[Sequence[WrittenRun], Mapping[str, str]], None] | None,
                 metrics: FlowMetrics | None, takeover: Mapping[Partition, int],
                 schemas: SchemaSync | None = None) -> None:
        """``schemas``: the flow's schema sync, whose id map each batch's sink rewrites records with."""
        self.flow = flow
        self.schemas = schemas
        self.selection = selection
        self.remote_topics = remote_topics
        self.spark_log = spark_log
        self.guard = guard
        self.sink_options = dict(sink_options)
        self.on_written = on_written
        self.metrics = metrics
        self.starts = BatchStarts(spark_log=spark_log, takeover=takeover)  # batch 0: where MM2 stopped
        self.rerun: int | None = None  # the batch a crash interrupted, run again first
        self.run = uuid.uuid4().hex  # this start of the query (``starting`` makes a new one)
        self.batches_written = 0
        self.loss_stop: str | None = None  # set when mirrorspark.data.loss = fail stopped the flow
        self.restart_for: str | None = None  # a batch refused to write until a restart (a remote topic went back)
        self.batch_phases_ms: dict[str, float] = {}  # where the latest batch spent its time
        self.executors: set[str] = set()  # executor ids that wrote this flow's records since start
        self.last_written: int | None = None
        self._lock = threading.Lock()
        self._stopping = False

    def starting(self, rerun: int | None) -> None:
        """A (re)start: batches are accepted again; ``rerun`` is the batch Spark runs again first."""
        with self._lock:
            self._stopping = False
            self.starts.forget()  # a rewind (re-created topic) may have rewritten the entries meanwhile
            self.rerun = rerun
            # Exactly-once: what the sink's JVMs keep of each partition's progress holds for this start only,
            # and the driver fences the flow's earlier writers once per start (sink/Transactions.java).
            self.run = uuid.uuid4().hex

    def stopping(self, wait: float) -> tuple[bool, int | None]:
        """Refuse batches that start from now on and wait at most ``wait`` seconds for the batch in flight:
        one that never ends (a write the target never takes) must not hold a restart or a stop for ever.
        Returns whether it ended, and the last batch written (its commit is awaited)."""
        self._stopping = True  # a batch that starts reads it under the lock
        if not self._lock.acquire(timeout=wait):
            return False, self.last_written
        try:
            self._stopping = True
            return True, self.last_written
        finally:
            self._lock.release()

    def __call__(self, df, batch_id: int) -> None:
        with self._lock:
            if self._stopping:
                raise StopRequested(f"flow {self.flow.name}: stop requested before batch {batch_id}")
            t0 = time.perf_counter()
            planned, ends = self.spark_log.entry(batch_id)  # Spark wrote it before the batch runs
            plan = self._plan_for(batch_id, ends)
            if not plan.remote:
                return  # only topics this flow must not copy (e.g. cycles of a custom policy)
            starts = self.starts.of(batch_id)
            self.starts.remember(batch_id, ends)
            try:
                resume = self.guard.before_write(batch_id, planned, starts, ends, plan.remote, batch_id == self.rerun)
            except DataLossStop as exc:
                self.loss_stop = str(exc)
                raise
            except (RemoteTopicGone, Fenced) as exc:
                self.restart_for = str(exc)  # a fenced flow is stopped by its seat before the restart
                raise
            options = dict(self.sink_options_for(plan))
            if self.flow.exactly_once:  # progress committed for other topic ids (re-created since) skips nothing
                options["topicIds"] = topic_ids_option(self.guard.sink_topic_ids(plan.remote))
                options["writeRun"], options["writeBatch"] = self.run, str(batch_id)
            # Exactly-once: the progress committed with the records says what is on the target; a
            # comparison with the target's records would also see those of aborted transactions.
            if resume and not self.flow.exactly_once:
                options["resume"] = resume
            retry_from = "" if self.flow.exactly_once else \
                self.guard.retry_from(batch_id, planned, starts, ends, plan.remote)
            if retry_from:
                options["retryFrom"] = retry_from
            t1 = time.perf_counter()
            if self.metrics is not None:  # records handed to the writer and not yet acknowledged
                self.metrics.in_flight(sum(max(0, end - starts[key]) for key, end in ends.items() if key in starts))
            try:
                df.write.format(SINK_FORMAT).mode("append").options(**options).save()
            finally:
                if self.metrics is not None:
                    self.metrics.in_flight(0)
            t2 = time.perf_counter()
            # save() returned after the sink's BatchWrite.commit received every task's commit
            # message on the driver: the report of this batch is all here, from whichever executor.
            t3 = self._record(SparkJvm(session=df.sparkSession), batch_id, planned, plan,
                              lambda _report: (starts, ends))
            self.batch_phases_ms = {"plan": round((t1 - t0) * 1000, 1), "write": round((t2 - t1) * 1000, 1),
                                    "offsets": round((t3 - t2) * 1000, 1),
                                    "metrics": round((time.perf_counter() - t3) * 1000, 1)}
            if self.metrics is not None:
                self.metrics.offsets_handed((t3 - t2) * 1000)

    def record_epoch(self, jvm: SparkJvm, epoch: int) -> None:
        """Real-time mode: what a real-time batch wrote, made durable before Spark commits the batch (the
        sink's commit waits for it). The positions come from the batch's runs: each source partition
        starts where this flow's marks say it had copied up to."""
        with self._lock:
            t0 = time.perf_counter()
            plan = self.remote_topics.plan
            t1 = self._record(jvm, epoch, REALTIME_PLANNED, plan, lambda report: self._epoch_positions(report, plan))
            self.batch_phases_ms = {"offsets": round((t1 - t0) * 1000, 1),
                                    "metrics": round((time.perf_counter() - t1) * 1000, 1)}
            if self.metrics is not None:
                self.metrics.offsets_handed((t1 - t0) * 1000)

    def _epoch_positions(self, report: BatchReport, plan: TopicPlan) -> tuple[Positions, Positions]:
        """A real-time batch's source ranges: from this flow's marks to the last offset each partition wrote."""
        starts: Positions = {}
        ends: Positions = {}
        for row in report.runs:
            if row.written:
                source = (plan.source_of.get(row.topic, row.topic), row.partition)
                ends[source] = max(ends.get(source, 0), row.run.upstream_end)
        for topic in {topic for topic, _ in ends}:
            for partition, mark in self.guard.marks.source_marks(topic).items():
                if (topic, partition) in ends:
                    starts[(topic, partition)] = mark
        return starts, ends

    def _record(self, jvm: SparkJvm, batch_id: int, planned: str, plan: TopicPlan,
                positions: Callable[[BatchReport], tuple[Positions, Positions]]) -> float:
        """What the sink reported for a written batch: loss check, offset pairs, marks and figures.
        Returns when the offsets were handed over (the phases' clock)."""
        report = jvm.drain_written(self.flow.name)
        self.executors |= report.executors
        if self.guard.writing is not None and not self.guard.writing():
            # Lost while the batch wrote (executors in other JVMs are not fenced, ADR 0011): its offset
            # pairs and marks would interleave with the new writer's; it starts from the target instead.
            raise Fenced(f"flow {self.flow.name}: batch {batch_id} finished after this process lost the flow's "
                         f"lease; its {sum(r.run.count for r in report.runs if r.written)} record(s) are not recorded "
                         "here (no offset syncs, no marks): the instance writing the flow now resumes from what "
                         "the target holds")
        starts, ends = positions(report)
        self.guard.after_write(starts, ends, plan.remote, report.first_written())
        # A remote topic re-created while this batch wrote (its refill planned meanwhile): its runs belong
        # to a topic being refilled, not to the mapping or the marks the refill starts again from. Recorded,
        # their old-topic offsets made the new topic look truncated and the refill look copied twice.
        late = self.guard.rewinds_pending() & {plan.source_of.get(run.topic, run.topic) for run in report.runs}
        runs = [run for run in report.runs if plan.source_of.get(run.topic, run.topic) not in late]
        late_runs = [run for run in report.runs if run.written and plan.source_of.get(run.topic, run.topic) in late]
        if self.on_written is not None:
            self.on_written(runs, plan.source_of)
        handed = time.perf_counter()
        self._account(jvm, batch_id, planned, runs, plan.source_of, late_runs)
        self.last_written = batch_id
        self.batches_written += 1
        return handed

    def _account(self, jvm: SparkJvm, batch_id: int, planned: str, runs: Sequence[WrittenRun],
                 source_of: Mapping[str, str], late_runs: Sequence[WrittenRun] = ()) -> None:
        """Records copied again (marks and resumed partitions) and the batch's figures, into the metrics.
        ``late_runs``: written while their remote topic was re-created (see ``_record``)."""
        recopied = self.guard.marks.batch_written(batch_id, planned, runs, source_of)
        if late_runs:
            # What landed in the new topic comes before the refill, which copies it again: counted, never
            # silent. What went to the old topic went with it (its offsets lie past the new topic's end).
            ends = self.guard.target_ends(sorted({(run.topic, run.partition) for run in late_runs}))
            landed = [run for run in late_runs if run.run.downstream_end <= ends.get((run.topic, run.partition), 0)]
            for reported in landed:
                where = (reported.topic, reported.partition)
                recopied[where] = recopied.get(where, 0) + reported.run.count
            log.warning("flow %s: batch %d wrote %d record(s) of %s while its remote topic was being re-created; %d "
                        "of them into the new topic, which the refill copies again (counted in "
                        "mirrorspark_records_recopied_total), the others into the deleted one", self.flow.name,
                        batch_id, sum(run.run.count for run in late_runs),
                        ", ".join(sorted({source_of.get(run.topic, run.topic) for run in late_runs})),
                        sum(run.run.count for run in landed))
        figures = jvm.drain_figures(self.flow.name)
        for row in figures.resumed:
            recopied[(row.topic, row.partition)] = recopied.get((row.topic, row.partition), 0) + row.recopied
            log.info("flow %s: batch %d resumed %s[%s]: %s record(s) already on the target were not sent "
                     "again, %s written again", self.flow.name, batch_id, row.topic, row.partition, row.resumed,
                     row.recopied)
        twice = {where: n for where, n in recopied.items() if n > 0}
        if twice:  # said where an operator looks, not only in a metric a restart resets
            log.warning("flow %s: batch %d: %d record(s) copied twice (written again after an interrupted attempt; "
                        "counted in mirrorspark_records_recopied_total): %s", self.flow.name, batch_id,
                        sum(twice.values()), ", ".join(f"{t}[{p}]: {n}" for (t, p), n in sorted(twice.items())))
        unresolved = {(row.topic, row.partition): row.records for row in figures.unresolved}
        if unresolved:  # mirrorspark.schemas.unresolved = copy: never silent (ADR 0028)
            log.warning("flow %s: batch %d: %d record(s) copied with a schema id neither registry knows, unchanged "
                        "(mirrorspark.schemas.unresolved = copy; counted in "
                        "mirrorspark_schema_unresolved_records_total): %s", self.flow.name, batch_id,
                        sum(unresolved.values()),
                        ", ".join(f"{t}[{p}]: {n}" for (t, p), n in sorted(unresolved.items())))
        if self.metrics is not None:
            self.metrics.batch_written(figures.stats, recopied, unresolved)

    def sink_options_for(self, plan: TopicPlan) -> Mapping[str, str]:
        """The sink's options for a batch of ``plan``: each source topic's remote topic (the sink
        renames; rows of topics the plan does not copy are skipped there). The producer takes records
        as large as the source topics allow (their max.message.bytes, which config sync gives the
        remote topics): Kafka's default max.request.size (1 MiB) would fail every batch holding a
        larger one. A max.request.size the user set is kept."""
        options = {**self.sink_options, "remoteTopics": remote_topics_option(plan.remote)}
        if self.schemas is not None:
            options["schemaIds"] = self.schemas.option()
            options["schemaTopics"] = self.schemas.topics_option(plan.remote)
        configs = self.remote_topics.configs
        if configs is None or "kafka.max.request.size" in self.sink_options:
            return options
        needed = configs.largest_message(sorted(plan.remote)) + RECORD_OVERHEAD
        if needed > DEFAULT_MAX_REQUEST:
            options["kafka.max.request.size"] = str(needed)
        return options

    def _plan_for(self, batch_id: int, ends: Mapping[Partition, int]) -> TopicPlan:
        """The topic plan, checked against the partitions Spark put in this batch (its offset log) so
        a record is never dropped just because its topic or partition appeared after the last refresh.
        The plan of the last refresh serves while it covers the batch: reading the source's topics in
        every batch cost a metadata round trip and per-partition Python work (thousands of partitions)."""
        counts: dict[str, int] = {}
        for topic, partition in ends:
            counts[topic] = max(counts.get(topic, 0), partition + 1)
        plan = self.remote_topics.plan
        if any(plan.partitions.get(topic, 0) < count for topic, count in counts.items()
               if topic in plan.remote or self.selection.should_replicate(topic)):
            plan = self.remote_topics.refresh()
        missing = {t for t in set(counts) - set(plan.remote) if self.selection.should_replicate(t)}
        if missing:
            plan = self.remote_topics.refresh(force_target_check=True)
            missing -= set(plan.remote)
            if missing:
                raise OperationalError(f"flow {self.flow.name}: batch {batch_id} reads {sorted(missing)}, which has no "
                                       "remote topic yet; the batch is retried on restart")
        return plan
