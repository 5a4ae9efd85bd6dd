"""The status page's failover verdicts: the same ``assess`` as audit and failover, fed from the flow's
memory and two background reads; a page request never waits for them."""
from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from mirrorspark.formats import Checkpoint
from mirrorspark.integrity.loss import LossReport
from mirrorspark.metrics.lag import PartitionLag
from mirrorspark.pipeline import failover_readiness
from mirrorspark.pipeline.failover_readiness import ReadinessCache, readiness_of

TOPIC = "primary.checkpoints.internal"
FOUND: list[dict] = []  # the cluster fixture's state: what the source's groups have committed


def parts(lags: list[PartitionLag], losses: list[LossReport] | None = None, checkpoints: bool = True):
    """The few parts of an assembled flow the readiness reads (a small fake, not the pipeline)."""
    source = SimpleNamespace(committed=lambda group: {k: (v, "") for k, v in FOUND[0]["committed"][group].items()})
    task = SimpleNamespace(target_conf={}, topic=TOPIC, source=source) if checkpoints else None
    return SimpleNamespace(
        offsets=SimpleNamespace(checkpoints=task),
        query=SimpleNamespace(remote_topics=SimpleNamespace(plan=SimpleNamespace(remote={"orders": "primary.orders"}))),
        probe=SimpleNamespace(latest=lags, measured_at=1.0),
        supervisor=SimpleNamespace(loss=SimpleNamespace(reports=losses or [])))


@pytest.fixture
def cluster(monkeypatch):
    """The checkpoints topic (one group per entry) and the groups' commits on the source."""
    emitted = time.time() - 30
    found = {"records": [], "committed": {}}

    def read(conf, topic, timeout):
        assert topic == TOPIC and timeout == failover_readiness.READ_TIMEOUT
        return [(c.key_bytes(), c.value_bytes(), 0, i, int(emitted * 1000)) for i, c in enumerate(found["records"])]

    monkeypatch.setattr(failover_readiness, "read_compacted_topic", read)
    FOUND[:] = [found]
    return found, emitted


def test_exact_when_checkpoints_match_and_everything_unread_is_replicated(cluster):
    found, emitted = cluster
    found["records"] = [Checkpoint("billing", "primary.orders", 0, 50, 50), Checkpoint("reports", "primary.orders", 0,
                                                                                        40, 40)]
    found["committed"] = {"billing": {("orders", 0): 50}, "reports": {("orders", 0): 45}}
    lags = [PartitionLag("orders", 0, end_offset=60, position=55, offsets=5, seconds=1.0)]
    result = readiness_of(parts(lags), source_alias="primary", interval=60)
    assert result["groups"] == 2 and result["emitted_at"] == pytest.approx(emitted, abs=0.01)
    verdicts = {v["group"]: v for v in result["verdicts"]}
    # billing: at its checkpoint, but records 55..59 it has not read are not on the target yet.
    assert not verdicts["billing"]["safe"]
    assert any("not replicated yet" in r["text"] for r in verdicts["billing"]["reasons"])
    # reports: consumed 5 records past its checkpoint.
    assert not verdicts["reports"]["safe"]
    assert all(not r["text"].startswith("audit:") for v in result["verdicts"] for r in v["reasons"])
    lags = [PartitionLag("orders", 0, end_offset=60, position=60, offsets=0, seconds=0.0)]
    found["committed"]["reports"] = {("orders", 0): 40}
    again = {v["group"]: v["safe"] for v in readiness_of(parts(lags), source_alias="primary", interval=60)["verdicts"]}
    assert again == {"billing": True, "reports": True}


def test_a_loss_in_the_groups_topic_makes_it_not_exact(cluster):
    found, _ = cluster
    found["records"] = [Checkpoint("billing", "primary.orders", 0, 50, 50)]
    found["committed"] = {"billing": {("orders", 0): 50}}
    lags = [PartitionLag("orders", 0, end_offset=50, position=50, offsets=0, seconds=0.0)]
    loss = LossReport("primary->backup", "orders", 0, 51, 52, 2, "retention", time.time())
    [verdict] = readiness_of(parts(lags, [loss]), source_alias="primary", interval=60)["verdicts"]
    assert not verdict["safe"] and any("data loss" in r["text"] and not r["ok"] for r in verdict["reasons"])


def test_checkpoints_off():
    assert readiness_of(parts([], checkpoints=False), source_alias="primary", interval=60)["enabled"] is False


def test_the_cache_never_waits_and_refreshes_when_stale():
    release = threading.Event()
    calls = []

    def read() -> dict:
        calls.append(1)
        release.wait(10)
        return {"round": len(calls)}

    clock = [0.0]
    cache = ReadinessCache(every=30, clock=lambda: clock[0])
    started = time.monotonic()
    assert cache.get("a->b", read) is None and cache.get("a->b", read) is None  # one round at a time
    assert time.monotonic() - started < 1 and len(calls) == 1
    release.set()
    deadline = time.monotonic() + 5
    while cache.get("a->b", read) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cache.get("a->b", read) == {"round": 1} and len(calls) == 1
    clock[0] = 31  # stale: the old answer now, a new round behind it
    assert cache.get("a->b", read) == {"round": 1}
    while cache.get("a->b", read) == {"round": 1} and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cache.get("a->b", read) == {"round": 2}


def test_a_failed_round_is_shown_not_raised():
    def read() -> dict:
        raise OSError("broker down")

    cache = ReadinessCache()
    cache.get("a->b", read)
    deadline = time.monotonic() + 5
    while cache.get("a->b", read) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cache.get("a->b", read)["error"] == "OSError: broker down"
