"""Real-time mode (``mirrorspark.trigger = realtime``, docs/adr/0016-real-time-mode.md).

Spark's real-time trigger runs long tasks that forward each record as it arrives; mirrorspark's
grouped source implements Spark's real-time interfaces, so a task reads a group of the flow's
partitions with one consumer (docs/adr/0027-grouped-source-real-time.md). The query is that source ->
the rename as a column expression -> the MirrorSink as a streaming sink (Spark's allow-list of real-time sinks is
turned off for it: the plan is a filter and a projection, both on the operator allow-list). No
Python runs per batch on the record path: each real-time batch ends with one commit on the driver,
which waits while ``EpochRecorder`` makes the batch's offset pairs durable.

What this module decides: the task slots a real-time flow needs (refused with the numbers, never
partitions silently unread), where a restarted query resumes on the target, and the recorder.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from mirrorspark.config.trigger_choice import local_slots
from mirrorspark.control.remote_topics import TopicPlan
from mirrorspark.errors import ConfigError
from mirrorspark.integrity.batch_guard import GONE, BatchGuard, DataLossStop
from mirrorspark.integrity.spark_offsets import SparkOffsetLog
from mirrorspark.jvm_bridge import JvmError, SparkJvm
from mirrorspark.partition import Partition
from mirrorspark.pipeline.batch_writer import REALTIME_PLANNED, BatchWriter
from mirrorspark.sink_report import ResumeRange, resume_option

if TYPE_CHECKING:
    from pyspark import StatusTracker

log = logging.getLogger(__name__)

# Spark refuses sinks outside its fixed real-time list unless this is false (it then warns instead);
# the query mirrorspark builds is a Kafka scan, a filter and a projection: operators on the list.
ALLOWLIST_CHECK = "spark.sql.streaming.realTimeMode.allowlistCheck"
TRIGGER_KEY = "mirrorspark.trigger"
TASKS_KEY = "mirrorspark.realtime.tasks"
# How often a real-time flow lists its source's topics at most: as often as the micro-batch source does
# (its ``topicRefreshMs``); at least once a real-time batch, where the query can re-plan (ADR 0027 section 17).
TOPIC_WATCH_SECONDS = 5.0


def task_slots(spark, master: str) -> tuple[int, str]:
    """How many tasks the Spark application runs at once, and how that was found (for the message)."""
    cpus = max(1, int(spark.conf.get("spark.task.cpus", "1")))
    local = local_slots(master, cpus)
    if local is not None:
        return local, f"spark.master = {master.strip()}"
    cores = spark.sparkContext.defaultParallelism
    return max(1, cores // cpus), f"{cores} executor core(s) of spark.master = {master.strip()}"


class SlotBook:
    """Task slots the flows of this process need: a real-time flow one per task (a group of its
    partitions), a micro-batch flow one (its tasks queue behind long-running real-time tasks otherwise).
    ``realtime_flows`` and ``microbatch_flows``: how many of each the process runs, for the share a
    real-time flow takes when it does not set its task count."""

    def __init__(self, realtime_flows: int = 1, microbatch_flows: int = 0) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}
        self._realtime_flows = max(1, realtime_flows)
        self._microbatch_flows = max(0, microbatch_flows)

    def hold(self, flow: str, needed: int) -> None:
        with self._lock:
            self._held[flow] = needed

    def release(self, flow: str) -> None:
        with self._lock:
            self._held.pop(flow, None)

    def claim(self, flow: str, *, where: tuple[str, str], partitions: Mapping[str, int], wanted: int, slots: int,
              how: str) -> int:
        """Hold a slot per task for ``flow`` and say how many tasks it runs, or refuse with the numbers
        (``where``: the trigger and task-count keys as the user wrote them; ``wanted`` 0: a share)."""
        trigger, tasks_key = where
        total = sum(partitions.values())
        with self._lock:
            others = sum(n for name, n in self._held.items() if name != flow)
            share = max(1, (slots - self._microbatch_flows) // self._realtime_flows)
            tasks = max(1, min(total, wanted or share))
            if tasks + others > slots:
                free = slots - others
                shown = ", ".join(f"{t}: {n}" for t, n in sorted(partitions.items(), key=lambda kv: -kv[1])[:5])
                more = f" and {len(partitions) - 5} more topics" if len(partitions) > 5 else ""
                fix = (f"set {tasks_key} = {free} (each task then reads about {-(-total // free)} partition(s))"
                       if free >= 1 else f"set {trigger} = microbatch")
                raise ConfigError(
                    f"flow {flow}: {trigger} = realtime runs {tasks} long task(s) ({tasks_key} = {wanted}) for its "
                    f"{total} partition(s) ({shown}{more}), other flows of this process hold {others} slot(s), and "
                    f"the Spark application has {slots} task slot(s) ({how}); a task without a slot would never "
                    f"read. Give Spark at least {tasks + others} slots (spark.master = local[{tasks + others}] on one "
                    f"machine, more executor cores on a cluster), or {fix}", tasks_key if wanted else trigger)
            self._held[flow] = tasks
        return tasks


def await_tasks_ended(tracker: StatusTracker | None, group: str, limit: float, pause: float = 0.1) -> bool:
    """Waits until no task of the stopped query whose jobs share ``group`` (its run id) still runs; False
    when some still ran after ``limit`` seconds. Stopping a query cancels its tasks without waiting for
    them: a real-time task's transaction, committed by its ticker thread while a flush was waiting on a
    deleted remote topic, landed in the topic the restart re-created at once, before the refill copied
    the same record again (ADR 0027 section 16). Only the run's latest jobs can still have tasks."""
    if tracker is None:
        return True
    deadline = time.monotonic() + limit
    while True:
        running = 0
        for job in sorted(tracker.getJobIdsForGroup(group))[-2:]:
            info = tracker.getJobInfo(job)
            for stage in info.stageIds if info is not None else ():
                described = tracker.getStageInfo(stage)
                running += described.numActiveTasks if described is not None else 0
        if not running:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)


