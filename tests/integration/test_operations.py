"""Issue 5 acceptance against real brokers: metrics (latency reflects an injected delay, lag goes
to 0), REST pause/resume with nothing lost, token refusal, `mirrorspark status`, and no secret of
the config in logs or REST output."""
from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from helpers.config import write_config
from helpers.kafka import count, create_topic, produce, read_all, wait_for_count
from helpers.processes import kill9, run_cli, running_mirrorspark
from helpers.records import records
from helpers.rest import metric
from helpers.waiting import wait_until

pytestmark = pytest.mark.broker


def call(url: str, token: str | None = None, method: str = "GET") -> tuple[int, str]:
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None,
                                     headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=90) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_metrics_rest_pause_resume_status_and_no_secrets(clusters, unique, tmp_path):
    topic, remote = f"ops-{unique}", f"primary.ops-{unique}"
    token, secret = f"tok-{unique}-abc", f"pw-{unique}-xyz"
    create_topic(clusters["primary"], topic, 2)
    delayed = records(100, 2, unique)
    for rec in delayed:
        rec["timestamp"] -= 60_000  # produced "a minute ago": age and latency must show it
    produce(clusters["primary"], topic, delayed)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          f"mirrorspark.rest.token = {token}\nmirrorspark.metrics.lag.interval.seconds = 1\n"
                          f"backup.ssl.truststore.password = {secret}\n")
    state = tmp_path / "state"
    with running_mirrorspark(config, state) as mirror:
        wait_for_count(clusters["backup"], remote, 100)
        url = wait_until(lambda: (state / "rest.json").exists()
                         and json.loads((state / "rest.json").read_text())["url"], "the REST address")
        labels = {"source": "primary", "target": "backup", "topic": remote, "partition": "0"}
        text = wait_until(lambda: (t := call(f"{url}/metrics")[1])
                          and metric(t, "mirrorspark_records_total", **labels) == 50
                          and metric(t, "mirrorspark_records_total", **{**labels, "partition": "1"}) == 50 and t,
                          "records of both partitions")
        mm2 = "kafka_connect_mirror_mirrorsourceconnector_"  # MM2's names, as Strimzi's exporter gives them
        assert metric(text, mm2 + "record_count", **labels) == 50
        assert metric(text, mm2 + "replication_latency_ms_min", **labels) >= 60_000
        assert metric(text, mm2 + "record_age_ms_max", **labels) >= 60_000
        assert metric(text, "mirrorspark_bytes_total", **labels) > 0
        per_topic = {"source": "primary", "target": "backup", "topic": remote}  # histograms: per remote topic
        assert metric(text, "mirrorspark_replication_latency_seconds_count", **per_topic) == 100
        assert metric(text, "mirrorspark_replication_latency_seconds_bucket", **per_topic, le="30") == 0
        assert metric(text, "mirrorspark_record_age_seconds_sum", **per_topic) >= 100 * 60
        assert metric(text, "mirrorspark_flow_running", source="primary", target="backup", role="writer") == 1
        assert metric(text, "jvm_threads_current", jvm="driver") > 0  # sampled from the driver JVM
        assert 'mirrorspark_build_info{' in text
        assert call(f"{url}/ready")[0] == 200 and call(f"{url}/health")[0] == 200  # open, like /metrics
        source_labels = {"source": "primary", "target": "backup", "source_topic": topic, "partition": "0"}
        text = wait_until(lambda: (t := call(f"{url}/metrics")[1])
                          and metric(t, "mirrorspark_lag_records", **source_labels) == 0 and t,
                          "lag 0 once caught up")
        assert metric(text, "mirrorspark_lag_seconds", **source_labels) == 0

        assert call(f"{url}/flows")[0] == 401  # token set: unauthenticated calls refused
        assert call(f"{url}/flows", token="wrong")[0] == 401
        assert call(f"{url}/flows/primary->backup/pause", method="POST")[0] == 401
        assert call(f"{url}/flows/nope->backup", token=token)[0] == 404
        assert call(f"{url}/offsets/translate?group=g", token=token)[0] == 422  # source/target missing

        code, body = call(f"{url}/flows/primary->backup/pause", token=token, method="POST")
        assert code == 200 and json.loads(body)["state"] == "paused", body
        more = records(60, 2, f"{unique}-after")
        produce(clusters["primary"], topic, more)

        def topic_lag() -> tuple[dict, int, float]:
            detail = json.loads(call(f"{url}/flows/primary->backup", token=token)[1])
            mine = [lag for lag in detail["lag"] if lag["topic"] == topic]
            return detail, sum(lag["offsets"] for lag in mine), max(lag["seconds"] for lag in mine)

        lagging, _, seconds = wait_until(lambda: (t := topic_lag())[1] == 60 and t, "lag of 60 while paused")
        assert lagging["state"] == "paused" and seconds > 0
        time.sleep(5)
        assert count(clusters["backup"], remote) == 100  # paused: nothing arrives

        token_file = tmp_path / "token"
        token_file.write_text(token + "\n")
        shown = run_cli("status", "--state-dir", str(state), "--token-file", str(token_file))
        assert shown.returncode == 0 and "primary->backup" in shown.stdout and "paused" in shown.stdout, shown
        refused = run_cli("status", "--state-dir", str(state))
        assert refused.returncode == 1 and "401" in refused.stderr

        code, body = call(f"{url}/flows/primary->backup/resume", token=token, method="POST")
        assert code == 200 and json.loads(body)["state"] == "running", body
        wait_for_count(clusters["backup"], remote, 160)
        detail, _, _ = wait_until(lambda: (t := topic_lag())[1] == 0 and t, "lag 0 after resume")
        mine = [p for p in detail["partitions"] if p["topic"] == remote]
        assert sum(p["records"] for p in mine) == 160 and detail["records_recopied"] == 0
        outputs = [call(f"{url}/{path}", token=token)[1] for path in ("config", "flows", "flows/primary->backup")]
        outputs.append(call(f"{url}/metrics")[1])
        assert "[hidden]" in outputs[0]
    log = mirror.output()
    assert {r.key for r in read_all(clusters["backup"], remote)} == {r["key"] for r in delayed + more}
    for text in [log, shown.stdout, *outputs]:
        assert token not in text and secret not in text
    assert not (state / "rest.json").exists()  # removed on a clean stop


