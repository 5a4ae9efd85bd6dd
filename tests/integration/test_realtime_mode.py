"""Real-time mode (``mirrorspark.trigger = realtime``) against real brokers: the same fidelity,
restart, kill -9 and failover checks as micro-batch mode, and the slot rule."""
from __future__ import annotations

import re
import subprocess
import threading
import time

import pytest
from confluent_kafka import Producer
from helpers.config import write_config
from helpers.feed import NumberedFeed
from helpers.kafka import (
    count,
    create_topic,
    delete_and_recreate,
    lost_and_duplicated,
    produce,
    read_all,
    seqs,
    wait_for_count,
)
from helpers.processes import MIRRORSPARK, kill9_when, run_cli, running_mirrorspark, start
from helpers.records import numbered, sample_records
from helpers.rest import flow_detail
from helpers.spark_state import committed_records, latest
from helpers.waiting import wait_until

pytestmark = pytest.mark.broker

# 3 source partitions + 1 heartbeats partition, read by 2 long-running tasks (the slots' share).
REALTIME = "mirrorspark.trigger = realtime\nmirrorspark.realtime.batch.seconds = 5\nspark.master = local[2]\n"


def test_realtime_records_arrive_with_identical_fields(clusters, unique, tmp_path):
    topic = f"rt-orders-{unique}"
    create_topic(clusters["primary"], topic, 3)
    base_ts = int(time.time() * 1000) - 3_600_000
    produce(clusters["primary"], topic, sample_records(60, 3, base_ts))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n" + REALTIME)
    with running_mirrorspark(config, tmp_path / "state") as mirror:
        wait_for_count(clusters["backup"], f"primary.{topic}", 60)
        produce(clusters["primary"], topic, sample_records(30, 3, base_ts + 5000))
        wait_for_count(clusters["backup"], f"primary.{topic}", 90)
        print(mirror.output()[-3000:])
    source = read_all(clusters["primary"], topic)
    target = read_all(clusters["backup"], f"primary.{topic}")
    assert [r.content() for r in target] == [r.content() for r in source]


@pytest.mark.long
def test_realtime_kill9_mid_batch_loses_nothing_and_copies_nothing_twice(clusters, unique, tmp_path):
    """kill -9 while a real-time batch writes, after Spark committed earlier ones: the restart replays
    from Spark's last batch and compares with what the target holds, so nothing is sent twice."""
    topic, remote = f"rt-k9-{unique}", f"primary.rt-k9-{unique}"
    create_topic(clusters["primary"], topic, 3)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n" + REALTIME)
    state = tmp_path / "state"
    state.mkdir()
    checkpoint = state / "flows" / "primary" / "backup" / "checkpoint"
    with NumberedFeed(clusters["primary"], topic, 3) as feed:  # about 2,000 records/s until stopped
        with (state / "run.log").open("wb") as out:
            driver = subprocess.Popen([*MIRRORSPARK, "run", str(config), "--state-dir", str(state)], stdout=out,
                                      stderr=subprocess.STDOUT, start_new_session=True)

        def mid_batch() -> bool:
            """Spark committed a batch, and the target holds 1,000 records more than it."""
            if not (checkpoint / "commits").is_dir() or latest(checkpoint, "commits") < 1:
                return False
            try:
                return count(clusters["backup"], remote) > committed_records(checkpoint, topic) + 1_000
            except Exception:  # noqa: BLE001 - the remote topic may not exist yet
                return False

        kill9_when(driver, mid_batch, state / "run.log", "no real-time batch caught in the middle of its write")
        at_kill, committed = count(clusters["backup"], remote), committed_records(checkpoint, topic)
        with running_mirrorspark(config, state) as second:
            time.sleep(8)
            sent = feed.stop()
            wait_for_count(clusters["backup"], remote, sent, timeout=120)
            time.sleep(7)  # a batch boundary: the figures are recorded
            figures = flow_detail(state, "primary->backup")
    landed = seqs(clusters["backup"], remote)
    lost, duplicates = lost_and_duplicated(range(sent), landed)
    print(f"real-time kill -9 drill: {sent} records, {at_kill} on the target at the kill, {committed} committed by "
          f"Spark; lost {len(lost)}, copied twice {duplicates}, re-copied metric {figures['records_recopied']}")
    assert not lost
    assert duplicates == figures["records_recopied"] == 0
    assert "compared before anything is sent again" in second.output()


