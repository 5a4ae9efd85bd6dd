"""Fault drills against real brokers: every record carries a sequence number (header ``seq``), something
real is broken, and the lost, re-copied and reported records are counted exactly.

- ``kill -9`` in the middle of a batch: nothing lost; the re-run resumes from what the target holds.
- retention gap (``deleteRecords`` ahead of the flow): reported with the exact count, the flow goes
  on (``report``) or stops before copying past the gap (``fail``, the process exits 1).
- a source topic deleted and re-created while stopped: the new topic is copied whole.
- a remote topic deleted on the target while running: re-created, its lost records reported.
- a flow whose query keeps failing: restarted with backoff, then ``failed``; the other flow goes on.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic
from conftest import MIRRORSPARK, running_mirrorspark, write_config
from kafka_tools import count, create_topic, lost_and_duplicated, produce, wait_for_count
from test_operations import metric
from test_spark_cluster import committed_records, flow_detail, latest, seqs
from test_topologies_and_topics import wait_until

from mirrorspark.control.admin import admin_client, topic_partitions

pytestmark = pytest.mark.broker


def numbered(start: int, stop: int, partitions: int, size: int = 100) -> list[dict]:
    return [{"partition": i % partitions, "key": str(i).encode(), "value": b"v" * size,
             "headers": [("seq", str(i).encode())]} for i in range(start, stop)]


def rest(state_dir: Path, path: str) -> str:
    url = json.loads((state_dir / "rest.json").read_text())["url"]
    with urllib.request.urlopen(f"{url}{path}", timeout=10) as response:
        return response.read().decode()


def settled_count(bootstrap: str, topic: str) -> int:
    """Records in ``topic``, 0 while it has no leader yet (just created, or its broker restarting)."""
    try:
        return count(bootstrap, topic)
    except KafkaException:
        return 0


def detail(state_dir: Path, flow: str) -> dict:
    """The REST flow detail, or {} while the process is still starting."""
    try:
        return flow_detail(state_dir, flow)
    except (OSError, ValueError):
        return {}


def delete_records_before(bootstrap: str, topic: str, offsets: dict[int, int]) -> None:
    admin = admin_client({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, p, o) for p, o in offsets.items()], request_timeout=30)
    for future in futures.values():
        future.result(30)


def replicated_once(clusters: dict[str, str], tmp_path: Path, topic: str, partitions: int, records: int,
                    extra: str = "") -> tuple[Path, Path]:
    """``topic`` with ``records`` numbered records, copied by one run of a flow that then stops;
    returns the flow's config and state dir."""
    create_topic(clusters["primary"], topic, partitions)
    produce(clusters["primary"], topic, numbered(0, records, partitions))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n{extra}")
    state = tmp_path / "state"
    with running_mirrorspark(config, state):
        wait_for_count(clusters["backup"], f"primary.{topic}", records)
    return config, state


def recreate(admin, topic: str, partitions: int) -> bool:
    """Create ``topic`` again; False while the broker still finishes deleting the old one."""
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
        return True
    except KafkaException:
        return False


