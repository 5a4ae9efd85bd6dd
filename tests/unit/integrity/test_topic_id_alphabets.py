"""A topic id kept under librdkafka's clients and read again through Kafka's Java Admin, without a broker.

The two clients write the same 16 bytes in two base64 alphabets (librdkafka ``+`` and ``/``, Kafka ``-``
and ``_``, measured against a real broker in tests/integration/test_control_clients.py). 0.1.0 kept
librdkafka's text in its state; the Java clients became the default after it, so about half of an
upgraded flow's topics read as re-created: copied again from their start, their offset mapping started
over, a loss reported for each. Every id is now kept and compared as Kafka writes it."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from mirrorspark.integrity import topic_identity
from mirrorspark.integrity.loss import LossLog, LossReport
from mirrorspark.integrity.loss import load as load_losses
from mirrorspark.integrity.spark_offsets import SparkOffsetLog
from mirrorspark.integrity.topic_identity import TopicIdentity
from mirrorspark.integrity.write_marks import WriteMarks
from mirrorspark.offsets.ranges import Binding, OffsetRanges
from mirrorspark.partition import kafka_topic_id, kafka_topic_ref
from mirrorspark.sink_report import TopicIds, WrittenRun
from mirrorspark.state.files import LocalFiles

LIBRDKAFKA_SOURCE, KAFKA_SOURCE = "m0Xq8uhOQSC7G4PJtl+wdw", "m0Xq8uhOQSC7G4PJtl-wdw"
LIBRDKAFKA_REMOTE, KAFKA_REMOTE = "/7Xq8uhOQSC7G4PJtl+wdw", "_7Xq8uhOQSC7G4PJtl-wdw"


class Mapping:
    def __init__(self) -> None:
        self.bound: list[str] = []
        self.forgotten: list[str] = []

    def forget_topic(self, topic: str) -> None:
        self.forgotten.append(topic)

    def bind_remote(self, topic, remote, partitions, starts) -> None:
        self.bound.append(remote)

    def truncate_remote(self, topic, partition, end) -> None: ...

    def first_upstream(self, topic, partition) -> int | None:
        return None


def test_kafkas_text_of_an_id_and_of_a_reference():
    assert kafka_topic_id(LIBRDKAFKA_SOURCE) == KAFKA_SOURCE == kafka_topic_id(KAFKA_SOURCE)
    assert kafka_topic_id("ab/+cd==") == "ab_-cd"
    assert kafka_topic_ref(f"a.t@{LIBRDKAFKA_REMOTE}") == f"a.t@{KAFKA_REMOTE}"
    assert kafka_topic_ref(f"source t@{LIBRDKAFKA_SOURCE}") == f"source t@{KAFKA_SOURCE}"
    assert kafka_topic_ref("source t") == "source t"  # no id known: as it was


def test_ids_kept_under_librdkafka_are_the_same_topics_through_the_java_admin(tmp_path: Path, monkeypatch):
    files = LocalFiles(tmp_path)
    files.write("topic-ids.json", json.dumps({
        "source": {"t": LIBRDKAFKA_SOURCE}, "remote": {"a.t": LIBRDKAFKA_REMOTE},
        "source_ends": {"t": {"0": 100}},
        "older_copies": {"a.t": {"id": LIBRDKAFKA_REMOTE, "generations": [
            {"source_id": "AAAAAAAAAAAAAAAAAAAA+w", "ends": {"0": 10}}],
            "held_from": {LIBRDKAFKA_SOURCE: {"0": 0}}}}}))
    marks = WriteMarks(files)
    marks.batch_written(0, "p", [WrittenRun.of("a.t", 0, 0, 0, 100)], {"a.t": "t"})
    loss = LossLog(files, "a->b")
    reported: list = []
    loss.listeners.append(reported.append)
    (tmp_path / "checkpoint").mkdir()
    mapping = Mapping()
    ident = TopicIdentity(files=files, flow_name="a->b", source="source", target="target",  # type: ignore[arg-type]
                          loss=loss, marks=marks, spark_log=SparkOffsetLog(LocalFiles(tmp_path / "checkpoint")),
                          mapping=mapping)
    monkeypatch.setattr(topic_identity, "topic_ids", lambda admin, topics: {"t": KAFKA_SOURCE})
    monkeypatch.setattr(topic_identity, "topic_layout", lambda admin, topics: {"a.t": (KAFKA_REMOTE, {0: 1})})
    monkeypatch.setattr(topic_identity, "partition_offsets",
                        lambda admin, parts, earliest=False, **_: {p: 0 if earliest else 100 for p in parts})

    assert not ident.source_changed(["t"])
    assert not ident.check({"t": "a.t"}, {"t": 1})  # nothing re-created: nothing to read again
    assert reported == [] and mapping.forgotten == []
    assert mapping.bound == [f"a.t@{KAFKA_REMOTE}"]
    assert ident.sink_ids({"t": "a.t"}) == [TopicIds("t", KAFKA_SOURCE, KAFKA_REMOTE)]
    kept = json.loads(files.read("topic-ids.json") or "{}")
    assert kept["source"] == {"t": KAFKA_SOURCE} and kept["remote"] == {"a.t": KAFKA_REMOTE}
    older = kept["older_copies"]["a.t"]
    assert older["id"] == KAFKA_REMOTE and older["held_from"] == {KAFKA_SOURCE: {"0": 0}}
    assert older["generations"][0]["source_id"] == "AAAAAAAAAAAAAAAAAAAA-w"


def test_a_binding_kept_under_librdkafka_is_the_same_remote_topic():
    ranges = OffsetRanges()
    ranges.restore("t", 0, [], Binding.from_json({"remote": f"a.t@{LIBRDKAFKA_REMOTE}", "floor": 0}))
    assert ranges.binding("t", 0).remote == f"a.t@{KAFKA_REMOTE}"
    assert not ranges.bind("t", 0, f"a.t@{KAFKA_REMOTE}", 0)  # the same topic: the mapping goes on


def test_a_loss_reported_under_librdkafka_is_the_same_log(tmp_path: Path):
    files = LocalFiles(tmp_path)
    report = LossReport(flow="a->b", topic="t", partition=0, first=5, last=9, records=5, reason="gone", time=0.0,
                        log=f"source t@{LIBRDKAFKA_SOURCE}", start=5, end=10)
    files.write("data-loss.json", json.dumps([asdict(report)]))
    (loaded,) = load_losses(files)
    assert loaded.log == f"source t@{KAFKA_SOURCE}"
