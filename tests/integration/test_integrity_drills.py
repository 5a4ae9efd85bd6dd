"""Fault drills against real brokers: every record carries a sequence number (header ``seq``), something
real is broken, and the lost, re-copied and reported records are counted exactly.

- ``kill -9`` in the middle of a batch: nothing lost; the re-run resumes from what the target holds.
- retention gap (``deleteRecords`` ahead of the flow): reported with the exact count, the flow goes
  on (``report``) or stops before copying past the gap (``fail``, the process exits 1).
- a source topic deleted and re-created while stopped: the new topic is copied whole.
- a remote topic deleted on the target while running: re-created and refilled from the source; what
  the source lost meanwhile is reported, and failing a group over into that range is refused.
- a flow whose query keeps failing: restarted with backoff, then ``failed``; the other flow goes on.
"""
from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic
from helpers.config import TRIGGERS, trigger_settings, write_config
from helpers.kafka import (
    count,
    create_topic,
    delete_and_recreate,
    lost_and_duplicated,
    produce,
    seqs,
    wait_for_count,
    wait_for_every_seq,
)
from helpers.offsets import commit_on
from helpers.processes import MIRRORSPARK, kill9_when, running_mirrorspark
from helpers.records import numbered
from helpers.rest import detail, flow_detail, metric, rest
from helpers.spark_state import committed_records, latest
from helpers.waiting import wait_until

from mirrorspark.control.admin import admin_client, topic_partitions

# Fault drills of minutes each: `make drills` (CI runs them after `make test`).
pytestmark = [pytest.mark.broker, pytest.mark.long]


