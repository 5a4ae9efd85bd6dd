"""A batch that wrote while its remote topic was deleted and re-created (the refill planned meanwhile): its
runs reach neither the offset mapping nor the marks the refill starts again from, and only what landed in
the new topic is counted as copied twice (the fifth soak hour: the old topic's offsets in the marks made the
new topic look truncated, 35,880 records reported lost, and the refill look copied twice, 49,704)."""
from __future__ import annotations

from types import SimpleNamespace

from mirrorspark.integrity.batch_guard import BatchGuard
from mirrorspark.integrity.loss import LossLog
from mirrorspark.integrity.write_marks import WriteMarks
from mirrorspark.pipeline.batch_writer import BatchWriter
from mirrorspark.sink_report import BatchReport, WrittenRun
from mirrorspark.state.files import LocalFiles


def test_runs_written_while_the_remote_topic_was_recreated_are_not_recorded(tmp_path):
    files = LocalFiles(tmp_path)
    marks = WriteMarks(files)
    marks.reset_target("a.t", {0: 2, 1: 0})  # the identity check's reset: the new topic's ends
    guard = BatchGuard(flow_name="a->b", marks=marks, loss=LossLog(files, "a->b"),
                       source_starts=lambda keys: {k: 0 for k in keys},
                       target_ends=lambda keys: {("a.t", 0): 2, ("a.t", 1): 0},
                       fail_on_loss=False, rewinds_pending=lambda: {"t"})
    mapped: list = []
    counted: list = []
    writer = BatchWriter(flow=SimpleNamespace(name="a->b"), selection=None, remote_topics=None,  # type: ignore[arg-type]
                         spark_log=None, guard=guard, sink_options={},  # type: ignore[arg-type]
                         on_written=lambda runs, source_of: mapped.extend(runs),
                         metrics=SimpleNamespace(batch_written=lambda stats, recopied, _: counted.append(recopied)),  # type: ignore[arg-type]
                         takeover={})
    runs = (WrittenRun.of("a.t", 0, 500, 0, 2),          # into the new topic: the refill copies it again
            WrittenRun.of("a.t", 1, 500, 17_940, 2),     # into the deleted one: gone with it
            WrittenRun.of("a.u", 0, 7, 7, 3))            # another topic's: recorded as ever
    jvm = SimpleNamespace(drain_written=lambda name: BatchReport(runs=runs),
                          drain_figures=lambda name: SimpleNamespace(resumed=(), stats=(), unresolved=()))
    plan = SimpleNamespace(remote={"t": "a.t", "u": "a.u"}, source_of={"a.t": "t", "a.u": "u"})
    writer._record(jvm, 4, "p", plan, lambda report: ({}, {}))  # type: ignore[arg-type]
    assert mapped == [runs[2]], "the refill writes the mapping of the new topic"
    assert marks.written_to(["a.t"]) == {"a.t": {0: 2, 1: 0}}, "the marks stay the new topic's"
    assert counted == [{("a.t", 0): 2}]
