"""Issue 45: the shipped alert rules (docs/prometheus/mirrorspark-alerts.yml) on a real Prometheus that
scrapes real mirrorspark processes, each fault made for real; and every expression of the Grafana
dashboard (docs/grafana/mirrorspark.json) answered with data by that Prometheus.

Process mirrorspark-0 writes six flows, one per fault, so each alert can be told apart by its flow's labels;
process mirrorspark-1 is the standby of the healthy one. Both are scraped with the labels a Strimzi
PodMonitor would give them. The faults:

- failed: a compacted remote topic refuses a keyless record (non-retriable), restarts given up;
- lag: the flow paused, records stamped an hour ago produced (the 300 s threshold is kept);
- loss: the flow paused, records produced and deleted on the source (deleteRecords), the flow resumed
  (the flow then says `degraded` for the life of the process but stays healthy: NotHealthy stays silent);
- re-copies: the flow paused, its Spark checkpoint rolled back by its last batch (a state folder restored
  from an older backup), records produced, the flow resumed: Spark plans the copied records again;
- no batches: a flow that copies no heartbeats (heartbeats.replication.enabled = false) left idle;
- no writer: mirrorspark-0 frozen (SIGSTOP) until the standby takes the flow over.

The healthy flow, its standby and every flow's other alerts must stay silent throughout.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic
from helpers.kafka import create_topic, produce, wait_for_count
from helpers.offsets import commit_on
from helpers.processes import kill9, start
from helpers.prometheus import (
    PROMETHEUS,
    PrometheusServer,
    Target,
    dashboard_expressions,
    free_port,
    strimzi_labels,
)
from helpers.records import numbered
from helpers.spark_state import latest
from helpers.waiting import wait_until

from mirrorspark.control.admin import admin_client

# About 2.5 minutes alone, two instances and six flows: in `make drills`, keeping `make test` well under 30 minutes.
pytestmark = [pytest.mark.broker, pytest.mark.long,
              pytest.mark.skipif(PROMETHEUS is None, reason="no prometheus on PATH (scripts/setup.sh installs "
                                                            "Debian's prometheus package where apt-get is available)")]

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "docs" / "prometheus" / "mirrorspark-alerts.yml"
DASHBOARD = ROOT / "docs" / "grafana" / "mirrorspark.json"

HEALTHY, FAILED, LAG, LOSS, RECOPY, IDLE = ("primary", "backup"), ("backup", "primary"), ("primary", "third"), \
    ("third", "primary"), ("backup", "third"), ("third", "backup")

# The drill's `for:` per alert. Kept in proportion to what each waits out: NotHealthy and NoWriter must
# outlast a paused flow's query starting again on resume (a few seconds); LagHigh only a lag measurement.
DRILL_FOR = {"MirrorsparkFlowNotHealthy": "30s", "MirrorsparkNoWriter": "15s", "MirrorsparkLagHigh": "10s",
             "MirrorsparkNoBatches": "5s"}
DRILL_RANGE = "3m"  # increase() windows: long enough that DataLoss and Recopies still fire when checked
# Thresholds that are durations the drill cannot wait out: NoBatches' 15 minutes becomes 30 s, still
# three heartbeat holds (10 s) above a healthy idle flow's batch age.
DRILL_THRESHOLDS = {"MirrorsparkNoBatches": [("> 900", "> 30")]}


def shortened_for_a_drill(rules: dict) -> dict:
    """The shipped rules with ``for:``, range windows and duration thresholds shortened (DRILL_*), every
    other threshold and every matcher as shipped. Fails when a rule has a ``for:`` or threshold this drill
    does not know, so a changed rule changes the drill."""
    for group in rules["groups"]:
        for rule in group["rules"]:
            name = rule["alert"]
            if "for" in rule:
                assert name in DRILL_FOR, f"{name} has a for: the drill does not shorten"
                rule["for"] = DRILL_FOR[name]
            expr = re.sub(r"\[\d+[smhdw]\]", f"[{DRILL_RANGE}]", rule["expr"])
            for old, new in DRILL_THRESHOLDS.get(name, []):
                assert old in expr, f"{name}: {old!r} not in {expr!r}"
                expr = expr.replace(old, new)
            rule["expr"] = expr
    return rules


def call(url: str, token: str, method: str = "GET") -> tuple[int, str]:
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None,
                                     headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


class Instance:
    """A mirrorspark process with a fixed REST listener and token, started in its own process group."""

    def __init__(self, pod: str, config: Path, state: Path, token: str, port: int) -> None:
        self.pod, self.config, self.state, self.token, self.port = pod, config, state, token, port
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = start(self.config, self.state)

    def log(self) -> str:
        return (self.state / "run.log").read_text(errors="replace")

    def flows(self) -> dict[str, dict]:
        code, body = call(f"{self.url}/flows", self.token)
        return {row["name"]: row for row in json.loads(body)} if code == 200 else {}

    def state_of(self, flow: tuple[str, str]) -> str | None:
        return self.flows().get(name(flow), {}).get("state")

    def control(self, flow: tuple[str, str], action: str) -> None:
        code, body = call(f"{self.url}/flows/{name(flow)}/{action}", self.token, "POST")
        assert code == 200, (action, code, body)

    def checkpoint(self, flow: tuple[str, str]) -> Path:
        return self.state / "flows" / flow[0] / flow[1] / "checkpoint"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            kill9(self.proc)
            self.proc.wait(30)


def name(flow: tuple[str, str]) -> str:
    return f"{flow[0]}->{flow[1]}"


def cluster_lines(clusters: dict[str, str], names: tuple[str, ...]) -> str:
    return (f"clusters = {', '.join(names)}\n" + "".join(f"{c}.bootstrap.servers = {clusters[c]}\n" for c in names)
            + "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
              "offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n")


@contextmanager
def instances(*started: Instance) -> Iterator[None]:
    try:
        yield
    finally:
        for instance in started:
            instance.kill()


def firing(prom: PrometheusServer) -> set[tuple[str, str, str]]:
    return {(a["labels"]["alertname"], a["labels"].get("source", ""), a["labels"].get("target", ""))
            for a in prom.firing()}


def expected(*pairs: tuple[str, tuple[str, str]]) -> set[tuple[str, str, str]]:
    return {(alert, flow[0], flow[1]) for alert, flow in pairs}


def test_each_shipped_alert_fires_on_its_fault_in_a_real_prometheus_and_the_rest_stay_silent(
        clusters, unique, tmp_path):
    token = f"tok-{unique}"
    topics = {flow: f"al{i}-{unique}" for i, flow in enumerate((HEALTHY, FAILED, LAG, LOSS, RECOPY, IDLE))}
    for flow, topic in topics.items():
        create_topic(clusters[flow[0]], topic, 1)
        if flow != FAILED:
            produce(clusters[flow[0]], topic, numbered(0, 20, 1))
    # FAILED: its remote topic exists already, compacted, and refuses a record without a key.
    remote_failed = f"backup.{topics[FAILED]}"
    target = admin_client({"bootstrap.servers": clusters["primary"]})
    compacted = NewTopic(remote_failed, 1, 1, config={"cleanup.policy": "compact"})
    target.create_topics([compacted])[remote_failed].result(30)
    produce(clusters["backup"], topics[FAILED], [{"partition": 0, "value": b"no key"}])
    group = f"al-group-{unique}"
    commit_on(clusters["primary"], group, {(topics[HEALTHY], 0): 10})  # checkpoints: the latency histogram

    flows = "".join(f"{name(flow)}.enabled = true\n{name(flow)}.topics = {topic}\n" for flow, topic in topics.items())
    common = (f"mirrorspark.rest.token = {token}\nmirrorspark.metrics.lag.interval.seconds = 1\n"
              "emit.checkpoints.interval.seconds = 1\n"
              # the standby takes over after 30 s: NoWriter (15 s in the drill) fires meanwhile
              f"{name(HEALTHY)}.mirrorspark.flow.lease.timeout.ms = 30000\n"
              f"{name(HEALTHY)}.mirrorspark.flow.lease.group = al-{unique}\n")
    first_config = tmp_path / "first.properties"
    first_config.write_text(
        cluster_lines(clusters, ("primary", "backup", "third")) + flows + common
        + f"{name(FAILED)}.config.properties.exclude = cleanup\\.policy\n"
        + f"{name(FAILED)}.mirrorspark.flow.restart.attempts = 1\n"
        + f"{name(FAILED)}.mirrorspark.flow.restart.backoff.seconds = 0.5\n"
        + f"{name(IDLE)}.heartbeats.replication.enabled = false\n"
        + f"mirrorspark.rest.listener = 127.0.0.1:{(first_port := free_port())}\n")
    second_config = tmp_path / "second.properties"
    second_config.write_text(
        cluster_lines(clusters, ("primary", "backup"))
        + f"{name(HEALTHY)}.enabled = true\n{name(HEALTHY)}.topics = {topics[HEALTHY]}\n" + common
        + f"mirrorspark.rest.listener = 127.0.0.1:{(second_port := free_port())}\n")
    first = Instance("mirrorspark-0", first_config, tmp_path / "first", token, first_port)
    second = Instance("mirrorspark-1", second_config, tmp_path / "second", token, second_port)
    rules = tmp_path / "drill-alerts.yml"
    rules.write_text(yaml.safe_dump(shortened_for_a_drill(yaml.safe_load(RULES.read_text())), sort_keys=False))
    timings: dict[str, float] = {}
    started = time.monotonic()

    with instances(first, second):
        first.start()
        wait_until(lambda: all(first.state_of(f) == "running" for f in topics if f != FAILED),
                   "mirrorspark-0 running its flows", 240)
        second.start()
        wait_until(lambda: second.state_of(HEALTHY) == "standby", "mirrorspark-1 the standby", 180)
        for flow, topic in topics.items():
            if flow != FAILED:
                wait_for_count(clusters[flow[1]], f"{flow[0]}.{topic}", 20)
        timings["both instances up"] = time.monotonic() - started

        targets = [Target(f"127.0.0.1:{i.port}", strimzi_labels(i.pod)) for i in (first, second)]
        with PrometheusServer(tmp_path / "prometheus", targets, rules) as prom:
            prom_started = time.time()
            wait_until(prom.targets_up, "both targets scraped", 30)
            # Healthy so far (FAILED fails on its own): nothing but FlowFailed fires.
            alert = prom.wait_for_alert("MirrorsparkFlowFailed", 120, source=FAILED[0], target=FAILED[1])
            assert alert["labels"]["kubernetes_pod_name"] == "mirrorspark-0"
            assert firing(prom) == expected(("MirrorsparkFlowFailed", FAILED))

            # LAG: paused, then records stamped an hour ago.
            first.control(LAG, "pause")
            hour_ago = int((time.time() - 3600) * 1000)
            produce(clusters[LAG[0]], topics[LAG], [{**r, "timestamp": hour_ago} for r in numbered(20, 40, 1)])

            # LOSS: paused, 40 records produced, the first 30 of them deleted on the source, resumed.
            first.control(LOSS, "pause")
            wait_until(lambda: first.state_of(LOSS) == "paused", "loss flow paused")
            produce(clusters[LOSS[0]], topics[LOSS], numbered(20, 60, 1))
            source = admin_client({"bootstrap.servers": clusters[LOSS[0]]})
            for future in source.delete_records([TopicPartition(topics[LOSS], 0, 50)], request_timeout=30).values():
                future.result(30)
            first.control(LOSS, "resume")

            # RECOPY: paused, Spark's checkpoint rolled back by the batches since the one before the last
            # that copied this topic's records (a state folder restored from an older backup), resumed.
            produce(clusters[RECOPY[0]], topics[RECOPY], numbered(20, 30, 1))  # a second batch of records
            wait_for_count(clusters[RECOPY[1]], f"{RECOPY[0]}.{topics[RECOPY]}", 30)
            first.control(RECOPY, "pause")
            wait_until(lambda: first.state_of(RECOPY) == "paused", "re-copy flow paused")
            rolled = roll_back_last_data_batch(first.checkpoint(RECOPY), topics[RECOPY])
            produce(clusters[RECOPY[0]], topics[RECOPY], numbered(30, 40, 1))
            first.control(RECOPY, "resume")
            faults_made = time.monotonic()

            # A flow that lost records says `degraded` for the life of the process but replicates as it should:
            # flow_healthy stays 1 and NotHealthy silent; DataLoss says the loss.
            made = (("MirrorsparkLagHigh", LAG), ("MirrorsparkDataLoss", LOSS), ("MirrorsparkRecopies", RECOPY),
                    ("MirrorsparkNoBatches", IDLE))
            for alert_name, flow in made:
                prom.wait_for_alert(alert_name, 180, source=flow[0], target=flow[1])
                timings[f"{alert_name} {name(flow)} fired after the faults"] = time.monotonic() - faults_made
            all_faults = expected(("MirrorsparkFlowFailed", FAILED), *made)
            # The rest stay silent, the healthy flow and its standby included, for longer than NotHealthy's
            # drill `for:` (30 s) after the resumed flows started again.
            quiet_until = time.monotonic() + 35
            while time.monotonic() < quiet_until:
                assert firing(prom) == all_faults, sorted(firing(prom) ^ all_faults)
                time.sleep(2)
            assert not [a for a in prom.alerts() if a["labels"].get("kubernetes_pod_name") == "mirrorspark-1"]

            empty = [e for e in dashboard_expressions(DASHBOARD) if not prom.query(e)]
            assert not empty, f"dashboard expressions without data: {empty}"

            # NO WRITER: mirrorspark-0 frozen; its series go stale, the standby alone exports HEALTHY.
            assert first.proc is not None
            os.killpg(first.proc.pid, signal.SIGSTOP)
            frozen = time.monotonic()
            prom.wait_for_alert("MirrorsparkNoWriter", 60, source=HEALTHY[0], target=HEALTHY[1])
            timings["MirrorsparkNoWriter fired after the freeze"] = time.monotonic() - frozen
            assert firing(prom) == expected(("MirrorsparkNoWriter", HEALTHY))  # the frozen process's alerts resolved
            wait_until(lambda: second.state_of(HEALTHY) == "running", "the standby taking the flow over", 120)
            prom.wait_until_silent("MirrorsparkNoWriter", 60)
            timings["MirrorsparkNoWriter resolved after the freeze"] = time.monotonic() - frozen
            assert firing(prom) == set()
            record_series(prom, prom_started)
    print(f"alert drill: checkpoint rolled back by batches {rolled}; timings (s): "
          + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()) + f"; total {time.monotonic() - started:.0f}")


def roll_back_last_data_batch(checkpoint: Path, topic: str) -> list[int]:
    """Remove the offset and commit entries of the last batch that read ``topic`` and of every later
    one: Spark plans from the batch before it again. Returns the batches removed."""
    last = latest(checkpoint, "commits")
    assert last >= 1, "at least two batches, so that one remains"

    def ends(batch: int) -> dict:
        return json.loads((checkpoint / "offsets" / str(batch)).read_text().splitlines()[2]).get(topic, {})

    batch = last
    while batch > 0 and ends(batch) == ends(batch - 1):
        batch -= 1
    assert batch > 0, "the topic's records were copied by batch 0 only"
    removed = list(range(batch, latest(checkpoint, "offsets") + 1))
    for n in removed:
        for log in ("offsets", "commits"):
            for path in (checkpoint / log / str(n), checkpoint / log / f".{n}.crc"):
                path.unlink(missing_ok=True)
    return removed


def record_series(prom: PrometheusServer, since: float) -> None:
    """With MIRRORSPARK_RECORD_ALERT_SERIES=<file>: what this run's Prometheus stored of the series the
    rules read, as promtool input_series (tests/data/prometheus/mirrorspark-alerts-test.yml is made from it)."""
    out = os.environ.get("MIRRORSPARK_RECORD_ALERT_SERIES")
    if not out:
        return
    names = ["mirrorspark_flow_state", "mirrorspark_flow_healthy", "mirrorspark_flow_running",
             "mirrorspark_lag_seconds", "mirrorspark_last_batch_timestamp_seconds", "mirrorspark_records_lost_total",
             "mirrorspark_records_recopied_total"]
    Path(out).write_text(yaml.safe_dump({"start": since, "step": "5s",
                                         "input_series": prom.recorded(names, since, time.time(), 5)},
                                        sort_keys=False, width=1000))