def test_kill9_mid_batch_loses_nothing_and_resumes_from_the_target(clusters, unique, tmp_path):
    topic, remote = f"k9-{unique}", f"primary.k9-{unique}"
    create_topic(clusters["primary"], topic, 3)
    total, bound = 150_000, 60_000
    producer = Producer({"bootstrap.servers": clusters["primary"], "linger.ms": 20})
    for record in numbered(0, total, 3, 200):
        producer.produce(topic, **record)
        producer.poll(0) if len(producer) < 50_000 else producer.flush(30)
    assert producer.flush(60) == 0
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          f"mirrorspark.batch.max.records = {bound}\n")
    first = tmp_path / "first"
    first.mkdir()
    checkpoint = first / "flows" / "primary" / "backup" / "checkpoint"
    with (first / "run.log").open("wb") as out:
        driver = subprocess.Popen([*MIRRORSPARK, "run", str(config), "--state-dir", str(first)], stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)

    def mid_batch() -> bool:
        """A batch is half written: planned, not committed, part of it on the target."""
        if not (checkpoint / "offsets").is_dir() or not (checkpoint / "commits").is_dir():
            return False
        if latest(checkpoint, "offsets") <= latest(checkpoint, "commits"):
            return False
        try:
            return count(clusters["backup"], remote) > committed_records(checkpoint, topic) + 1_000
        except Exception:  # noqa: BLE001 - the remote topic may not exist yet
            return False

    try:
        deadline = time.monotonic() + 180
        while not mid_batch():
            assert time.monotonic() < deadline, "no batch caught in the middle of its write"
            assert driver.poll() is None, (first / "run.log").read_text()[-3000:]
            time.sleep(0.02)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(30)
    at_kill = count(clusters["backup"], remote)
    committed = committed_records(checkpoint, topic)
    interrupted = at_kill - committed  # written by the batch Spark had not committed
    assert 0 < interrupted <= bound

    with running_mirrorspark(config, first) as second:
        wait_for_count(clusters["backup"], remote, total, timeout=180)
        time.sleep(3)
        detail = flow_detail(first, "primary->backup")
        text = rest(first, "/metrics")
    landed = seqs(clusters["backup"], remote)
    lost, duplicates = lost_and_duplicated(range(total), landed)
    print(f"kill -9 drill: {total} records, {at_kill} on target at the kill, {committed} committed by Spark, "
          f"{interrupted} written by the interrupted batch; lost {len(lost)}, re-copied {duplicates}, "
          f"re-copied metric {detail['records_recopied']}")
    assert not lost
    assert duplicates == detail["records_recopied"] == 0  # resumed from the target: nothing sent twice
    assert metric(text, "mirrorspark_records_recopied_total", topic=remote) in (None, 0.0)
    assert "already on the target were not sent again" in second.output()


