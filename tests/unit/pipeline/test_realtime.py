"""Real-time mode's decisions without Spark: task slots, the slot rule, the assignment."""
from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

import pytest

from mirrorspark.control.remote_topics import TopicPlan
from mirrorspark.errors import ConfigError
from mirrorspark.pipeline import realtime
from mirrorspark.pipeline.realtime import SlotBook, assignment, task_slots


class Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class Context:
    defaultParallelism = 6


class Session:
    def __init__(self, **conf: str) -> None:
        self.conf = Conf(conf)
        self.sparkContext = Context()


@pytest.mark.parametrize(("master", "slots"), [("local", 1), ("local[8]", 8), ("local[12, 3]", 12),
                                               ("spark://h:7077", 6)])
def test_task_slots_follow_the_master(master, slots):
    assert task_slots(Session(), master)[0] == slots


def test_task_slots_divide_by_cpus_per_task():
    assert task_slots(Session(**{"spark.task.cpus": "2"}), "local[8]") == (4, "spark.master = local[8]")


WHERE = ("mirrorspark.trigger", "mirrorspark.realtime.tasks")


def test_the_slot_rule_counts_tasks_and_other_flows_and_names_what_to_change():
    book = SlotBook(realtime_flows=2, microbatch_flows=1)
    book.hold("B->A", 1)  # a micro-batch flow needs one
    tasks = book.claim("A->B", where=WHERE, partitions={"orders": 4, "heartbeats": 1}, wanted=4, slots=6,
                       how="spark.master = local[6]")
    assert tasks == 4
    with pytest.raises(ConfigError) as refused:
        book.claim("A->C", where=("A->C.mirrorspark.trigger", "A->C.mirrorspark.realtime.tasks"),
                   partitions={"orders": 4}, wanted=2, slots=6, how="spark.master = local[6]")
    assert refused.value.key == "A->C.mirrorspark.realtime.tasks"
    message = str(refused.value)
    assert "runs 2 long task(s) (A->C.mirrorspark.realtime.tasks = 2) for its 4 partition(s) (orders: 4)" in message
    assert "other flows of this process hold 5" in message
    assert "local[7]" in message and "set A->C.mirrorspark.realtime.tasks = 1 (each task then reads about 4" in message
    book.release("A->B")
    assert book.claim("A->C", where=WHERE, partitions={"orders": 4}, wanted=2, slots=6, how="") == 2


def test_the_default_task_count_shares_the_slots_micro_batch_flows_leave():
    book = SlotBook(realtime_flows=2, microbatch_flows=1)
    assert book.claim("A->B", where=WHERE, partitions={"t": 3000}, wanted=0, slots=5, how="") == 2
    one = book.claim("A->B", where=WHERE, partitions={"t": 1}, wanted=0, slots=5, how="")
    assert one == 1, "never more tasks than partitions"
    alone = SlotBook(realtime_flows=1)
    assert alone.claim("A->B", where=WHERE, partitions={"t": 10000}, wanted=0, slots=2, how="") == 2


def test_no_free_slot_at_all_names_the_trigger():
    book = SlotBook(realtime_flows=1, microbatch_flows=2)
    book.hold("m1", 1)
    book.hold("m2", 1)
    with pytest.raises(ConfigError) as refused:
        book.claim("A->B", where=WHERE, partitions={"t": 4}, wanted=0, slots=2, how="")
    assert refused.value.key == "mirrorspark.trigger"
    assert "or set mirrorspark.trigger = microbatch" in str(refused.value)


def test_a_flow_claiming_again_replaces_its_own_slots():
    book = SlotBook()
    book.claim("A->B", where=WHERE, partitions={"t": 5}, wanted=5, slots=6, how="")
    # a restart after a partition was added
    assert book.claim("A->B", where=WHERE, partitions={"t": 6}, wanted=6, slots=6, how="") == 6


def test_assignment_lists_the_planned_partitions_only():
    plan = TopicPlan({"orders": "A.orders", "empty": "A.empty"}, {"orders": 3, "empty": 0, "other": 2})
    text, partitions = assignment(plan)
    assert partitions == {"orders": 3}
    assert text == '{"orders": [0, 1, 2]}'


