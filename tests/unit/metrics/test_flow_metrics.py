"""A flow's metrics: series of topics that left the flow are dropped."""
from __future__ import annotations

from mirrorspark.metrics.flow_metrics import FlowMetrics
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.sink_report import parse_report


def test_series_of_topics_that_left_the_flow_are_removed():
    metrics = MirrorMetrics()
    figures = FlowMetrics(metrics, "A", "B")
    other = FlowMetrics(metrics, "C", "B")
    stats = "A.kept\t0\t5\t50\t1\t2\t3\t1\t2\t3\t1\nA.gone\t0\t5\t50\t1\t2\t3\t1\t2\t3\t1\n"
    figures.batch_written(parse_report(stats=stats).stats, {})
    other.batch_written(parse_report(stats="C.gone\t0\t5\t50\t1\t2\t3\t1\t2\t3\t1\n").stats, {})
    metrics.lag_offsets.labels(source="A", target="B", topic="gone", partition="0").set(3)
    removed = figures.forget_topics({"A.kept"}, {"kept"})
    text = "\n".join(f"{s.name}{s.labels}" for m in metrics.registry.collect() for s in m.samples)
    assert removed > 0 and "A.gone" not in text and "'gone'" not in text
    assert "A.kept" in text and "C.gone" in text  # another flow's series are its own
    assert [p["topic"] for p in figures.snapshot()["partitions"]] == ["A.kept"]