def assignment(plan: TopicPlan) -> tuple[str, dict[str, int]]:
    """Spark's ``assign`` option for the planned source topics and their partition counts: a partition
    added later is read after the topic refresh has created its remote partition and restarted the query."""
    partitions = {topic: plan.partitions.get(topic, 0) for topic in sorted(plan.remote)}
    partitions = {topic: count for topic, count in partitions.items() if count > 0}
    return json.dumps({topic: list(range(count)) for topic, count in partitions.items()}), partitions


def resume_point(guard: BatchGuard, spark_log: SparkOffsetLog, plan: TopicPlan) -> tuple[str, str]:
    """The sink's ``resume`` ranges for a (re)started real-time query, and where its writes begin on
    each target partition (``retryFrom`` lines).

    Spark replays from its last committed batch. Its writes may have gone further: the batch after it
    was recorded here but never committed by Spark (its target ends before it are the write marks'
    ``before``), or it was never recorded (the marks' ends). Target records past that point are compared
    with the replay's rows before anything is sent again, in as many real-time batches as the replay takes.
    A task attempt Spark runs again in the first batch (its executor lost) compares from that point too;
    later batches from where the committed ones ended (the sink's ``ResumeLedger``)."""
    committed = spark_log.last_committed()
    epoch = 0 if committed is None else committed + 1
    targets = sorted({(remote, p) for source, remote in plan.remote.items()
                      for p in range(plan.partitions.get(source, 0))})
    guard.learn_new_targets(targets)  # partitions never written by this flow: their ends, before anything is written
    marks = guard.marks.starts_of(epoch, REALTIME_PLANNED, targets)
    now = guard.target_ends(sorted(marks))
    ranges = [ResumeRange(topic, partition, begin, now[(topic, partition)])
              for (topic, partition), begin in sorted(marks.items()) if now.get((topic, partition), -1) > begin]
    if ranges:
        log.info("flow %s: real-time batch %d resumes an interrupted run: %d target record(s) written after the last "
                 "recorded batch are compared before anything is sent again", guard.flow_name, epoch,
                 sum(r.records for r in ranges))
    starts = "".join(f"{topic}\t{partition}\t{begin}\n" for (topic, partition), begin in sorted(marks.items()))
    return resume_option(ranges), starts