def test_state_of_other_clusters_is_refused(clusters, unique, tmp_path):
    """A state dir whose offsets belong to another cluster (re-created, copied) must not be resumed:
    Spark would start at offsets that mean nothing there and skip records silently."""
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = st-{unique}\n")
    folder = tmp_path / "state" / "flows" / "primary" / "backup"
    folder.mkdir(parents=True)
    (folder / "clusters.json").write_text(json.dumps({"primary": "someOtherCluster", "backup": "x"}))
    done = run_cli("run", str(config), "--state-dir", str(tmp_path / "state"))
    assert done.returncode == 2, done.stderr
    assert "belongs to other clusters" in done.stderr and "primary was cluster someOtherCluster" in done.stderr
    assert not (tmp_path / "state" / "flows" / "primary" / "backup" / "checkpoint").exists()


def test_a_stop_signal_while_the_spark_jvm_starts_stops_the_process(clusters, unique, tmp_path):
    """SIGTERM sent to the process group as soon as Spark's JVM exists, before it answers: the process
    stops by itself (mirrorspark used to ignore SIGTERM for the JVM's start, and a stop that came then was
    lost: the process replicated on), and no JVM of it is left."""
    import signal
    import subprocess

    from helpers.processes import MIRRORSPARK

    topic = f"stop-early-{unique}"
    create_topic(clusters["primary"], topic, 1)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n")
    log = (tmp_path / "run.log").open("wb")
    proc = subprocess.Popen([*MIRRORSPARK, "run", str(config), "--state-dir", str(tmp_path / "state")],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        jvm = wait_until(lambda: _spark_jvm(proc.pid), timeout=120, what="Spark's JVM to be started")
        os.killpg(proc.pid, signal.SIGTERM)
        code = proc.wait(120)
    finally:
        if proc.poll() is None:
            kill9(proc)
            proc.wait(30)
    output = (tmp_path / "run.log").read_text(errors="replace")
    assert code == 0, output[-3000:]
    wait_until(lambda: not os.path.exists(f"/proc/{jvm}"), timeout=30, what="the Spark JVM to exit")


def _spark_jvm(pid: int) -> int | None:
    """Spark's driver JVM (spark-submit's java) among ``pid``'s descendants, once it runs."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    for child in parents:
        ancestor = parents.get(child)
        while ancestor not in (None, 0, 1, pid):
            ancestor = parents.get(ancestor)
        if ancestor != pid:
            continue
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if cmdline.startswith(("java", "/")) and "SparkSubmit" in cmdline and "java" in cmdline.split("\0")[0]:
            return child
    return None