def test_realtime_with_too_few_task_slots_is_refused_with_the_numbers(clusters, unique, tmp_path):
    """4 long-running tasks asked for 3 source partitions and heartbeats' 1: local[2] is refused before
    anything is read, naming the count that would do, never left with partitions silently unread."""
    topic = f"rt-slots-{unique}"
    create_topic(clusters["primary"], topic, 3)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          "primary->backup.mirrorspark.trigger = realtime\nspark.master = local[2]\n"
                          "primary->backup.mirrorspark.realtime.tasks = 4\n")
    done = run_cli("run", str(config), "--state-dir", str(tmp_path / "state"), timeout=180)
    assert done.returncode == 2, done.stdout + done.stderr
    message = done.stderr
    assert "primary->backup.mirrorspark.trigger = realtime runs 4 long task(s)" in message
    assert "for its 4 partition(s)" in message and f"{topic}: 3" in message and "heartbeats: 1" in message
    assert "2 task slot(s) (spark.master = local[2])" in message and "local[4]" in message
    assert "set primary->backup.mirrorspark.realtime.tasks = 2" in message
    assert "Traceback" not in message


@pytest.mark.long
def test_a_replay_spanning_several_real_time_batches_is_compared_in_each_and_sends_nothing_twice(
        clusters, unique, tmp_path):
    """The first instance records a batch (so the state says where it stopped: without one, the next
    start resumes after what the target holds and replays nothing), then dies (``kill -9``) while its
    one long real-time batch is open: everything it copied is on the target, nothing of it recorded as
    committed (a stop would end and record the batch now: ADR 0027 section 17). The second reads the
    source one record per fetch
    (``max.partition.fetch.bytes``, each record in a batch of its own), so the replay takes several
    5-second batches: each compares from where the one before stopped. Before, only the first did, and
    the rest was sent again uncounted."""
    topic, remote = f"rt-span-{unique}", f"primary.rt-span-{unique}"
    total = 48_000  # one record per fetch is faster from the grouped source: 16,000 fitted in one batch
    create_topic(clusters["primary"], topic, 2)
    flow = f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\nspark.master = local[2]\n" \
           "mirrorspark.trigger = realtime\n"
    short_batch = write_config(tmp_path / "recorded.properties", clusters,
                               flow + "mirrorspark.realtime.batch.seconds = 5\n")
    long_batch = write_config(tmp_path / "first.properties", clusters,
                              flow + "mirrorspark.realtime.batch.seconds = 600\n")
    slow_reads = write_config(tmp_path / "second.properties", clusters,
                              flow + "mirrorspark.realtime.batch.seconds = 5\n"
                              "primary.consumer.max.partition.fetch.bytes = 1\n")
    state = tmp_path / "state"
    checkpoint = state / "flows" / "primary" / "backup" / "checkpoint"
    with running_mirrorspark(short_batch, state):  # an empty topic: one batch recorded, nothing copied yet
        wait_until(lambda: (checkpoint / "commits").is_dir() and latest(checkpoint, "commits") >= 0,
                   "a batch recorded", 90)
    producer = Producer({"bootstrap.servers": clusters["primary"], "linger.ms": 0, "batch.size": 1})
    for record in numbered(0, total, 2):
        producer.produce(topic, **record)
        producer.poll(0)
    assert producer.flush(60) == 0
    first = start(long_batch, state)

    def copied() -> bool:
        try:
            return count(clusters["backup"], remote) >= total
        except Exception:  # noqa: BLE001 - the remote topic may not exist yet
            return False

    kill9_when(first, copied, state / "run.log", f"the first instance did not copy {total} records", timeout=180)
    with running_mirrorspark(slow_reads, state) as second:
        deadline = time.monotonic() + 240
        while resumed(second.output(), remote)[0] < total and time.monotonic() < deadline:
            time.sleep(2)
        time.sleep(7)  # a batch boundary: the figures are recorded
        figures = flow_detail(state, "primary->backup")
        output = second.output()
    landed = seqs(clusters["backup"], remote)
    lost, duplicates = lost_and_duplicated(range(total), landed)
    found, batches = resumed(output, remote)
    print(f"real-time replay over several batches: {total} records, {len(landed)} on the target, lost {len(lost)}, "
          f"copied twice {duplicates}, re-copied metric {figures['records_recopied']}, {found} found on the target "
          f"and not sent again, over {len(batches)} batches")
    assert "compared before anything is sent again" in output, output[-4000:]
    assert len(batches) >= 2, "the replay fitted in one batch: the drill did not test what it is for"
    assert not lost and duplicates == figures["records_recopied"] == 0
    assert found == total