def test_retention_gap_is_reported_exactly_and_the_flow_goes_on(clusters, unique, tmp_path):
    topic, remote = f"gap-{unique}", f"primary.gap-{unique}"
    config, state = replicated_once(clusters, tmp_path, topic, 2, 200)
    produce(clusters["primary"], topic, numbered(200, 1_000, 2))  # 400 more per partition, offsets 100..499
    delete_records_before(clusters["primary"], topic, {0: 250, 1: 400})  # 150 and 300 never copied
    with running_mirrorspark(config, state) as mirror:
        wait_for_count(clusters["backup"], remote, 200 + 250 + 100)
        detail = wait_until(lambda: (d := flow_detail(state, "primary->backup"))["state"] == "degraded" and d,
                            "flow state degraded")
        text = rest(state, "/metrics")
        status = subprocess.run([*MIRRORSPARK, "status", "--state-dir", str(state)], capture_output=True, text=True)
    assert detail["records_lost"] == 450
    assert "DATA LOSS" in detail["error"]
    assert {(r["partition"], r["first"], r["last"], r["records"]) for r in detail["data_loss"]} == {
        (0, 100, 249, 150), (1, 100, 399, 300)}
    for partition, lost in ((0, 150), (1, 300)):
        assert metric(text, "mirrorspark_records_lost_total", topic=topic, partition=str(partition)) == lost
    assert "degraded" in status.stdout and "450" in status.stdout
    assert len([line for line in mirror.output().splitlines() if "ERROR" in line and "DATA LOSS" in line]) == 2
    landed = seqs(clusters["backup"], remote)
    expected = set(range(200)) | {i for i in range(200, 1_000) if (i % 2 == 0 and i // 2 >= 250)
                                  or (i % 2 == 1 and i // 2 >= 400)}
    assert sorted(landed) == sorted(expected)  # everything still on the source, once


def test_retention_gap_with_data_loss_fail_stops_before_the_gap(clusters, unique, tmp_path):
    topic, remote = f"gapf-{unique}", f"primary.gapf-{unique}"
    config, state = replicated_once(clusters, tmp_path, topic, 1, 100, "mirrorspark.data.loss = fail\n")
    produce(clusters["primary"], topic, numbered(100, 300, 1))
    delete_records_before(clusters["primary"], topic, {0: 150})
    done = subprocess.run([*MIRRORSPARK, "run", str(config), "--state-dir", str(state)], capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "every flow failed" in done.stderr and "mirrorspark.data.loss = fail" in done.stderr
    assert "DATA LOSS: 50 record(s)" in done.stderr
    assert count(clusters["backup"], remote) == 100  # nothing copied past the gap


def test_source_topic_recreated_while_stopped_is_copied_whole(clusters, unique, tmp_path):
    topic, remote = f"rec-{unique}", f"primary.rec-{unique}"
    config, state = replicated_once(clusters, tmp_path, topic, 2, 1_000)
    admin = admin_client({"bootstrap.servers": clusters["primary"]})
    admin.delete_topics([topic])[topic].result(30)
    wait_until(lambda: topic not in topic_partitions(admin), "source topic deletion", 30)
    wait_until(lambda: recreate(admin, topic, 2), "source topic re-creation", 60)
    produce(clusters["primary"], topic, numbered(1_000, 4_000, 2))  # more than the old topic held
    with running_mirrorspark(config, state) as mirror:
        wait_for_count(clusters["backup"], remote, 4_000)
        time.sleep(3)
    landed = seqs(clusters["backup"], remote)
    assert sorted(landed) == list(range(4_000))  # the 3,000 new records, each once
    assert "was re-created" in mirror.output()


def test_remote_topic_deleted_on_the_target_is_recreated_and_reported(clusters, unique, tmp_path):
    topic, remote = f"rdel-{unique}", f"primary.rdel-{unique}"
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, numbered(0, 600, 2))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          "refresh.topics.interval.seconds = 2\n")
    state = tmp_path / "state"
    target = admin_client({"bootstrap.servers": clusters["backup"]})
    with running_mirrorspark(config, state):
        wait_for_count(clusters["backup"], remote, 600)
        time.sleep(3)  # the topic ids were seen by a refresh
        target.delete_topics([remote])[remote].result(30)
        detail = wait_until(lambda: (d := flow_detail(state, "primary->backup"))["records_lost"] and d,
                            "the deletion reported", 60)
        wait_until(lambda: topic_partitions(target).get(remote) == 2, "remote topic re-created", 30)
        produce(clusters["primary"], topic, numbered(600, 1_000, 2))
        wait_for_count(clusters["backup"], remote, 400)
        text = rest(state, "/metrics")
    assert detail["records_lost"] == 600 and detail["state"] == "degraded"
    assert {(r["partition"], r["records"]) for r in detail["data_loss"]} == {(0, 300), (1, 300)}
    assert metric(text, "mirrorspark_records_lost_total", topic=topic, partition="0") == 300
    assert sorted(seqs(clusters["backup"], remote)) == list(range(600, 1_000))


def test_failing_flow_is_restarted_then_failed_while_the_other_goes_on(clusters, unique, tmp_path):
    big, small = f"big-{unique}", f"small-{unique}"
    admin = admin_client({"bootstrap.servers": clusters["primary"]})
    admin.create_topics([NewTopic(big, 1, 1, config={"max.message.bytes": "3000000"})])[big].result(30)
    create_topic(clusters["backup"], small, 1)
    producer = Producer({"bootstrap.servers": clusters["primary"], "message.max.bytes": 3_000_000})
    producer.produce(big, value=b"x" * 2_000_000)  # over the target producer's max.request.size
    assert producer.flush(30) == 0
    produce(clusters["backup"], small, numbered(0, 50, 1))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {big}\n"
                          f"backup->primary.enabled = true\nbackup->primary.topics = {small}\n"
                          "mirrorspark.flow.restart.attempts = 2\nmirrorspark.flow.restart.backoff.seconds = 0.5\n")
    state = tmp_path / "state"
    with running_mirrorspark(config, state) as mirror:
        failed = wait_until(lambda: (d := detail(state, "primary->backup")).get("state") == "failed" and d,
                            "the failing flow given up", 240)
        wait_for_count(clusters["primary"], f"backup.{small}", 50)
        produce(clusters["backup"], small, numbered(50, 80, 1))
        wait_for_count(clusters["primary"], f"backup.{small}", 80)  # the other flow still replicates
        other = flow_detail(state, "backup->primary")
        text = rest(state, "/metrics")
    error = failed["error"] or ""
    assert failed["restarts"] == 2 and ("RecordTooLarge" in error or "too large" in error.lower()), error
    assert other["state"] == "running"
    assert metric(text, "mirrorspark_flow_restarts_total", source="primary", target="backup") == 2
    assert metric(text, "mirrorspark_flow_state", source="primary", target="backup", state="failed") == 1
    assert "FAILED, not restarted" in mirror.output()


def test_source_then_target_broker_down_20s_under_load_loses_and_repeats_nothing(tmp_path, unique):
    """Own clusters (their only broker is stopped, so the session's clusters stay up for others)."""
    from mirrorspark.local import ClusterSpec, LocalClusters

    local = LocalClusters(tmp_path / "clusters")
    stop_feeding = threading.Event()
    started = {c.name: c.bootstrap for c in local.up([ClusterSpec("src"), ClusterSpec("dst")])}
    try:
        topic, remote = f"down-{unique}", f"src.down-{unique}"
        create_topic(started["src"], topic, 3)
        config = tmp_path / "mm2.properties"
        config.write_text(f"clusters = src, dst\nsrc.bootstrap.servers = {started['src']}\n"
                          f"dst.bootstrap.servers = {started['dst']}\nsrc->dst.enabled = true\n"
                          f"src->dst.topics = {topic}\nreplication.factor = 1\n"
                          "checkpoints.topic.replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n"
                          "heartbeats.topic.replication.factor = 1\n")
        acked: list[int] = []
        fed: list[int] = []

        def delivered(seq: int):
            def callback(err, _msg) -> None:
                if err is None:
                    acked.append(seq)
            return callback

        def feed() -> None:  # about 4,000 records/s, each acknowledged one remembered
            producer = Producer({"bootstrap.servers": started["src"], "linger.ms": 5, "enable.idempotence": True,
                                 "message.timeout.ms": 120_000})
            i = 0
            while not stop_feeding.is_set():
                for _ in range(400):
                    while True:
                        try:
                            producer.produce(topic, key=str(i).encode(), value=b"v" * 100, partition=i % 3,
                                             headers=[("seq", str(i).encode())], on_delivery=delivered(i))
                            break
                        except BufferError:  # the source broker is down: wait for room
                            producer.poll(0.5)
                    i += 1
                producer.poll(0)
                time.sleep(0.1)
            fed.append(i)
            assert producer.flush(150) == 0

        state = tmp_path / "state"
        feeder = threading.Thread(target=feed, daemon=True)
        with running_mirrorspark(config, state) as mirror:
            feeder.start()
            wait_until(lambda: settled_count(started["dst"], remote) > 10_000, "replication under load", 120)
            for name in ("dst", "src"):
                local.down([name])
                time.sleep(20)
                local.up([ClusterSpec(name)])
                time.sleep(10)
            stop_feeding.set()
            feeder.join(180)
            assert fed, "the feeder ended early"
            wait_for_count(started["dst"], remote, len(acked), timeout=240)
            time.sleep(3)
            flow = flow_detail(state, "src->dst")
        landed = seqs(started["dst"], remote)
        lost, duplicates = lost_and_duplicated(acked, landed)
        print(f"broker-down drill: {fed[0]} records sent, {len(acked)} acknowledged by the source, lost {len(lost)}, "
              f"duplicated {duplicates}, flow restarts {flow['restarts']}, state {flow['state']}")
        assert not lost and duplicates == 0
        assert flow["state"] == "running"
        assert "FAILED" not in mirror.output()
    finally:
        stop_feeding.set()
        local.down(purge=True)
