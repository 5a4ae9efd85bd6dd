"""Coordination between instances under faults, against real brokers (issue 42, findings 5 and 7).

Two deployments of one cluster pair in separate lease groups restart in turn without disturbing
each other's state; a remote topic deleted after a takeover has the copies of its source topic's
earlier generation, seen by the instance that wrote before, reported lost; a writer stopped
mid-backlog on a LogAppendTime target has each late copy the new writer made too counted, including
copies made after it left. Every record carries a sequence number (header ``seq``), so the target
is counted exactly.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
from helpers.config import write_config
from helpers.kafka import (
    create_topic,
    lost_and_duplicated,
    produce,
    produce_backlog,
    recreate,
    seqs,
    wait_for_count,
    wait_for_every_seq,
)
from helpers.processes import java_of, kill9, start, writer_and_standby
from helpers.rest import flow_detail, recopied, said_copied_twice, wait_role
from helpers.waiting import wait_until

from mirrorspark.control.admin import admin_client, topic_partitions

pytestmark = pytest.mark.broker

FLOW = "primary->backup"


def _produce(bootstrap: str, topic: str, first: int, count: int) -> None:
    """Records ``first`` .. ``first + count - 1``, numbered in header ``seq``."""
    produce(bootstrap, topic, [{"key": str(i).encode(), "value": b"v" * 100, "headers": [("seq", str(i).encode())]}
                               for i in range(first, first + count)])


def _stop(proc: subprocess.Popen, state: Path) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(90) == 0, (state / "run.log").read_text(errors="replace")[-3000:]


@pytest.mark.long
def test_deployments_in_separate_lease_groups_restart_without_setting_each_others_state_aside(
        clusters, unique, tmp_path):
    """Finding 7. Two deployments copy different topics between the same clusters, each in its own
    lease group, with offset syncs off (so a state set aside cannot be recovered from the target: the
    start is refused). Each restarts after the other wrote its claim; both resume from their own state."""
    deployments = {}
    for name in ("east", "west"):
        topic = f"cf-{name}-{unique}"
        create_topic(clusters["primary"], topic, 1)
        config = write_config(tmp_path / f"{name}.properties", clusters,
                              f"{FLOW}.enabled = true\n{FLOW}.topics = {topic}\n"
                              f"{FLOW}.emit.offset-syncs.enabled = false\n"
                              f"mirrorspark.flow.lease.group = mirrorspark.{name}-{unique}\n")
        # no offset syncs: their topic's replication factor would contradict that (refused at start)
        config.write_text(config.read_text().replace("offset-syncs.topic.replication.factor = 1\n", ""))
        deployments[name] = (topic, f"primary.{topic}", config, tmp_path / name)
    running: dict[str, subprocess.Popen] = {}
    try:
        for name, (topic, remote, config, state) in deployments.items():
            _produce(clusters["primary"], topic, 0, 500)
            running[name] = start(config, state)
            wait_role(state, FLOW, "writer", 120)
            wait_for_count(clusters["backup"], remote, 500)
        for name, (topic, remote, config, state) in deployments.items():  # each restarts after the other claimed
            _stop(running.pop(name), state)
            _produce(clusters["primary"], topic, 500, 500)
            running[name] = start(config, state)
            wait_role(state, FLOW, "writer", 120)  # before the fix: the start is refused and the process exits
            wait_for_count(clusters["backup"], remote, 1000)
        time.sleep(3)  # anything copied twice would land by now
        for name, (_topic, remote, _config, state) in deployments.items():
            landed = seqs(clusters["backup"], remote)
            lost, duplicated = lost_and_duplicated(range(1000), landed)
            log = (state / "run.log").read_text(errors="replace")
            print(f"{name}: {len(landed)} on the target, lost {len(lost)}, duplicated {duplicated}")
            assert not lost and not duplicated, (name, sorted(lost)[:20], duplicated)
            assert "set aside" not in log, log[-4000:]
        for name, (_topic, _remote, _config, state) in deployments.items():
            _stop(running.pop(name), state)
    finally:
        for proc in running.values():
            if proc.poll() is None:
                kill9(proc)


@pytest.mark.long
def test_a_writer_stopped_mid_backlog_on_a_log_append_time_target_counts_each_copy_made_twice(
        clusters, unique, tmp_path):
    """Finding 5. The remote topic stamps records when they land (LogAppendTime, set on the target:
    never synced from the source). The writer's JVM is stopped mid-backlog and runs again
    as soon as the standby writes, while the standby is still copying: the late sends and the
    standby's copies of the same source records differ in timestamp, and some copies are made after
    the old writer left. Whether the stop catches records in the producer is chance; each one the
    standby copied too must be counted, within the search window (delivery.timeout.ms 40 s + the
    10 s lease timeout)."""
    topic, remote = f"cf-lat-{unique}", f"primary.cf-lat-{unique}"
    total = 300_000
    create_topic(clusters["primary"], topic, 2)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"{FLOW}.enabled = true\n{FLOW}.topics = {topic}\n"
                          f"mirrorspark.flow.lease.group = cf-lat-{unique}\n"
                          "backup.producer.delivery.timeout.ms = 40000\n")
    first, second = tmp_path / "first", tmp_path / "second"
    with writer_and_standby(config, first, second, FLOW) as (a, _):
        target = admin_client({"bootstrap.servers": clusters["backup"]})
        deadline = time.monotonic() + 60
        while remote not in target.list_topics(timeout=10).topics:  # made by the writer at its start
            assert time.monotonic() < deadline, f"{remote} was not created"
            time.sleep(0.5)
        resource = ConfigResource("TOPIC", remote, incremental_configs=[ConfigEntry(
            "message.timestamp.type", "LogAppendTime", incremental_operation=AlterConfigOpType.SET)])
        target.incremental_alter_configs([resource])[resource].result(30)  # never synced from the source
        produce_backlog(clusters["primary"], topic, total, partitions=2)
        wait_for_count(clusters["backup"], remote, total // 10, timeout=120)
        jvm = java_of(a.pid)
        os.kill(jvm, signal.SIGSTOP)  # mid-copy: records handed to the producer, not yet sent
        wait_role(second, FLOW, "writer", 90)
        os.kill(jvm, signal.SIGCONT)  # at once: the standby has not copied the backlog yet
        wait_role(first, FLOW, "standby", 60)
        landed = wait_for_every_seq(clusters["backup"], remote, total, timeout=240)
        lost, duplicated = lost_and_duplicated(list(range(total)), landed)
        deadline = time.monotonic() + 90  # the window (50 s) and a search
        while recopied(first, remote) < duplicated and time.monotonic() < deadline:
            time.sleep(1)
        reported = recopied(first, remote)
        log_a = (first / "run.log").read_text(errors="replace")
        print(f"LogAppendTime backlog drill: {total} records, {len(landed)} on the target, lost {len(lost)}, "
              f"duplicated {duplicated}, reported by the stopped writer {reported}")
        assert not lost and duplicated == reported, (sorted(lost)[:20], duplicated, reported, log_a[-3000:])
        assert (duplicated > 0) == said_copied_twice(log_a, remote), log_a[-4000:]


def test_older_copies_are_kept_on_the_target_beside_the_claims(clusters, unique):
    """What one instance saw of a remote topic's earlier generations is read by another from the target,
    deleted with a tombstone, and leaves the flow's claims as they were."""
    from mirrorspark.coordination.claims import Claim, Claims, SharedOlderCopies

    conf = {"bootstrap.servers": clusters["backup"]}
    claims = Claims(admin_client(conf), conf)
    claims.ensure_topic()
    flow = f"primary->backup-{unique}"
    claim = Claim(flow, "i1", "host", 1, "/state", 1.0, "g")
    claims.write(claim)
    mine = SharedOlderCopies(claims, flow=flow, group="g")
    other_group = SharedOlderCopies(Claims(admin_client(conf), conf), flow=flow, group="other")
    entry = {"id": "R1", "generations": [{"source_id": "S1", "ends": {"0": 100}}]}
    mine.write("primary.t", entry)
    assert SharedOlderCopies(Claims(admin_client(conf), conf), flow=flow, group="g").read("primary.t") == entry
    assert other_group.read("primary.t") is None  # another deployment's remote topics are its own
    assert claims.last(flow=flow, group="g") == claim
    mine.write("primary.t", None)
    assert mine.read("primary.t") is None
    assert claims.last(flow=flow, group="g") == claim


