"""The per-batch report of the JVM sink: the texts its stores drain, read into typed rows once."""
from __future__ import annotations

import pytest

from mirrorspark.errors import OperationalError
from mirrorspark.sink_report import (
    BatchReport,
    BatchReportError,
    PartitionStats,
    ResumedPartition,
    ResumeRange,
    UnresolvedSchemas,
    WrittenRun,
    parse_report,
    resume_option,
)


def test_every_store_becomes_typed_rows():
    report = parse_report(
        runs="A.t\t0\t10\t100\t5\n-1\t0\t-1\t-1\t0\nA.t\t1\t3\t7\t2\n",
        stats="A.t\t0\t5\t50\t1\t9\t20\t2\t8\t25\t4\t" + "\t".join(["1", "3"] + ["0"] * 13 + ["4"] + ["0"] * 14)
        + "\n",
        resumed="A.t\t1\t6\t2\n",
        executors="1,driver,2",
        unresolved="A.t\t0\t3\n")
    assert report.runs == (WrittenRun.of("A.t", 0, 10, 100, 5), WrittenRun.of("-1", 0, -1, -1, 0),
                           WrittenRun.of("A.t", 1, 3, 7, 2))
    assert [run.written for run in report.runs] == [True, False, True]
    assert report.stats == (PartitionStats("A.t", 0, count=5, bytes=50, age_min=1, age_max=9, age_sum=20,
                                           latency_min=2, latency_max=8, latency_sum=25, timed=4,
                                           age_buckets=(1, 3, *[0] * 13), latency_buckets=(4, *[0] * 14)),)
    assert report.resumed == (ResumedPartition("A.t", 1, resumed=6, recopied=2),)
    assert report.executors == frozenset({"1", "2", "driver"})
    assert report.unresolved == (UnresolvedSchemas("A.t", 0, records=3),)


def test_topics_keep_every_character_but_tab():
    (run,) = parse_report(runs="a topic.with-odd_chars\t12\t0\t0\t1\n").runs
    assert (run.topic, run.partition) == ("a topic.with-odd_chars", 12)


def test_an_empty_drain_is_an_empty_report():
    assert parse_report() == BatchReport()
    assert parse_report(runs="", stats="", resumed="", executors="") == BatchReport()
    assert BatchReport().first_written() == {}


def test_first_written_is_the_lowest_source_offset_written_per_partition():
    report = parse_report(runs="r\t0\t20\t200\t5\nr\t0\t0\t0\t0\nr\t0\t7\t190\t3\nr\t1\t4\t4\t0\n")
    assert report.first_written() == {("r", 0): 7}  # a break (count 0) wrote nothing


@pytest.mark.parametrize("store, text, where", [
    ("runs", "A.t\t0\t10\t100\n", "OffsetRuns.drain"),                     # a field missing
    ("runs", "A.t\t0\t10\t100\t5\t6\n", "OffsetRuns.drain"),               # one too many
    ("runs", "A.t\tzero\t10\t100\t5\n", "OffsetRuns.drain"),               # not a number
    ("stats", "A.t\t0\t5\t50\n", "FlowStats.drain"),
    ("resumed", "A.t\t1\t6\n", "WrittenBatches.drainResumed"),
])
def test_a_line_of_another_format_fails_the_batch_naming_the_store_and_line(store, text, where):
    with pytest.raises(BatchReportError) as caught:
        parse_report(**{store: text})
    assert isinstance(caught.value, OperationalError)
    assert where in str(caught.value) and repr(text.rstrip("\n")) in str(caught.value)


def test_the_resume_option_is_one_line_per_range():
    ranges = [ResumeRange("r", 0, 7, 17), ResumeRange("r", 3, 0, 2)]
    assert resume_option(ranges) == "r\t0\t7\t17\nr\t3\t0\t2"
    assert [r.records for r in ranges] == [10, 2]
    assert resume_option([]) == ""


def test_figures_without_both_histograms_are_refused_naming_the_store():
    with pytest.raises(BatchReportError, match=r"FlowStats\.drain"):
        parse_report(stats="A.t\t0\t5\t50\t1\t9\t20\t2\t8\t25\t4\n")  # a jar of an older version
    with pytest.raises(BatchReportError, match=r"FlowStats\.drain"):
        parse_report(stats="A.t\t0\t5\t50\t1\t9\t20\t2\t8\t25\t4\t1\t2\t3\n")  # halves differ
