"""A lost range counts once, whichever path sees it first (the REST total and the Prometheus counter
must agree): a topic-identity check retried after it failed half-way, the batch's source check and
the identity check on overlapping ranges, and two threads reporting one range at the same time."""
from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException

from mirrorspark.integrity import loss as loss_module
from mirrorspark.integrity import topic_identity
from mirrorspark.integrity.batch_guard import BatchGuard
from mirrorspark.integrity.loss import LossLog, LossReport, Span, load, uncovered
from mirrorspark.integrity.spark_offsets import SparkOffsetLog
from mirrorspark.integrity.topic_identity import TopicIdentity
from mirrorspark.integrity.write_marks import WriteMarks
from mirrorspark.sink_report import WrittenRun
from mirrorspark.state.files import LocalFiles


class Mapping:
    def forget_topic(self, topic: str) -> None: ...

    def bind_remote(self, topic, remote, partitions, starts) -> None: ...

    def truncate_remote(self, topic, partition, end) -> None: ...

    def first_upstream(self, topic, partition) -> int | None:
        return None  # offset syncs off: the write marks tell what the old remote topic held


def counted(log: LossLog) -> Counter:
    """What the metric listener saw, per (topic, partition)."""
    seen: Counter = Counter()
    log.listeners.append(lambda r: seen.update({(r.topic, r.partition): r.records}))
    return seen


def identity(tmp_path: Path, remote_ids: dict[str, str], written: int) -> tuple[TopicIdentity, LossLog]:
    files = LocalFiles(tmp_path)
    files.write("topic-ids.json", json.dumps({"source": {"t": "S"}, "remote": remote_ids}))
    marks = WriteMarks(files)
    marks.batch_written(0, "p", [WrittenRun.of("a.t", p, 0, 0, written) for p in (0, 1)], {"a.t": "t"})
    loss = LossLog(files, "a->b")
    (tmp_path / "checkpoint").mkdir()
    return TopicIdentity(files=files, flow_name="a->b", source=None, target=None,  # type: ignore[arg-type]
                         loss=loss, marks=marks, spark_log=SparkOffsetLog(LocalFiles(tmp_path / "checkpoint")),
                         mapping=Mapping()), loss


def test_a_remote_topic_recreation_seen_again_after_a_failed_check_counts_once(tmp_path, monkeypatch):
    """The drill's failure: the check reports the deleted remote topic, then reading the new topic's
    ends fails (its leader not elected yet, a timeout on a loaded machine); the next round sees the
    same old id again and reported the same records a second time. The refill restores what the
    source still has; the 100 per partition retention removed from it are lost, counted once."""
    ident, loss = identity(tmp_path, {"a.t": "X"}, 300)
    seen = counted(loss)
    ends_fail = [True]

    def partition_offsets(admin, parts, earliest=False, **_):
        if admin == "target" and not earliest and ends_fail and any(t == "a.t" for t, _ in parts):
            ends_fail.clear()
            raise KafkaException(KafkaError(KafkaError.LEADER_NOT_AVAILABLE))
        return {p: 100 if admin == "source" and earliest else 0 for p in parts}

    monkeypatch.setattr(topic_identity, "topic_ids", lambda admin, topics: {"t": "S"} if admin == "source"
                        else {"a.t": "Y"})
    monkeypatch.setattr(topic_identity, "topic_layout", lambda admin, topics: {"a.t": ("Y", {0: 1, 1: 1})})
    monkeypatch.setattr(topic_identity, "partition_offsets", partition_offsets)
    ident.source, ident.target = "source", "target"  # type: ignore[assignment]
    with pytest.raises(KafkaException):
        ident.check({"t": "a.t"}, {"t": 2})
    assert ident.check({"t": "a.t"}, {"t": 2})  # a refill: the query restarts from the source's log start
    ident.check({"t": "a.t"}, {"t": 2})
    assert seen == {("t", 0): 100, ("t", 1): 100}
    assert loss.total() == 200 and len(load(LocalFiles(tmp_path))) == 2
    assert ident.rewinds == {"t": {0: 100, 1: 100}}


def test_a_truncation_then_the_recreation_of_one_remote_partition_counts_once(tmp_path, monkeypatch):
    """A check that read the old id while the topic was being re-created sees the partition's end go
    back to 0 (a truncation of the old topic), a later one the new id: one loss, counted once."""
    ident, loss = identity(tmp_path, {"a.t": "X"}, 300)
    seen = counted(loss)
    ids = iter(["X", "Y", "Y"])
    monkeypatch.setattr(topic_identity, "topic_ids", lambda admin, topics: {"t": "S"})
    monkeypatch.setattr(topic_identity, "topic_layout", lambda admin, topics: {"a.t": (next(ids), {0: 1, 1: 1})})
    monkeypatch.setattr(topic_identity, "partition_offsets", lambda admin, parts, **_: {p: 0 for p in parts})
    ident.source, ident.target = "source", "target"  # type: ignore[assignment]
    for _ in range(3):
        ident.check({"t": "a.t"}, {"t": 2})
    assert seen == {("t", 0): 300, ("t", 1): 300}