@pytest.mark.long
def test_a_remote_topic_deleted_after_a_takeover_reports_the_earlier_generations_copies(clusters, unique, tmp_path):
    """The ninth soak run: the source topic was re-created while one instance wrote, the remote topic
    deleted after the other had taken over without its state; the copies of the first generation were
    gone from both clusters and only the first instance knew of them (112,616 lost, 2 reported). What it
    saw is kept on the target now, and the instance writing when the remote topic goes reports it."""
    topic, remote = f"cf-gen-{unique}", f"primary.cf-gen-{unique}"
    create_topic(clusters["primary"], topic, 1)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"{FLOW}.enabled = true\n{FLOW}.topics = {topic}\n"
                          f"mirrorspark.flow.lease.group = cf-gen-{unique}\nrefresh.topics.interval.seconds = 2\n")
    source = admin_client({"bootstrap.servers": clusters["primary"]})
    target = admin_client({"bootstrap.servers": clusters["backup"]})
    first, second = tmp_path / "first", tmp_path / "second"
    with writer_and_standby(config, first, second, FLOW) as (a, _):
        _produce(clusters["primary"], topic, 0, 1_000)
        wait_for_count(clusters["backup"], remote, 1_000)
        source.delete_topics([topic])[topic].result(30)
        wait_until(lambda: topic not in topic_partitions(source), "source topic deletion", 30)
        wait_until(lambda: recreate(source, topic, 1), "source topic re-creation", 60)
        _produce(clusters["primary"], topic, 1_000, 500)
        wait_for_count(clusters["backup"], remote, 1_500)  # the first instance saw the new topic
        kill9(a)
        wait_role(second, FLOW, "writer", 120)  # without the first one's state
        target.delete_topics([remote])[remote].result(30)
        wait_until(lambda: flow_detail(second, FLOW)["records_lost"], "the deletion reported", 90)
        wait_for_count(clusters["backup"], remote, 500)  # the refill: what the source still has
        time.sleep(3)
        landed = seqs(clusters["backup"], remote)
        lost, duplicated = lost_and_duplicated(range(1_500), landed)
        reported = flow_detail(second, FLOW)["records_lost"]
        log_b = (second / "run.log").read_text(errors="replace")
        print(f"remote topic deleted after a takeover: lost {len(lost)}, duplicated {duplicated}, reported lost "
              f"{reported}")
        assert lost == set(range(1_000)) and not duplicated, (sorted(lost)[:20], duplicated)
        assert reported == 1_000, log_b[-4000:]
        assert "earlier generation" in log_b
