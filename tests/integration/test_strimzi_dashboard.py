"""Strimzi's MirrorMaker 2 Grafana dashboard and Strimzi's Connect alert rules, unchanged, against a
real Prometheus scraping a running mirrorspark (issue 45, item 1).

The dashboard file is Strimzi's, byte for byte (tests/data/strimzi/SOURCES.md). Prometheus gets the
labels a Strimzi PodMonitor adds to a KafkaMirrorMaker2 pod's series as static target labels. Every
panel query, with the dashboard's variables set as its own variable queries find them, must return
data while records flow; the one exception is the CPU panel, which reads the kubelet's cAdvisor
series (`container_cpu_usage_seconds_total`), present on Kubernetes for any container and never
exported by an application. A second flow that fails for good makes Strimzi's
`ConnectFailedConnector` and `ConnectFailedTask` rules fire; the healthy flow keeps them silent.
"""
from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic
from helpers.config import write_config
from helpers.kafka import create_topic, produce, wait_for_count
from helpers.processes import running_mirrorspark
from helpers.prometheus import PROMETHEUS, PrometheusServer, Target, free_port, strimzi_labels
from helpers.records import records
from helpers.waiting import wait_until

from mirrorspark.control.admin import admin_client

pytestmark = [pytest.mark.broker, pytest.mark.skipif(PROMETHEUS is None, reason="no prometheus on PATH "
                                                      "(scripts/setup.sh installs Debian's package)")]

DATA = Path(__file__).resolve().parents[1] / "data" / "strimzi"
DASHBOARD = DATA / "grafana" / "strimzi-kafka-mirror-maker-2.json"
CLUSTER, NAMESPACE, POD = "my-mirror", "kafka", "my-mirror-mirrormaker2-0"
KUBELET_ONLY = ("container_cpu_usage_seconds_total",)  # cAdvisor's, not an application's
# Strimzi's Connect rules (packaging/examples/metrics/prometheus-install/prometheus-rules/
# prometheus-kafka-connect-rules.yaml at the commit of SOURCES.md), the two that read a worker's series,
# as written there but for `for:`, shortened so that the test waits seconds instead of minutes.
STRIMZI_CONNECT_RULES = {"groups": [{"name": "kafka-connect", "rules": [
    {"alert": "ConnectFailedConnector",
     "expr": 'sum(kafka_connect_connector_status{status="failed"}) by (namespace, pod) > 0', "for": "5s",
     "labels": {"severity": "major"}},
    {"alert": "ConnectFailedTask",
     "expr": "sum(kafka_connect_worker_connector_failed_task_count) by (namespace, pod) > 0", "for": "5s",
     "labels": {"severity": "major"}},
]}]}


def panel_queries() -> list[tuple[str, str]]:
    """(panel title, expression) of every panel target of Strimzi's dashboard, rows included."""
    board = json.loads(DASHBOARD.read_text())
    panels = list(board["panels"])
    for panel in list(panels):
        panels += panel.get("panels", [])
    return [(p.get("title", ""), t["expr"]) for p in panels for t in p.get("targets", []) if t.get("expr")]


def variable(board: dict, name: str, prom: PrometheusServer, **known: str) -> str:
    """What Grafana would offer for the dashboard variable ``name``: its query_result() query, run,
    and its regex applied to the result's series, as Grafana does."""
    var = next(v for v in board["templating"]["list"] if v["name"] == name)
    query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
    inner = re.fullmatch(r"query_result\((.*)\)", query)
    assert inner is not None, query
    expr = inner.group(1)
    for key, value in known.items():
        expr = expr.replace(f"${key}", value)
    regex = re.compile(var["regex"].strip("/"))
    found = set()
    for series in prom.query(expr):
        text = "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(series["metric"].items())) + "}"
        match = regex.match(text)
        if match:
            found.add(match.group(1))
    assert len(found) == 1, (name, found)
    return found.pop()


def steady(bootstrap: str, topic: str, stop: threading.Event) -> None:
    """A few records a second, so MM2's windowed series (60 s) never expire during the test."""
    n = 0
    while not stop.is_set():
        produce(bootstrap, topic, records(10, 2, f"steady-{n}"))
        n += 1
        stop.wait(0.5)