def _unrecorded_copies(guard: BatchGuard, epoch: int, remote: Mapping[str, str], positions: Mapping[Partition, int],
                       starts: Mapping[Partition, int]) -> tuple[dict[Partition, int], dict[str, dict[int, int]]]:
    """Per source partition whose resume position retention removed (``positions`` below ``starts``):
    how many of the removed offsets the interrupted run copied after the last recorded batch, and
    where the comparison of its writes with the re-run's rows must start instead (per remote topic
    and partition). That run read from Spark's position on, in order: its first records written
    past the write marks are copies of the first removed offsets (not lost), and the re-run, which
    starts at the log start, never sends them again, so they are not compared (every one would count
    as copied twice); what it wrote of the log start onwards still is. The remote partition must hold
    this flow's copies only (not a same-names topic). With gaps in the source's offsets (transaction
    markers, compaction) the loss is then counted at most."""
    targets = {(remote[t], p): (t, p) for t, p in positions if t in remote}
    marks = guard.marks.starts_of(epoch, REALTIME_PLANNED, sorted(targets))
    now = guard.target_ends(sorted(marks)) if marks else {}
    copied: dict[Partition, int] = {}
    compare_from: dict[str, dict[int, int]] = {}
    for target, begin in marks.items():
        source = targets[target]
        end = now.get(target, -1)
        if end > begin:
            removed = min(end - begin, starts[source] - positions[source])  # copies of removed offsets
            copied[source] = removed
            compare_from.setdefault(target[0], {})[target[1]] = begin + removed
    return copied, compare_from