def resumed(output: str, topic: str) -> tuple[int, set[int]]:
    """Records of ``topic`` the batches found already on the target, and which batches found some."""
    found = [(int(b), int(n)) for b, n in
             re.findall(rf"batch (\d+) resumed {re.escape(topic)}\[\d+\]: (\d+) record", output)]
    return sum(n for _, n in found), {b for b, n in found if n}


def test_a_remote_topic_deleted_under_a_steady_stream_is_refilled_without_a_copy_twice(clusters, unique, tmp_path):
    """The twelfth soak run: the remote topic deleted while records flowed in real-time mode; the restart
    made it again while the stopped query's producer still retried the records it had sent to the deleted
    topic, which landed at the new topic's first offsets, and its refill from the source's start copied
    them again (3 records a partition, none reported). Now the restart drops what the producers still hold
    for a topic before making it again: every record lands once, in source order, and nothing is lost."""
    from helpers.kafka import wait_for_every_seq

    from mirrorspark.control.admin import admin_client, topic_partitions

    topic, remote = f"rtgone-{unique}", f"primary.rtgone-{unique}"
    create_topic(clusters["primary"], topic, 2)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n{REALTIME}"
                          "refresh.topics.interval.seconds = 2\n")
    stop, sent = threading.Event(), [0]

    def steady() -> None:
        producer = Producer({"bootstrap.servers": clusters["primary"], "linger.ms": 5})
        while not stop.is_set():
            for record in numbered(sent[0], sent[0] + 20, 2):
                producer.produce(topic, **record)
            sent[0] += 20
            producer.poll(0)
            time.sleep(0.05)
        producer.flush(30)

    feeder = threading.Thread(target=steady, daemon=True)
    target = admin_client({"bootstrap.servers": clusters["backup"]})
    state = tmp_path / "state"
    with running_mirrorspark(config, state) as mirror:
        feeder.start()
        try:
            wait_for_count(clusters["backup"], remote, 3_000, timeout=180)
            target.delete_topics([remote])[remote].result(30)
            wait_until_recreated = time.monotonic() + 120
            while remote in topic_partitions(target) and time.monotonic() < wait_until_recreated:
                time.sleep(0.2)  # gone first
            while remote not in topic_partitions(target):
                assert time.monotonic() < wait_until_recreated, "the remote topic was not made again"
                time.sleep(0.5)
            time.sleep(10)  # the refill and the stream after it
        finally:
            stop.set()
            feeder.join(30)
        landed = wait_for_every_seq(clusters["backup"], remote, sent[0], timeout=240)
        time.sleep(5)  # a copy made twice would land meanwhile
        landed = seqs(clusters["backup"], remote)
        detail = flow_detail(state, "primary->backup")
        output = mirror.output()
    lost, duplicated = lost_and_duplicated(range(sent[0]), landed)
    print(f"remote topic deleted under a steady real-time stream: {sent[0]} sent, lost {len(lost)}, "
          f"duplicated {duplicated}, reported lost {detail['records_lost']}, recopied {detail['records_recopied']}")
    assert not lost and detail["records_lost"] == 0
    assert duplicated == detail["records_recopied"] == 0
    for partition in (0, 1):
        assert [s for s in landed if s % 2 == partition] == list(range(partition, sent[0], 2))
    assert "is refilled from" in output