class _Guard:
    """What ``skip_removed`` reads of a BatchGuard: the source's log starts and the loss log."""

    def __init__(self, starts: dict, fail: bool = False, marks: dict | None = None,
                 target_marks: dict | None = None, target_ends: dict | None = None) -> None:
        self.flow_name, self.fail_on_loss, self._starts = "a->b", fail, starts
        self.reported: list[tuple] = []
        self.loss = self
        self.marks = self
        self._marks = marks or {}
        self.target_marks = dict(target_marks or {})  # remote partition -> where the last recorded batch ended
        self._target_ends = target_ends or {}

    def starts_of(self, batch_id, planned, targets):
        return {t: self.target_marks[t] for t in targets if t in self.target_marks}

    def target_ends(self, parts):
        return {p: self._target_ends[p] for p in parts if p in self._target_ends}

    def reset_target(self, topic, ends):
        self.target_marks.update({(topic, p): e for p, e in ends.items()})

    def source_marks(self, topic):
        return {p: o for (t, p), o in self._marks.items() if t == topic}

    def source_starts(self, keys):
        return {k: self._starts[k] for k in keys if k in self._starts}

    def report(self, topic, partition, first, last, reason):
        self.reported.append((topic, partition, first, last))


def _checkpoint(tmp_path, positions: dict) -> None:
    import json as json_
    (tmp_path / "offsets").mkdir()
    (tmp_path / "commits").mkdir()
    (tmp_path / "offsets" / "0").write_text("v1\n{}\n" + json_.dumps(positions))
    (tmp_path / "commits" / "0").write_text("v1\n{}")


def test_a_real_time_restart_below_the_sources_log_start_moves_up_to_it_and_reports_the_gap(tmp_path):
    """Spark's real-time Kafka reader fails every attempt on a removed position (no failOnDataLoss skip)."""
    from mirrorspark.integrity.spark_offsets import SparkOffsetLog
    from mirrorspark.state.files import LocalFiles

    _checkpoint(tmp_path, {"t": {"0": 1956, "1": 700}})
    guard = _Guard({("t", 0): 5052, ("t", 1): 10})
    spark_log = SparkOffsetLog(LocalFiles(tmp_path))
    assert realtime.skip_removed(guard, spark_log, None) is None  # type: ignore[arg-type]
    assert guard.reported == [("t", 0, 1956, 5051)]
    assert spark_log.committed_positions() == {("t", 0): 5052, ("t", 1): 700}


def test_a_first_real_time_start_below_the_log_start_moves_its_starting_offsets(tmp_path):
    from mirrorspark.integrity.spark_offsets import SparkOffsetLog
    from mirrorspark.state.files import LocalFiles

    guard = _Guard({("t", 0): 40})
    moved = realtime.skip_removed(guard, SparkOffsetLog(LocalFiles(tmp_path)), '{"t": {"0": 28, "1": -2}}')  # type: ignore[arg-type]
    assert moved is not None and json.loads(moved) == {"t": {"0": 40, "1": -2}} and guard.reported == [("t", 0, 28, 39)]


def test_with_data_loss_fail_a_removed_position_stops_the_flow_and_is_counted(tmp_path):
    from mirrorspark.integrity.batch_guard import DataLossStop
    from mirrorspark.integrity.spark_offsets import SparkOffsetLog
    from mirrorspark.state.files import LocalFiles

    _checkpoint(tmp_path, {"t": {"0": 5}})
    guard = _Guard({("t", 0): 9}, fail=True)
    with pytest.raises(DataLossStop, match=r"mirrorspark\.data\.loss = fail"):
        realtime.skip_removed(guard, SparkOffsetLog(LocalFiles(tmp_path)), None)  # type: ignore[arg-type]
    assert guard.reported == [("t", 0, 5, 8)]  # counted, as a micro-batch's gap is


def test_what_an_interrupted_epoch_copied_past_sparks_commit_is_not_reported_lost(tmp_path):
    from mirrorspark.integrity.spark_offsets import SparkOffsetLog
    from mirrorspark.state.files import LocalFiles

    _checkpoint(tmp_path, {"t": {"0": 100}})
    guard = _Guard({("t", 0): 500}, marks={("t", 0): 300})  # the marks: copied up to 299
    spark_log = SparkOffsetLog(LocalFiles(tmp_path))
    realtime.skip_removed(guard, spark_log, None)  # type: ignore[arg-type]
    assert guard.reported == [("t", 0, 300, 499)] and spark_log.committed_positions() == {("t", 0): 500}


