"""The offset-sync writer without a broker: the runs of a batch extend the exact mapping, are saved,
and become MM2 offset syncs handed to the producer it was given."""
from __future__ import annotations

import logging

from mirrorspark.formats import OffsetSync
from mirrorspark.offsets.ranges import OffsetRanges, RangeRow
from mirrorspark.offsets.sync_writer import OffsetSyncWriter
from mirrorspark.partition import OffsetRun
from mirrorspark.sink_report import WrittenRun

SOURCE_OF = {"A.t": "t"}


class FakeProducer:
    """Keeps what is produced; ``fail`` makes each delivery report an error."""

    def __init__(self, unacknowledged: int = 0, fail: str | None = None) -> None:
        self.sent: list[tuple[str, OffsetSync, int]] = []
        self.polls = 0
        self.flushed: list[float] = []
        self.unacknowledged = unacknowledged
        self.fail = fail

    def produce(self, topic, value, key, partition, on_delivery) -> None:
        self.sent.append((topic, OffsetSync.from_record(key, value), partition))
        on_delivery(None if self.fail is None else FakeError(self.fail), None)

    def poll(self, timeout: float) -> int:
        self.polls += 1
        return 0

    def flush(self, timeout: float) -> int:
        self.flushed.append(timeout)
        return self.unacknowledged


class FakeError:
    def __init__(self, text: str) -> None:
        self.text = text

    def str(self) -> str:
        return self.text


class Saved(list[set[tuple[str, int]]]):
    """The (source topic, partition) sets the writer asked to save, one per batch."""


def writer(producer: FakeProducer, saved: Saved) -> tuple[OffsetSyncWriter, OffsetRanges]:
    ranges = OffsetRanges()
    return OffsetSyncWriter("A->B", ranges, saved.append, "mm2-offset-syncs.B.internal", producer), ranges


def syncs(producer: FakeProducer) -> list[tuple[int, int, int]]:
    return [(s.partition, s.upstream, s.downstream) for _, s, _ in producer.sent]


def test_a_run_becomes_the_mapping_and_syncs_at_its_start_and_last_record():
    producer, saved = FakeProducer(), Saved()
    sync_writer, ranges = writer(producer, saved)
    published = sync_writer.on_batch([WrittenRun.of("A.t", 0, 10, 100, 5)], SOURCE_OF)
    assert published == 2 and syncs(producer) == [(0, 10, 100), (0, 14, 104)]
    # syncs name the source topic and all go to partition 0 of the offset-syncs topic, as MM2's
    assert {(topic, s.topic, partition) for topic, s, partition in producer.sent} == {
        ("mm2-offset-syncs.B.internal", "t", 0)}
    assert producer.polls == 1
    assert ranges.translate("t", 0, 12) == 102 and ranges.latest("t", 0) == (14, 104)
    assert saved == [{("t", 0)}]


def test_a_run_continuing_the_last_one_syncs_only_its_last_record():
    producer, saved = FakeProducer(), Saved()
    sync_writer, ranges = writer(producer, saved)
    sync_writer.on_batch([WrittenRun.of("A.t", 0, 10, 100, 5)], SOURCE_OF)
    producer.sent.clear()
    assert sync_writer.on_batch([WrittenRun.of("A.t", 0, 15, 105, 3)], SOURCE_OF) == 1
    assert syncs(producer) == [(0, 17, 107)]
    assert ranges.rows("t", 0) == [RangeRow(OffsetRun(10, 100, 8), exact_gap_after=True)]


def test_a_gap_or_a_failed_write_starts_a_new_sync():
    producer, saved = FakeProducer(), Saved()
    sync_writer, ranges = writer(producer, saved)
    sync_writer.on_batch([WrittenRun.of("A.t", 0, 10, 100, 1), WrittenRun.of("A.t", 0, -1, -1, 0),
                          WrittenRun.of("A.t", 0, 11, 101, 1), WrittenRun.of("A.t", 0, 20, 102, 1)], SOURCE_OF)
    # after the break even a contiguous run is synced; the gap 12..19 (compaction) is one more
    assert syncs(producer) == [(0, 10, 100), (0, 11, 101), (0, 20, 102)]
    assert [row.run for row in ranges.rows("t", 0)] == [OffsetRun(10, 100, 1), OffsetRun(11, 101, 1),
                                                      OffsetRun(20, 102, 1)]


def test_runs_of_a_topic_outside_the_plan_are_skipped_with_a_warning(caplog):
    caplog.set_level(logging.WARNING, logger="mirrorspark.offsets.sync_writer")
    producer, saved = FakeProducer(), Saved()
    sync_writer, ranges = writer(producer, saved)
    assert sync_writer.on_batch([WrittenRun.of("other", 0, 0, 0, 4)], SOURCE_OF) == 0
    assert producer.sent == [] and producer.polls == 0 and saved == [] and ranges.partitions() == []
    assert "other, which no source topic maps to" in caplog.text


def test_an_empty_batch_touches_nothing():
    producer, saved = FakeProducer(), Saved()
    sync_writer, _ = writer(producer, saved)
    assert sync_writer.on_batch([], SOURCE_OF) == 0
    assert producer.sent == [] and producer.polls == 0 and saved == []


def test_a_failed_delivery_is_logged(caplog):
    caplog.set_level(logging.WARNING, logger="mirrorspark.offsets.sync_writer")
    producer, saved = FakeProducer(fail="broker down"), Saved()
    sync_writer, ranges = writer(producer, saved)
    sync_writer.on_batch([WrittenRun.of("A.t", 2, 0, 0, 1)], SOURCE_OF)
    assert "an offset sync to mm2-offset-syncs.B.internal was not written: broker down" in caplog.text
    assert ranges.latest("t", 2) == (0, 0)  # the mapping does not wait for the sync


def test_close_flushes_and_reports_what_was_not_acknowledged(caplog):
    caplog.set_level(logging.WARNING, logger="mirrorspark.offsets.sync_writer")
    producer = FakeProducer(unacknowledged=3)
    writer(producer, Saved())[0].close()
    assert producer.flushed == [10] and "3 offset sync(s) not acknowledged at stop" in caplog.text