def test_strimzis_mm2_dashboard_and_connect_alerts_work_unchanged(clusters, unique, tmp_path):
    topic, broken = f"dash-{unique}", f"dash-broken-{unique}"
    create_topic(clusters["primary"], topic, 2)
    create_topic(clusters["backup"], broken, 1)
    # backup->primary fails for good: its remote topic exists compacted and the source record has no key.
    remote_broken = f"backup.{broken}"
    admin = admin_client({"bootstrap.servers": clusters["primary"]})
    admin.create_topics([NewTopic(remote_broken, 1, 1, config={"cleanup.policy": "compact"})])[remote_broken]\
        .result(30)
    produce(clusters["backup"], broken, [{"partition": 0, "value": b"no key"}])
    produce(clusters["primary"], topic, records(100, 2, unique))
    group = f"dash-group-{unique}"
    consumer = Consumer({"bootstrap.servers": clusters["primary"], "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, p, 20) for p in (0, 1)], asynchronous=False)
    consumer.close()
    port = free_port()
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          f"backup->primary.enabled = true\nbackup->primary.topics = {broken}\n"
                          "backup->primary.config.properties.exclude = cleanup\\.policy\n"
                          "backup->primary.mirrorspark.flow.restart.attempts = 1\n"
                          "backup->primary.mirrorspark.flow.restart.backoff.seconds = 0.5\n"
                          "emit.checkpoints.interval.seconds = 1\n"
                          f"mirrorspark.rest.listener = 127.0.0.1:{port}\nmirrorspark.rest.auth = none\n"
                          "mirrorspark.metrics.lag.interval.seconds = 1\n")
    rules = tmp_path / "strimzi-connect-rules.yml"
    rules.write_text(yaml.safe_dump(STRIMZI_CONNECT_RULES, sort_keys=False))
    stop = threading.Event()
    feeder = threading.Thread(target=steady, args=(clusters["primary"], topic, stop), daemon=True)
    target = Target(f"127.0.0.1:{port}", strimzi_labels(POD, cluster=CLUSTER, namespace=NAMESPACE))
    with running_mirrorspark(config, tmp_path / "state", exit_code=1), \
            PrometheusServer(tmp_path / "prometheus", [target], rules=rules) as prom:
        wait_for_count(clusters["backup"], f"primary.{topic}", 100)
        feeder.start()
        try:
            board = json.loads(DASHBOARD.read_text())
            wait_until(lambda: prom.query("kafka_connect_worker_connector_count"), "the first scrape", timeout=60)
            namespace = variable(board, "kubernetes_namespace", prom)
            cluster = variable(board, "strimzi_mirror_maker_cluster_name", prom, kubernetes_namespace=namespace)
            assert (namespace, cluster) == (NAMESPACE, CLUSTER)
            empty: dict[str, str] = {}
            answered = 0
            for title, expr in panel_queries():
                if any(name in expr for name in KUBELET_ONLY):
                    continue
                query = expr.replace("$strimzi_mirror_maker_cluster_name", cluster) \
                    .replace("$kubernetes_namespace", namespace)
                try:
                    wait_until(lambda q=query: any(_number(s) for s in prom.query(q)), title, timeout=90)
                    answered += 1
                except AssertionError:
                    empty[title] = query
            assert not empty, f"panels without data: {empty}"
            assert answered >= 20, answered
            firing = prom.wait_for_alert("ConnectFailedTask", timeout=240)
            assert firing["labels"]["namespace"] == NAMESPACE
            prom.wait_for_alert("ConnectFailedConnector", timeout=60)
            failed = prom.query('kafka_connect_connector_status{status="failed"} == 1')
            assert [s["metric"]["connector"] for s in failed] == ['"backup->primary.MirrorSourceConnector"']
            running = prom.query('kafka_connect_connector_status{status="running"} == 1')
            assert [s["metric"]["connector"] for s in running] == ['"primary->backup.MirrorSourceConnector"']
        finally:
            stop.set()
            feeder.join(30)


def _number(series: dict) -> bool:
    """A sample with a number (MM2's windowed series read NaN when nothing was recorded lately)."""
    value = series.get("value", [0, "NaN"])[1]
    return value not in ("NaN", "+Inf", "-Inf")


def test_the_copied_dashboard_is_strimzis_mm2_one():
    board = json.loads(DASHBOARD.read_text())
    queries = [expr for _, expr in panel_queries()]
    assert board["title"].startswith("Strimzi") and len(queries) >= 25
    assert any("kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max" in q for q in queries)