def test_what_an_interrupted_run_copied_of_the_removed_offsets_is_neither_lost_nor_compared_again(tmp_path):
    """The fault soak: a real-time run wrote 144 records past the last recorded batch, then retention removed
    offsets up to 1755 below Spark's position 840: 840..983 are on the target, 984..1754 are lost. Before,
    all of 840..1754 were reported lost and the 144 counted as copied twice when the re-run (from 1755)
    did not match them."""
    from mirrorspark.integrity.spark_offsets import SparkOffsetLog
    from mirrorspark.state.files import LocalFiles

    _checkpoint(tmp_path, {"t": {"0": 840, "1": 900}})
    guard = _Guard({("t", 0): 1755, ("t", 1): 10}, target_marks={("a.t", 0): 5000, ("a.t", 1): 7000},
                   target_ends={("a.t", 0): 5144, ("a.t", 1): 7000})
    spark_log = SparkOffsetLog(LocalFiles(tmp_path))
    realtime.skip_removed(guard, spark_log, None, {"t": "a.t"})  # type: ignore[arg-type]
    assert guard.reported == [("t", 0, 984, 1754)]
    assert guard.target_marks == {("a.t", 0): 5144, ("a.t", 1): 7000}  # the 144 are not compared with the re-run
    assert spark_log.committed_positions() == {("t", 0): 1755, ("t", 1): 900}


def test_an_interrupted_run_that_copied_past_the_new_log_start_is_compared_from_there(tmp_path):
    """Offsets up to 900 removed below Spark's position 840; the interrupted run wrote 144 (840..983): the
    first 60 are copies of removed offsets (none lost), the re-run from 900 is compared from the 61st."""
    from mirrorspark.integrity.spark_offsets import SparkOffsetLog
    from mirrorspark.state.files import LocalFiles

    _checkpoint(tmp_path, {"t": {"0": 840}})
    guard = _Guard({("t", 0): 900}, target_marks={("a.t", 0): 5000}, target_ends={("a.t", 0): 5144})
    realtime.skip_removed(guard, SparkOffsetLog(LocalFiles(tmp_path)), None, {"t": "a.t"})  # type: ignore[arg-type]
    assert guard.reported == [] and guard.target_marks == {("a.t", 0): 5060}


def test_with_data_loss_fail_the_interrupted_runs_copies_stay_to_be_found_again(tmp_path):
    from mirrorspark.integrity.batch_guard import DataLossStop
    from mirrorspark.integrity.spark_offsets import SparkOffsetLog
    from mirrorspark.state.files import LocalFiles

    _checkpoint(tmp_path, {"t": {"0": 840}})
    guard = _Guard({("t", 0): 1755}, fail=True, target_marks={("a.t", 0): 5000}, target_ends={("a.t", 0): 5144})
    with pytest.raises(DataLossStop, match=r"984\.\.1754"):
        realtime.skip_removed(guard, SparkOffsetLog(LocalFiles(tmp_path)), None, {"t": "a.t"})  # type: ignore[arg-type]
    assert guard.target_marks == {("a.t", 0): 5000}  # a later start (data.loss = report) counts the same


def test_a_restart_before_any_recorded_batch_checks_the_kept_first_positions(tmp_path):
    """The drill: a first real-time run copied everything in its first batch, its remote topic was deleted
    before that batch was recorded, and the source lost its first 100 offsets per partition meanwhile. The
    restart has no committed batch and no explicit positions: the source reads from what its first start
    kept (0), which the reader moved past without a word (200 records neither copied nor counted). The
    kept positions are now checked as a first start's are, and moved in the kept file."""
    from mirrorspark.integrity.spark_offsets import KEPT_START, SparkOffsetLog
    from mirrorspark.state.files import LocalFiles

    (tmp_path / "sources" / "0").mkdir(parents=True)
    kept = tmp_path / "sources" / "0" / KEPT_START
    kept.write_text('{"heartbeats":{"0":0},"t":{"0":0,"1":0}}')
    guard = _Guard({("t", 0): 100, ("t", 1): 100, ("heartbeats", 0): 0},
                   target_marks={("a.t", 0): 0, ("a.t", 1): 0}, target_ends={("a.t", 0): 0, ("a.t", 1): 0})
    spark_log = SparkOffsetLog(LocalFiles(tmp_path))
    assert realtime.skip_removed(guard, spark_log, None, {"t": "a.t"}) is None  # type: ignore[arg-type]
    assert guard.reported == [("t", 0, 0, 99), ("t", 1, 0, 99)]
    assert json.loads(kept.read_text()) == {"heartbeats": {"0": 0}, "t": {"0": 100, "1": 100}}
    guard.reported.clear()
    realtime.skip_removed(guard, spark_log, None, {"t": "a.t"})  # type: ignore[arg-type]
    assert guard.reported == []  # reported once
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / "0").write_text("v1\n{}\n{\"t\":{\"0\":100,\"1\":100}}")
    assert spark_log.kept_first_positions() == {}  # a batch planned: Spark's log says where it starts