def skip_removed(guard: BatchGuard, spark_log: SparkOffsetLog, starting: str | None,
                 remote: Mapping[str, str] | None = None) -> str | None:
    """Positions retention removed, moved up to the source's log start before a real-time query starts.

    Spark's real-time Kafka reader has no ``failOnDataLoss`` skip (micro-batches have one): a start
    below the log start fails every task attempt, and the flow could never run again. The records
    between are reported lost, once, by offsets; with ``mirrorspark.data.loss = fail`` the flow stops
    instead. Spark resumes from its last committed batch (rewound here), or on a first start from
    ``starting`` (Spark's JSON; returned adjusted). ``remote``: the plan's source -> remote topics,
    by which what an interrupted run copied of the removed offsets is found (not lost); None when the
    remote topics hold other writers' records too (same names)."""
    committed = spark_log.last_committed()
    kept = False  # the positions are what the query's first start kept (no batch recorded since)
    if committed is not None:
        positions = spark_log.committed_positions()
    elif starting:
        parsed = json.loads(starting)
        positions = {(t, int(p)): int(o) for t, parts in parsed.items() for p, o in parts.items()}
    else:  # a start that had read before it was stopped (or restarted) with no batch recorded
        positions, kept = spark_log.kept_first_positions(), True
    copied = dict(positions)  # an interrupted epoch may have copied past Spark's commit: not lost
    for topic in {t for t, _ in positions}:
        for partition, mark in guard.marks.source_marks(topic).items():
            if copied.get((topic, partition), -1) >= 0:
                copied[(topic, partition)] = max(copied[(topic, partition)], mark)
    known = sorted(k for k, o in positions.items() if o >= 0)  # -2/-1: earliest/latest, nothing to skip
    starts = guard.source_starts(known) if known else {}
    removed = [k for k in known if k in starts and positions[k] < starts[k]]
    compare_from: dict[str, dict[int, int]] = {}
    if removed and remote:
        epoch = 0 if committed is None else committed + 1
        tails, compare_from = _unrecorded_copies(guard, epoch, remote, {k: positions[k] for k in removed}, starts)
        for key, tail in tails.items():
            copied[key] = max(copied[key], positions[key] + tail)
    behind = {k: (min(copied[k], starts[k]), starts[k]) for k in removed}
    moved = {k: max(o, starts[k]) if k in behind else o for k, o in positions.items()}
    behind = {k: gap for k, gap in behind.items() if gap[0] < gap[1]}  # what is left to report
    if moved == positions:
        return starting
    lost = sum(start - at for at, start in behind.values())
    for (topic, partition), (at, start) in sorted(behind.items()):  # counted in either case, as a batch's gap
        guard.loss.report(topic, partition, at, start - 1, GONE)
    if guard.fail_on_loss and behind:
        gaps = ", ".join(f"{t}[{p}] {at}..{start - 1}" for (t, p), (at, start) in sorted(behind.items()))
        raise DataLossStop(f"flow {guard.flow_name}: {lost} source record(s) are gone before they were copied "
                           f"({gaps}) and mirrorspark.data.loss = fail; the flow is stopped before it copies past "
                           "the gap")
    if committed is not None:
        for topic in sorted({t for (t, p), o in moved.items() if o != positions[(t, p)]}):
            spark_log.rewind(topic, {p: o for (t, p), o in moved.items() if t == topic})
    # Last: until the loss is reported and the position moved, a restart finds the same tail again.
    for topic, marks in compare_from.items():
        guard.marks.reset_target(topic, marks)
    if committed is not None:
        return starting
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(moved.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    if kept:  # the source reads the kept file: moved there, the start stays without explicit positions
        spark_log.align_first_positions(json.dumps(out))
        return starting
    return json.dumps(out)


GivenUp = Callable[[dict[Partition, int]], None]


class EpochRecorder:
    """Driver thread of one real-time query: takes each batch's reports from the sink's commit, makes
    them durable (``BatchWriter.record_epoch``), and lets the commit go on; a failure refuses the
    commit, so Spark never commits a batch whose offset pairs were not recorded.

    Then ``after``, with the partitions the tasks gave up (``SparkJvm.take_drops``): a source topic
    re-created is handled there, once the batch's copies are recorded (what the old topic had copied
    is known whole), never in the middle of a batch that is still writing."""

    # One py4j call per wait: an idle flow made two a second at 500 ms. ``stop`` wakes the wait.
    WAIT_MS = 5_000

    def __init__(self, writer: BatchWriter, jvm: SparkJvm, flow: str, after: GivenUp | None = None) -> None:
        self.writer = writer
        self.jvm = jvm
        self.flow = flow
        self.after = after
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"realtime-{flow}", daemon=True)
        self._recorded = threading.Condition()
        self.count = 0  # batches recorded since the start
        self.last: int | None = None  # the last of them

    def start(self) -> None:
        self.jvm.reset_epochs(self.flow)
        self.jvm.end_realtime_batches(self.flow, ending=False)
        self._thread.start()

    def end_batch(self, limit: float) -> int | None:
        """Ends the batch in flight now instead of at its deadline (a stop): the readers in this JVM stop
        reading, the batch commits and is recorded here. Returns the batch recorded, None when none was
        within ``limit`` seconds (executors in JVMs of their own read on to the deadline)."""
        with self._recorded:
            seen = self.count
        self.jvm.end_realtime_batches(self.flow)
        deadline = time.monotonic() + limit
        with self._recorded:
            while self.count == seen and self._thread.is_alive():
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._recorded.wait(min(left, 0.5))
            return self.last if self.count > seen else None

    def stop(self) -> None:
        self._stop.set()
        try:
            self.jvm.wake_epochs(self.flow)
        except JvmError as exc:  # the gateway closed (process stopping): the wait ends with it
            log.debug("flow %s: real-time recorder not woken: %s", self.flow, exc)
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                epoch = self.jvm.await_epoch(self.flow, self.WAIT_MS)
            except JvmError as exc:  # the gateway closed (process stopping)
                log.debug("flow %s: real-time recorder stops: %s", self.flow, exc)
                return
            if epoch < 0:
                continue
            try:
                self.writer.record_epoch(self.jvm, epoch)
            except Exception as exc:  # noqa: BLE001 - refused: the batch is not committed and is replayed
                log.error("flow %s: real-time batch %d could not be recorded (%s); it is not committed", self.flow,
                          epoch, exc)
                self.jvm.refuse_epoch(self.flow, epoch, str(exc)[:500])
                continue
            if self.after is not None:
                try:
                    self.after(self.jvm.take_drops(self.flow))
                except Exception as exc:  # noqa: BLE001 - the partitions stay given up; the next batch asks again
                    log.warning("flow %s: the source topics' ids could not be checked after real-time batch %d: %s",
                                self.flow, epoch, exc)
            self.jvm.epoch_taken(self.flow, epoch)
            with self._recorded:
                self.count += 1
                self.last = epoch
                self._recorded.notify_all()
