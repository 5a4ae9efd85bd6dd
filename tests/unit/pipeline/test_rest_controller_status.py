"""``ReplicatorController.status()``: the status page's view of real ``Flow`` objects (a writer with
small fake parts, a standby, a writer whose start is retried), from memory, the verdicts from the
background cache."""
from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from mirrorspark.metrics.lag import PartitionLag
from mirrorspark.pipeline.flow import Flow
from mirrorspark.pipeline.flow_assembly import FlowContext
from mirrorspark.pipeline.rest_controller import ReplicatorController


def flow(name: str, *, parts: Any = None, lease_group: str | None = None, failure: str | None = None) -> Flow:
    source, target = name.split("->")
    config = SimpleNamespace(name=name, source=SimpleNamespace(alias=source), target=SimpleNamespace(alias=target),
                             options=SimpleNamespace(lease_enabled=False, checkpoints_interval=60.0))
    made = Flow(context=FlowContext(config=config, policy=None, shared=SimpleNamespace(), instance="me"))  # type: ignore[arg-type]
    made.parts = parts
    if lease_group is not None:
        made.lease = SimpleNamespace(group=lease_group)  # type: ignore[assignment]
    if failure is not None:
        made.last_failure, made.failing_since, made.failed_takes = failure, 0.0, 3
    return made


def writer_parts() -> Any:
    lags = [PartitionLag("orders", 0, 100, 90, 10, 2.0), PartitionLag("orders", 1, 50, 45, 5, 4.5),
            PartitionLag("events", 0, 7, 7, 0, 0.0)]
    return SimpleNamespace(
        query=SimpleNamespace(metrics=None, remote_topics=SimpleNamespace(plan=SimpleNamespace(
            remote={"orders": "a.orders", "events": "a.events"}))),
        supervisor=SimpleNamespace(state=lambda: "running", healthy=lambda: True, reason=lambda: None, attempts=0,
                                   restarts=0,
                                   loss=SimpleNamespace(total=lambda: 0, reports=[])),
        probe=SimpleNamespace(latest=lags, measured_at=1.0),
        offsets=SimpleNamespace(checkpoints=None))


def test_status_lists_writers_first_with_lag_per_topic_and_checkpoints_from_the_cache():
    flows = [flow("b->a", lease_group="g"), flow("c->a", failure="cannot reach cluster 'c'"),
             flow("a->b", parts=writer_parts())]
    replicator: Any = SimpleNamespace(flows={f.name: f for f in flows}, spark=None, config=None)
    controller = ReplicatorController(replicator)
    rows = controller.status()
    assert [(r["name"], r["role"], r["state"]) for r in rows] == [
        ("a->b", "writer", "running"), ("b->a", "standby", "standby"), ("c->a", "writer", "degraded")]
    assert rows[0]["lag_topics"] == [{"topic": "events", "records": 0, "seconds": 0.0},
                                     {"topic": "orders", "records": 15, "seconds": 4.5}]
    assert rows[0]["checkpoints"] is None and rows[1]["checkpoints"] is None  # first call: not read yet
    assert [r["writing"] for r in rows] == [True, False, False]
    deadline = time.monotonic() + 5
    while controller.status()[0]["checkpoints"] is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert controller.status()[0]["checkpoints"]["enabled"] is False  # this flow emits no checkpoints


def test_a_promotion_under_way_is_shown_with_its_step_by_rest_status_and_the_page(tmp_path):
    from mirrorspark.cli.status_command import table
    from mirrorspark.cutover.journal import Journal, Journals
    from mirrorspark.rest.status_page import render_status
    from mirrorspark.state.files import LocalFiles

    journals = Journals(LocalFiles(tmp_path / "promote"))
    journals.save(Journal(flow="a->b", step="quiet", started=time.time() - 30, topics=["orders", "events"],
                          groups=["g1"], acls=["orders", "events"], timings={"lag": 0.2, "fence": 0.1}))
    flows = [flow("a->b", parts=writer_parts()), flow("b->a", lease_group="g")]
    replicator: Any = SimpleNamespace(flows={f.name: f for f in flows}, spark=None, config=None)
    controller = ReplicatorController(replicator, promotions=journals.view)

    shown = {r["name"]: r["promotion"] for r in controller.status()}
    assert shown["b->a"] is None
    assert shown["a->b"]["step"] == "quiet" and shown["a->b"]["fenced"] == 2 and shown["a->b"]["groups"] == 1
    assert controller.flows()[0]["promotion"]["step"] == "quiet"
    line = [x for x in table(controller.flows()) if "promotion" in x]
    assert line == [f"a->b: promotion under way: next step quiet (3 of {len(shown['a->b']['steps'])}), started 30s "
                    "ago, 2 topic(s), 1 group(s), 2 topic(s) fenced by ACLs"]
    page = render_status(controller.status(), lambda name: [])
    assert 'data-step="quiet"' in page and "<s>lag</s> → <s>fence</s> → <b>quiet</b> → drain" in page

    (tmp_path / "promote" / "a-to-b.json").write_text("{not json")
    broken = controller.status()[0]["promotion"]
    assert "cannot be read" in broken["error"] and "cannot be read" in render_status(controller.status(),
                                                                                     lambda name: [])
    (tmp_path / "promote" / "a-to-b.json").unlink()
    assert controller.status()[0]["promotion"] is None


def test_records_are_moved_aside_only_in_a_paused_flow(tmp_path):
    import json as _json

    import pytest

    from mirrorspark.errors import Conflict
    from mirrorspark.integrity.spark_offsets import SparkOffsetLog
    from mirrorspark.offsets.ranges import OffsetRanges
    from mirrorspark.partition import OffsetRun
    from mirrorspark.state.files import LocalFiles

    checkpoint = LocalFiles(tmp_path)
    checkpoint.child("offsets").write("0", "v1\n{}\n" + _json.dumps({"t": {"0": 100}}))
    checkpoint.child("commits").write("0", "v1\n{}")
    ranges = OffsetRanges()
    ranges.add("t", 0, [OffsetRun(0, 0, 100)])
    saved: list = []
    offsets = SimpleNamespace(ranges=ranges, copied_end=ranges.copied_end,
                              move_aside=lambda t, p, c, e: (saved.append((t, p)), ranges.move_aside(t, p, c, e))[1])
    query = SimpleNamespace(paused=False, state=lambda: "running", spark_log=SparkOffsetLog(checkpoint))
    made = flow("a->b", parts=SimpleNamespace(query=query, offsets=offsets))
    replicator: Any = SimpleNamespace(flows={"a->b": made}, spark=None, config=None)
    controller = ReplicatorController(replicator)
    assert controller.copy_ends("a->b") == [{"topic": "t", "partition": 0, "upstream_end": 100, "downstream_end": 100,
                                             "moved_aside_to": None}]
    with pytest.raises(Conflict, match="is running, not paused: pause it first"):
        controller.move_aside("a->b", [("t", 0, [], 130)])
    assert SparkOffsetLog(checkpoint).committed_positions() == {("t", 0): 100} and not saved
    query.paused = True
    assert controller.move_aside("a->b", [("t", 0, [], 130)]) == [
        {"topic": "t", "partition": 0, "end": 130, "position_before": 100, "position_after": 130,
         "mapping_marked": True}]
    assert SparkOffsetLog(checkpoint).committed_positions() == {("t", 0): 130} and saved == [("t", 0)]
    assert controller.copy_ends("a->b")[0]["moved_aside_to"] == 130