class _Tracker:
    """Spark's status tracker for one run whose jobs 1-3 are known; stage 30 of job 3 runs ``running``
    tasks at each look in turn."""

    def __init__(self, running: list[int]) -> None:
        self.running = running
        self.looks = 0

    def getJobIdsForGroup(self, group):
        return [3, 1, 2] if group == "run" else []

    def getJobInfo(self, job):
        return SimpleNamespace(stageIds=[job * 10])

    def getStageInfo(self, stage):
        if stage != 30:
            return SimpleNamespace(numActiveTasks=0)
        self.looks += 1
        return SimpleNamespace(numActiveTasks=self.running[min(self.looks, len(self.running)) - 1])


def test_a_stopped_querys_restart_waits_until_its_cancelled_tasks_have_ended():
    tracker = _Tracker(running=[2, 1, 0])
    assert realtime.await_tasks_ended(tracker, "run", limit=5, pause=0)
    assert tracker.looks == 3


def test_tasks_still_running_at_the_limit_are_said_so():
    tracker = _Tracker(running=[1])
    assert not realtime.await_tasks_ended(tracker, "run", limit=0.05, pause=0.01)
    assert realtime.await_tasks_ended(None, "run", limit=0)  # never started: nothing to wait for


class _EpochJvm:
    """The sink's side of real-time batches: a batch commits once the readers were told to end it."""

    def __init__(self) -> None:
        self.ending: list[bool] = []
        self.taken: list[int] = []
        self._next = 0
        self._woken = threading.Event()

    def reset_epochs(self, flow):
        self._woken.clear()

    def end_realtime_batches(self, flow, ending=True):
        self.ending.append(ending)

    def await_epoch(self, flow, wait_ms):
        time.sleep(0.01)
        if self.ending and self.ending[-1]:  # the readers ended the batch in flight: it commits
            self._next += 1
            return self._next - 1
        self._woken.wait(wait_ms / 1000)  # the JVM's wait: none due until its end, or a wake
        self._woken.clear()
        return -1

    def wake_epochs(self, flow):
        self._woken.set()

    def epoch_taken(self, flow, epoch):
        self.taken.append(epoch)


def test_a_stop_ends_the_real_time_batch_in_flight_and_waits_until_it_is_recorded():
    """A real-time batch cut off by a stop was not recorded: a flow's first batch left copies on the
    target that the next start could not place (ADR 0027 section 17)."""
    jvm = _EpochJvm()
    recorded: list[int] = []
    writer = SimpleNamespace(record_epoch=lambda _jvm, epoch: recorded.append(epoch))
    recorder = realtime.EpochRecorder(writer, jvm, "a->b")
    recorder.start()
    try:
        assert jvm.ending == [False], "a new query reads its batches to their deadline"
        assert recorder.end_batch(limit=5) == 0
        assert recorded[:1] == [0] and jvm.taken[:1] == [0] and jvm.ending[:2] == [False, True]
    finally:
        recorder.stop()


def test_a_batch_that_does_not_end_in_time_is_left_to_the_stop():
    jvm = _EpochJvm()
    jvm.await_epoch = lambda flow, wait_ms: (time.sleep(0.01), -1)[1]  # executors elsewhere read to the deadline
    recorder = realtime.EpochRecorder(SimpleNamespace(record_epoch=lambda _jvm, epoch: None), jvm, "a->b")
    recorder.start()
    try:
        assert recorder.end_batch(limit=0.1) is None
    finally:
        recorder.stop()


def test_an_idle_recorder_waits_long_and_its_stop_wakes_it():
    """Each wait is a py4j call into the driver JVM; an idle flow made two a second. The recorder
    waits seconds, and its stop does not wait for the wait's end."""
    jvm = _EpochJvm()
    waits: list[int] = []
    ask = jvm.await_epoch
    jvm.await_epoch = lambda flow, wait_ms: (waits.append(wait_ms), ask(flow, wait_ms))[1]
    recorder = realtime.EpochRecorder(SimpleNamespace(record_epoch=lambda _jvm, epoch: None), jvm, "a->b")
    recorder.start()
    time.sleep(0.3)
    started = time.monotonic()
    recorder.stop()
    assert time.monotonic() - started < 1.0
    assert not recorder._thread.is_alive()
    assert waits and min(waits) >= 5_000 and len(waits) <= 2
