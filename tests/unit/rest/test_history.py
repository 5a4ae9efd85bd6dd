"""The status page's history: bounded to the last hour, rates never negative, a sampling error logged
once per kind and never raised, and the sampler started and stopped with the REST server."""
from __future__ import annotations

import logging
import time

from helpers.status_flows import StatusController
from prometheus_client import CollectorRegistry

from mirrorspark.rest.history import KEEP_SECONDS, SAMPLE_SECONDS, History, Sample, rates
from mirrorspark.rest.server import RestServer, RestSettings


def test_one_hour_kept_and_gone_flows_dropped():
    rows = [{"name": "a->b", "records_replicated": 0}, {"name": "b->a"}]
    clock = [0.0]
    history = History(flows=lambda: rows, clock=lambda: clock[0])
    for step in range(1000):
        rows[0] = {"name": "a->b", "records_replicated": step}
        history.sample()
        clock[0] += SAMPLE_SECONDS
    kept = history.series("a->b")
    assert len(kept) == int(KEEP_SECONDS / SAMPLE_SECONDS) + 1 and kept[-1].records == 999
    assert kept[-1].at - kept[0].at == KEEP_SECONDS
    del rows[1]
    history.sample()
    assert history.series("b->a") == []


def test_a_counter_that_went_back_is_a_zero_rate():
    samples = [Sample(0, 100, 0, 0, 0, 0), Sample(10, 200, 0, 0, 0, 0), Sample(20, 5, 0, 0, 0, 0)]
    assert rates(samples) == [(10, 10.0), (20, 0.0)]


def test_a_sampling_error_is_logged_once_per_kind_and_never_raised(caplog):
    errors = [RuntimeError("x"), RuntimeError("y"), KeyError("z")]

    def flows() -> list[dict]:
        raise errors.pop(0)

    history = History(flows=flows)
    with caplog.at_level(logging.WARNING, logger="mirrorspark.rest.history"):
        for _ in range(3):
            history.sample()
    assert [r.getMessage().split(" (")[1].split(":")[0] for r in caplog.records] == ["RuntimeError", "KeyError"]


def test_the_sampler_runs_with_the_server(tmp_path):
    settings = RestSettings.from_config({"mirrorspark.rest.listener": "127.0.0.1:0", "mirrorspark.rest.auth": "none"})
    rest = RestServer(StatusController(), CollectorRegistry(), settings, tmp_path)
    rest.start()
    try:
        deadline = time.monotonic() + 10
        while not rest.history.series("primary->backup") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rest.history.series("primary->backup")[0].records == 123_456
        thread = rest.history._thread
        assert thread is not None and thread.daemon and thread.is_alive()
    finally:
        rest.stop()
    assert not thread.is_alive()