def test_the_batch_check_and_a_source_recreation_on_overlapping_ranges_count_each_offset_once(tmp_path):
    files = LocalFiles(tmp_path)
    loss = LossLog(files, "a->b")
    seen = counted(loss)
    guard = BatchGuard(flow_name="a->b", marks=WriteMarks(files), loss=loss,
                       source_starts=lambda parts: {p: 40 for p in parts},
                       target_ends=lambda parts: {p: 0 for p in parts}, fail_on_loss=False)
    guard.after_write({("t", 0): 10}, {("t", 0): 100}, {"t": "r"}, {("r", 0): 40})  # 10..39 gone
    loss.report("t", 0, 10, 59, "the source topic was deleted and re-created")   # 10..59 not copied
    loss.report("t", 0, 20, 29, "seen again by a re-run batch")
    assert seen == {("t", 0): 50} and loss.total() == 50
    assert [r.records for r in load(files)] == [30, 20]


def test_a_loss_in_a_recreated_source_topic_is_not_taken_for_the_old_topics_seen_again(tmp_path):
    """Offsets start at 0 again in a re-created topic: a range lost there is another log's."""
    ids = {"t": "old-id"}
    loss = LossLog(LocalFiles(tmp_path), "a->b", source_id=ids.get)
    seen = counted(loss)
    loss.report("t", 0, 0, 99, "the source topic was deleted and re-created before these records were copied")
    ids["t"] = "new-id"  # the identity check saw the new topic
    loss.report("t", 0, 40, 59, "retention")  # the new topic's records 40..59, removed unread
    loss.report("t", 0, 50, 59, "seen again by a re-run batch")
    assert seen == {("t", 0): 120} and loss.total() == 120
    assert [r.log for r in load(LocalFiles(tmp_path))] == ["source t@old-id", "source t@new-id"]


def test_a_loss_reported_before_spans_named_the_generation_is_not_counted_again(tmp_path):
    files = LocalFiles(tmp_path)
    files.write("data-loss.json", json.dumps([{  # written by an older version: the topic name alone
        "flow": "a->b", "topic": "t", "partition": 0, "first": 0, "last": 99, "records": 100, "reason": "retention",
        "time": 0.0, "log": "source t", "start": 0, "end": 100}]))
    loss = LossLog(files, "a->b", source_id={"t": "id-1"}.get)
    assert loss.report("t", 0, 50, 149, "retention, seen again after the upgrade").records == 50
    assert loss.total() == 150


def test_two_threads_reporting_one_range_at_once_count_it_once(tmp_path, monkeypatch):
    loss = LossLog(LocalFiles(tmp_path), "a->b")
    seen = counted(loss)
    inside, release = threading.Event(), threading.Event()
    real_error = loss_module.log.error

    def slow_error(*args, **kwargs):  # the first reporter pauses in its log line
        if not inside.is_set():
            inside.set()
            release.wait(2)
        real_error(*args, **kwargs)

    monkeypatch.setattr(loss_module.log, "error", slow_error)
    first = threading.Thread(target=loss.report, args=("t", 0, 0, 99, "retention"))
    first.start()
    assert inside.wait(2)
    loss.report("t", 0, 0, 99, "retention")  # the other thread, meanwhile
    release.set()
    first.join(5)
    assert seen == {("t", 0): 100} and loss.total() == 100


def test_uncovered_offsets_and_reports_without_a_span():
    assert uncovered(Span("l", 0, 10), [Span("l", 2, 4), Span("l", 8, 20)]) == 6
    assert uncovered(Span("l", 0, 10), []) == 10 and uncovered(Span("l", 0, 10), [Span("l", 0, 10)]) == 0
    assert LossReport("a->b", "t", 0, -1, -1, 5, "remote topic deleted", 0.0).span() is None


def test_the_checkpoint_rounds_check_asks_for_the_ends_of_partitions_whose_leader_changed_only(tmp_path, monkeypatch):
    """Thousands of quiet partitions: the round's check reads ids and leaders; a remote partition's
    end is read again only when its leader changed (what an unclean election does), every one on a
    full check (the topic refresh). The source's ends come from the lag probe between full checks,
    and a re-created source topic's loss is counted up to them."""
    ident, loss = identity(tmp_path, {"a.t": "X"}, 300)
    asked: list[tuple[str, list]] = []
    leaders = {0: 1, 1: 1}
    source_id = ["S"]

    def partition_offsets(admin, parts, earliest=False, **_):
        asked.append((admin, sorted(parts)))
        return {p: (0 if earliest else 300) for p in parts}

    monkeypatch.setattr(topic_identity, "topic_ids", lambda admin, topics: {"t": source_id[0]})
    monkeypatch.setattr(topic_identity, "topic_layout", lambda admin, topics: {"a.t": ("X", dict(leaders))})
    monkeypatch.setattr(topic_identity, "partition_offsets", partition_offsets)
    ident.source, ident.target = "source", "target"  # type: ignore[assignment]
    ident.check({"t": "a.t"}, {"t": 2}, full=False)
    assert asked == [("target", [("a.t", 0), ("a.t", 1)])]  # first sight: every leader is new
    asked.clear()
    ident.check({"t": "a.t"}, {"t": 2}, full=False)
    assert asked == []
    leaders[1] = 2
    ident.check({"t": "a.t"}, {"t": 2}, full=False)
    assert asked == [("target", [("a.t", 1)])]
    asked.clear()
    ident.check({"t": "a.t"}, {"t": 2})
    assert asked == [("target", [("a.t", 0), ("a.t", 1)]), ("source", [("t", 0), ("t", 1)])]
    ident.note_source_ends({("t", 0): 350, ("t", 1): 340})
    seen = counted(loss)
    source_id[0] = "S2"
    assert ident.check({"t": "a.t"}, {"t": 2}, full=False)  # re-created: read again from its beginning
    # the write marks' 300 per partition were copied: the rest up to the probe's ends is lost
    assert seen == {("t", 0): 50, ("t", 1): 40}