def settled_count(bootstrap: str, topic: str) -> int:
    """Records in ``topic``, 0 while it has no leader yet (just created, or its broker restarting)."""
    try:
        return count(bootstrap, topic)
    except KafkaException:
        return 0


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

    kill9_when(driver, mid_batch, first / "run.log", "no batch caught in the middle of its write")
    at_kill = count(clusters["backup"], remote)
    committed = committed_records(checkpoint, topic)
    interrupted = at_kill - committed  # written by the batch Spark had not committed
    assert 0 < interrupted <= bound

    with running_mirrorspark(config, first) as second:
        wait_for_every_seq(clusters["backup"], remote, total, timeout=180)
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
        # Each partition's gap is counted after the batch that copies past it: wait for both.
        detail = wait_until(lambda: (d := flow_detail(state, "primary->backup"))["state"] == "degraded"
                            and d["records_lost"] >= 450 and d, "flow state degraded with both gaps counted")
        text = rest(state, "/metrics")
        status = subprocess.run([*MIRRORSPARK, "status", "--state-dir", str(state)], capture_output=True, text=True)
    assert detail["records_lost"] == 450
    assert "DATA LOSS" in detail["error"]
    assert {(r["partition"], r["first"], r["last"], r["records"]) for r in detail["data_loss"]} == {
        (0, 100, 249, 150), (1, 100, 399, 300)}
    for partition, lost in ((0, 150), (1, 300)):
        assert metric(text, "mirrorspark_records_lost_total", source_topic=topic, partition=str(partition)) == lost
    assert "degraded" in status.stdout and "450" in status.stdout
    assert len([line for line in mirror.output().splitlines() if "ERROR" in line and "DATA LOSS" in line]) == 2
    landed = seqs(clusters["backup"], remote)
    expected = set(range(200)) | {i for i in range(200, 1_000) if (i % 2 == 0 and i // 2 >= 250)
                                  or (i % 2 == 1 and i // 2 >= 400)}
    assert sorted(landed) == sorted(expected)  # everything still on the source, once


@TRIGGERS
def test_retention_gap_with_data_loss_fail_stops_before_the_gap(clusters, unique, tmp_path, trigger):
    """Real-time mode meets the gap before its query starts (Spark's reader cannot skip one), micro-batches in
    a batch: either way the flow fails alone, the process says so and exits 1, the gap counted."""
    topic, remote = f"gapf-{unique}", f"primary.gapf-{unique}"
    config, state = replicated_once(clusters, tmp_path, topic, 1, 100,
                                    "mirrorspark.data.loss = fail\n" + trigger_settings(trigger))
    produce(clusters["primary"], topic, numbered(100, 300, 1))
    delete_records_before(clusters["primary"], topic, {0: 150})
    done = subprocess.run([*MIRRORSPARK, "run", str(config), "--state-dir", str(state)], capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "every flow failed" in done.stderr and "mirrorspark.data.loss = fail" in done.stderr, done.stderr[-3000:]
    assert "FAILED, not restarted (mirrorspark.data.loss = fail)" in done.stderr
    assert "DATA LOSS: 50 record(s)" in done.stderr
    assert count(clusters["backup"], remote) == 100  # nothing copied past the gap


def test_source_topic_recreated_while_stopped_is_copied_whole(clusters, unique, tmp_path):
    topic, remote = f"rec-{unique}", f"primary.rec-{unique}"
    config, state = replicated_once(clusters, tmp_path, topic, 2, 1_000)
    admin = admin_client({"bootstrap.servers": clusters["primary"]})
    delete_and_recreate(admin, topic, 2)
    produce(clusters["primary"], topic, numbered(1_000, 4_000, 2))  # more than the old topic held
    with running_mirrorspark(config, state) as mirror:
        wait_for_count(clusters["backup"], remote, 4_000)
        time.sleep(3)
    landed = seqs(clusters["backup"], remote)
    assert sorted(landed) == list(range(4_000))  # the 3,000 new records, each once
    assert "was re-created" in mirror.output()


@pytest.mark.parametrize("new", [pytest.param(600, id="fewer-than-before"),
                                 pytest.param(1_600, id="grown-past-the-old-topic", marks=pytest.mark.long)])
def test_a_start_without_state_after_the_source_topic_was_recreated_copies_the_new_topic_once(
        clusters, unique, tmp_path, new):
    """Another instance (no state: a standby's own folder, a new host) starts after the source topic was
    deleted and made again while nobody copied it: the remote topic holds the old topic's copies and
    no offset sync of the new one. Either the new topic's end is below the newest sync's source offset
    (its offsets went back), or it has grown past it and the records at the syncs' source offsets are
    others, written after the copies: it is copied from its first record, once, and the old copies stay
    as they are. Before, the start was refused (no sync anchors the remote topic's last records)."""
    topic, remote = f"recnostate-{unique}", f"primary.recnostate-{unique}"
    config, _ = replicated_once(clusters, tmp_path, topic, 2, 1_000)
    admin = admin_client({"bootstrap.servers": clusters["primary"]})
    delete_and_recreate(admin, topic, 2)
    produce(clusters["primary"], topic, numbered(1_000, 1_000 + new, 2))  # the old topic held 500 per partition
    total = 1_400 + new
    elsewhere = tmp_path / "another-host"
    with running_mirrorspark(config, elsewhere) as mirror:
        wait_for_count(clusters["backup"], remote, 1_000 + new)
        produce(clusters["primary"], topic, numbered(1_000 + new, total, 2))  # and what comes after, as usual
        wait_for_count(clusters["backup"], remote, total)
        time.sleep(3)  # anything copied twice would land by now
        detail = flow_detail(elsewhere, "primary->backup")
    landed = seqs(clusters["backup"], remote)
    lost, duplicated = lost_and_duplicated(range(total), landed)
    print(f"state lost after a source re-creation ({new} new records): lost {len(lost)}, duplicated {duplicated}")
    assert not lost and duplicated == 0
    for partition in (0, 1):  # the old topic's copies, then the new topic's, each in order
        assert [seq for seq in landed if seq % 2 == partition] == list(range(partition, total, 2))
    assert "source topic re-created since the copy's newest offset sync" in mirror.output()
    assert detail["records_recopied"] == 0 and detail["records_lost"] == 0


def test_remote_topic_deleted_is_refilled_and_what_the_source_lost_meanwhile_is_reported(clusters, unique, tmp_path):
    """The remote topic deleted on the target after the source lost its first 100 records per partition
    to retention: the re-created topic is refilled with everything the source still has, in order, then
    the new records; the 100 per partition are reported lost, and failing over a group positioned among
    them is refused (it would skip them) unless the user allows it."""
    topic, remote, group = f"rdel-{unique}", f"primary.rdel-{unique}", f"rdel-group-{unique}"
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, numbered(0, 600, 2))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          "refresh.topics.interval.seconds = 2\nemit.checkpoints.interval.seconds = 1\n")
    state = tmp_path / "state"
    target = admin_client({"bootstrap.servers": clusters["backup"]})
    commit_on(clusters["primary"], group, {(topic, 0): 50, (topic, 1): 50})
    with running_mirrorspark(config, state) as mirror:
        wait_for_count(clusters["backup"], remote, 600)
        time.sleep(3)  # the topic ids were seen by a refresh
        delete_records_before(clusters["primary"], topic, {0: 100, 1: 100})  # seqs 0..199 gone from the source
        target.delete_topics([remote])[remote].result(30)
        wait_until(lambda: flow_detail(state, "primary->backup")["records_lost"], "the deletion reported", 60)
        wait_until(lambda: topic_partitions(target).get(remote) == 2, "remote topic re-created", 60)
        produce(clusters["primary"], topic, numbered(600, 1_000, 2))
        wait_for_count(clusters["backup"], remote, 800, timeout=120)
        # Each partition's loss is counted when its refill starts (in real-time mode, at a batch end each).
        detail = wait_until(lambda: (d := flow_detail(state, "primary->backup"))["state"] == "degraded"
                            and d["records_lost"] >= 200 and d, "the flow running again, degraded by both losses", 60)
        text = rest(state, "/metrics")
        plan = wait_until(lambda: (r := failover(config, state, group)).returncode == 0 and
                          (body := json.loads(r.stdout))["partitions"] and body, "checkpoints of the group", 60)
        refused = failover(config, state, group, "--execute")
        output = mirror.output()
    assert detail["records_lost"] == 200 and detail["state"] == "degraded"
    assert {(r["partition"], r["first"], r["last"], r["records"]) for r in detail["data_loss"]} == {
        (0, 0, 99, 100), (1, 0, 99, 100)}
    assert metric(text, "mirrorspark_records_lost_total", source_topic=topic, partition="0") == 100
    landed = seqs(clusters["backup"], remote)
    for partition in (0, 1):
        in_partition = [seq for seq in landed if seq % 2 == partition]
        assert in_partition == list(range(200 + partition, 1_000, 2))  # refilled in order, then the new ones
    assert {row["partition"]: row["lost"] for row in plan["partitions"]} == {0: 100, 1: 100}
    assert refused.returncode == 1 and "--allow-loss" in refused.stderr and "Traceback" not in refused.stderr
    assert "is refilled from" in output


def failover(config: Path, state: Path, group: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*MIRRORSPARK, "failover", "--config", str(config), "--group", group, "--from", "primary",
                           "--to", "backup", "--state-dir", str(state), "--json", *extra],
                          capture_output=True, text=True, timeout=120)


def test_lost_state_resumes_from_the_target_and_copies_nothing_twice(clusters, unique, tmp_path):
    """The state folder lost (a new host, another working directory) while the remote topic holds the
    copy: the flow resumes after the last record already on the target (its offset syncs and a
    record-by-record comparison), not from the source's beginning."""
    topic, remote = f"lost-{unique}", f"primary.lost-{unique}"
    config, _ = replicated_once(clusters, tmp_path, topic, 2, 10_000)
    produce(clusters["primary"], topic, numbered(10_000, 12_000, 2))  # copied after the restart
    elsewhere = tmp_path / "another-host"
    with running_mirrorspark(config, elsewhere) as mirror:
        wait_for_count(clusters["backup"], remote, 12_000)
        time.sleep(3)  # anything copied twice would land by now
        detail = flow_detail(elsewhere, "primary->backup")
    lost, duplicated = lost_and_duplicated(range(12_000), seqs(clusters["backup"], remote))
    print(f"lost state drill: lost {len(lost)}, duplicated {duplicated}")
    assert not lost and duplicated == 0
    assert "resumes after the last record already on the target" in mirror.output()
    assert detail["records_recopied"] == 0 and detail["records_lost"] == 0


def test_a_start_without_state_next_to_records_no_sync_explains_is_refused_until_a_fresh_copy(
        clusters, unique, tmp_path):
    """The remote topic holds records no offset sync of this flow anchors (written by another tool, or
    by a replicator without offset syncs): where the copy stopped cannot be established, so the start
    is refused, naming the state location and the partition, until --fresh-copy."""
    topic, remote = f"lostn-{unique}", f"primary.lostn-{unique}"
    create_topic(clusters["primary"], topic, 1)
    produce(clusters["primary"], topic, numbered(0, 500, 1))
    create_topic(clusters["backup"], remote, 1)
    produce(clusters["backup"], remote, numbered(10_000, 10_300, 1))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n")
    state = tmp_path / "state"
    done = subprocess.run([*MIRRORSPARK, "run", str(config), "--state-dir", str(state)], capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 2, done.stderr[-3000:]
    assert str(state / "flows" / "primary" / "backup") in done.stderr and f"{topic}[0] (300 record(s))" in \
        done.stderr and "--fresh-copy" in done.stderr and "Traceback" not in done.stderr
    assert count(clusters["backup"], remote) == 300  # nothing copied
    with running_mirrorspark(config, state, "--fresh-copy") as mirror:
        wait_for_count(clusters["backup"], remote, 800)
    assert "copies every source record again" in mirror.output()
    assert sorted(seqs(clusters["backup"], remote)) == [*range(500), *range(10_000, 10_300)]


def test_failing_flow_is_restarted_then_failed_while_the_other_goes_on(clusters, unique, tmp_path):
    bad, small = f"keyless-{unique}", f"small-{unique}"
    create_topic(clusters["primary"], bad, 1)
    # The remote topic already exists on the target, compacted: it refuses every record without a key
    # (a non-retriable error from the broker in every batch); config sync is told to leave it.
    target = admin_client({"bootstrap.servers": clusters["backup"]})
    target.create_topics([NewTopic(f"primary.{bad}", 1, 1, config={"cleanup.policy": "compact"})])[
        f"primary.{bad}"].result(30)
    produce(clusters["primary"], bad, [{"partition": 0, "value": b"no key"}])
    create_topic(clusters["backup"], small, 1)
    produce(clusters["backup"], small, numbered(0, 50, 1))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {bad}\n"
                          "primary->backup.config.properties.exclude = cleanup\\.policy\n"
                          f"backup->primary.enabled = true\nbackup->primary.topics = {small}\n"
                          "mirrorspark.flow.restart.attempts = 2\nmirrorspark.flow.restart.backoff.seconds = 0.5\n")
    state = tmp_path / "state"
    with running_mirrorspark(config, state, exit_code=1) as mirror:  # stopped with a failed flow: not clean
        failed = wait_until(lambda: (d := detail(state, "primary->backup")).get("state") == "failed" and d,
                            "the failing flow given up", 240)
        wait_for_count(clusters["primary"], f"backup.{small}", 50)
        produce(clusters["backup"], small, numbered(50, 80, 1))
        wait_for_count(clusters["primary"], f"backup.{small}", 80)  # the other flow still replicates
        other = flow_detail(state, "backup->primary")
        text = rest(state, "/metrics")
    error = failed["error"] or ""
    assert failed["restarts"] == 2 and "without key" in error, error
    assert other["state"] == "running"
    assert metric(text, "mirrorspark_flow_restarts_total", source="primary", target="backup") == 2
    assert metric(text, "mirrorspark_flow_state", source="primary", target="backup", state="failed") == 1
    assert "FAILED, not restarted" in mirror.output()
    assert "1 of 2 flows failed: primary->backup" in mirror.output()


@pytest.mark.long
def test_source_then_target_down_an_instance_restarted_during_each_outage_loses_and_repeats_nothing(
        tmp_path, unique):
    """A regional outage: the source's only broker stopped for about 75 s, longer than the stall timeout
    (a task waiting for due records fails rather than skip them) and than restart.attempts = 1 could
    absorb; the instance is restarted in the middle of it; then the target's broker stopped, the
    instance stopped (SIGTERM) during that outage, which must end within mirrorspark.shutdown.timeout.ms,
    and started again while the target is still down. The flow stays up, degraded while retrying (the
    restarted instances too: they wait for the source, or for the target where their lease lives,
    instead of exiting), and resumes where it was. Own clusters (their only broker is stopped, so the
    session's clusters stay up for others)."""
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
                          "heartbeats.topic.replication.factor = 1\n"
                          "mirrorspark.flow.restart.attempts = 1\nmirrorspark.source.stall.timeout.ms = 10000\n"
                          "mirrorspark.shutdown.timeout.ms = 20000\n")
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
        seen: dict[str, list[str]] = {"src": [], "restarted": [], "dst": [], "target restart": []}

        def watch(mirror, name: str, seconds: float, until_seen: str | None = None) -> None:
            until = time.monotonic() + seconds
            while time.monotonic() < until:
                now = detail(state, "src->dst")
                seen[name].append(f"{now.get('state')}: {now.get('error')}")
                assert mirror.proc.poll() is None, mirror.output()[-3000:]
                if until_seen is not None and seen[name][-1].startswith(until_seen):
                    return
                time.sleep(2)

        # Stopped during the source's outage: a restart attempt of the flow may be waiting on the source
        # then, and the stop ends by mirrorspark.shutdown.timeout.ms (exit 143) rather than wait for it.
        with running_mirrorspark(config, state, exit_code=(0, 143)) as mirror:
            feeder.start()
            wait_until(lambda: settled_count(started["dst"], remote) > 10_000, "replication under load", 120)
            # The flow has copied before (the restart below relies on it): a batch is recorded, which in
            # real-time mode is at its end.
            checkpoint = state / "flows" / "src" / "dst" / "checkpoint"
            wait_until(lambda: (checkpoint / "commits").is_dir() and latest(checkpoint, "commits") >= 0,
                       "a batch recorded", 60)
            local.down(["src"])
            watch(mirror, "src", 50)
            first_output = mirror.output()
            first = mirror
        if first.proc.returncode == 143:
            assert "did not finish within 20 s" in first.output(), first.output()[-3000:]
        # The instance restarted in the middle of the outage (a pod moved, a host rebooted): it must
        # come up and wait for the source, not exit on it.
        # Then the target's cluster is lost, and the instance is stopped during that outage (a pod moved):
        # its batch, offset syncs and lease group cannot end cleanly, and the stop must not hang on them.
        with running_mirrorspark(config, state, exit_code=(0, 143)) as mirror:
            watch(mirror, "restarted", 90, until_seen="degraded: retrying since")  # its REST up, the flow waiting
            local.up([ClusterSpec("src")])
            time.sleep(10)
            local.down(["dst"])
            time.sleep(15)
            stopping = time.monotonic()
            stop_code = mirror.stop(timeout=60)
            stop_took = time.monotonic() - stopping
            middle_output = mirror.output()
        # The instance starts while the target is still down: the lease and claims live on the target,
        # so it waits for it, degraded, instead of exiting.
        with running_mirrorspark(config, state) as mirror:
            watch(mirror, "target restart", 90, until_seen="degraded: retrying since")
            watch(mirror, "dst", 10)
            local.up([ClusterSpec("dst")])
            time.sleep(10)
            stop_feeding.set()
            feeder.join(180)
            assert fed, "the feeder ended early"
            wait_for_count(started["dst"], remote, len(acked), timeout=240)
            time.sleep(3)
            flow = flow_detail(state, "src->dst")
            second_output = mirror.output()
        landed = seqs(started["dst"], remote)
        # The feeder's producer may itself write a record twice on the source when its requests time out
        # during the outage (an idempotent producer that bumps its epoch re-sends what was in flight): the
        # flow must copy what the source holds, each record once, so doubles are counted against it.
        on_source, on_target = Counter(seqs(started["src"], topic)), Counter(landed)
        lost, _ = lost_and_duplicated(acked, landed)
        doubled = sum(max(0, count - on_source[seq]) for seq, count in on_target.items())
        missing = sum(max(0, count - on_target[seq]) for seq, count in on_source.items())
        source_doubles = sum(count - 1 for count in on_source.values())
        degraded = [line for line in seen["src"] if line.startswith("degraded: retrying since")]
        waiting = [line for line in seen["restarted"] if line.startswith("degraded: retrying since")]
        waiting_target = [line for line in seen["target restart"] if line.startswith("degraded: retrying since")]
        print(f"broker-down drill: {fed[0]} records sent, {len(acked)} acknowledged by the source, lost {len(lost)}, "
              f"on the source twice {source_doubles}, copied twice {doubled}, source records missing on the target "
              f"{missing}, flow restarts {flow['restarts']}, state {flow['state']}; during the source "
              f"outage: {degraded[-1:] or seen['src'][-1:]}; restarted during it: "
              f"{waiting[-1:] or seen['restarted'][-1:]}; restarted during the target's: "
              f"{waiting_target[-1:] or seen['target restart'][-1:]}; stopped during the target's outage in "
              f"{stop_took:.1f} s (exit {stop_code})")
        assert not lost and doubled == 0 and missing == 0
        assert stop_took < 20 + 15, middle_output[-3000:]  # the shutdown timeout, and the JVM's own exit
        if stop_code == 143:
            assert "did not finish within 20 s" in middle_output
        assert flow["state"] == "running"
        assert degraded, seen["src"]
        assert waiting, seen["restarted"]
        assert waiting_target, seen["target restart"]
        # Retried, never failed (restart.attempts = 1 would fail it at its second failure). An attempt waits
        # for the source until a lookup times out, so a loaded machine sees 1 or 2 retries in the 50 s.
        # A real-time query does not fail: its readers wait for the source, and the lag probe says it.
        retries = re.findall(r"degraded, retrying in [\d.]+ s \(retry (\d+)", first_output)
        if "real-time mode (" in first_output:
            assert "'src' does not answer; the query waits for it" in first_output, first_output[-3000:]
        else:
            assert retries, first_output[-3000:]
        for output in (first_output, middle_output, second_output):
            assert "FAILED" not in output
            assert "the rest of this batch's range is skipped" not in output
    finally:
        stop_feeding.set()
        local.down(purge=True)