@pytest.mark.long
def test_a_source_topic_recreated_while_running_is_copied_whole_in_real_time_mode(clusters, unique, tmp_path):
    """The source topic deleted and re-created while a real-time flow runs. A task whose position is past
    the new topic's end gives the partition up where it stands; once the batch's copies are recorded, the
    topic's id is checked and the flow restarts reading the new topic from its start. Before: the task read
    the new topic on within the old topic's batch, and the check beside it ran before that batch was
    recorded: 5,000 records doubled, 10,000 reported lost, 30,000 reported copied twice; and the topic
    refresh, seeing the topic gone, restarted the query mid-batch (10,000 reported lost and re-copied, CI).
    Now every record lands once and nothing is reported (every record of the old topic had been copied)."""
    from mirrorspark.control.admin import admin_client

    topic, remote = f"rtrec-{unique}", f"primary.rtrec-{unique}"
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, numbered(0, 10_000, 2))
    # One 30 s batch: the topic is deleted and re-created while the batch that copied the old one is open.
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          "mirrorspark.trigger = realtime\nmirrorspark.realtime.batch.seconds = 30\n"
                          "spark.master = local[2]\nrefresh.topics.interval.seconds = 2\n")
    state = tmp_path / "state"
    admin = admin_client({"bootstrap.servers": clusters["primary"]})
    with running_mirrorspark(config, state) as mirror:
        wait_for_count(clusters["backup"], remote, 10_000)
        time.sleep(3)  # the topic's id seen by a refresh
        assert not (state / "flows" / "primary" / "backup" / "checkpoint" / "commits" / "0").exists(), \
            "the first batch ended before the deletion: the drill would not test what it is for"
        delete_and_recreate(admin, topic, 2, gone_for=6)  # the topic refresh (every 2 s) sees it gone
        produce(clusters["primary"], topic, numbered(10_000, 15_000, 2))
        wait_for_count(clusters["backup"], remote, 15_000, timeout=240)
        time.sleep(12)  # a record copied twice would land meanwhile
        detail = flow_detail(state, "primary->backup")
        output = mirror.output()
    landed = seqs(clusters["backup"], remote)
    lost, duplicated = lost_and_duplicated(range(15_000), landed)
    print(f"source re-created while running, real-time: {len(landed)} on the target, lost {len(lost)}, "
          f"duplicated {duplicated}, reported lost {detail['records_lost']}, re-copied {detail['records_recopied']}")
    assert not lost and duplicated == detail["records_recopied"] == 0
    assert detail["records_lost"] == 0 and "DATA LOSS" not in output, output[-3000:]


def test_a_flow_changing_its_trigger_resumes_from_the_other_modes_state(clusters, unique, tmp_path):
    """An upgrade changes the default trigger under a running deployment (micro-batches, then ``auto``'s
    real-time mode), and a batch bound or a move to a Spark cluster changes it back: each start resumes
    from the state the other mode left, under a steady feed and after a ``kill -9``, with nothing lost
    or copied twice."""
    topic, remote = f"rt-switch-{unique}", f"primary.rt-switch-{unique}"
    create_topic(clusters["primary"], topic, 3)
    flow = f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\nspark.master = local[2]\n"
    micro = write_config(tmp_path / "micro.properties", clusters, flow + "mirrorspark.trigger = microbatch\n")
    auto = write_config(tmp_path / "auto.properties", clusters,
                        flow + "mirrorspark.trigger = auto\nmirrorspark.realtime.batch.seconds = 5\n")
    state = tmp_path / "state"
    with NumberedFeed(clusters["primary"], topic, 3) as feed:  # about 2,000 records/s until stopped
        driver = start(micro, state)

        def copying() -> bool:
            try:
                return count(clusters["backup"], remote) > 4_000
            except Exception:  # noqa: BLE001 - the remote topic may not exist yet
                return False

        kill9_when(driver, copying, state / "run.log", "the micro-batch flow copied nothing")
        with running_mirrorspark(auto, state) as realtime:
            before = count(clusters["backup"], remote)
            wait_until(lambda: count(clusters["backup"], remote) > before + 8_000, timeout=120,
                       what="the flow copying in real-time mode after the micro-batches' kill -9")
            time.sleep(6)  # a real-time batch recorded
        with running_mirrorspark(micro, state) as again:
            before = count(clusters["backup"], remote)
            wait_until(lambda: count(clusters["backup"], remote) > before + 4_000, timeout=120,
                       what="the flow copying with micro-batches after real-time mode")
            sent = feed.stop()
            wait_for_count(clusters["backup"], remote, sent, timeout=120)
            time.sleep(4)  # a batch boundary: the figures are recorded
            figures = flow_detail(state, "primary->backup")
    lost, duplicates = lost_and_duplicated(range(sent), seqs(clusters["backup"], remote))
    print(f"trigger switch: {sent} records; lost {len(lost)}, copied twice {duplicates}, "
          f"re-copied metric {figures['records_recopied']}")
    assert "real-time mode (" in realtime.output() and "real-time mode (" not in again.output()
    assert not lost
    assert duplicates == 0
