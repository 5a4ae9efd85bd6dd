"""End to end against two real Kafka clusters: records keep partition, key, value, headers and
timestamp; restarts neither lose nor re-copy; topics created later are picked up."""
from __future__ import annotations

import time

import pytest
from helpers.config import TRIGGERS, trigger_settings, write_config
from helpers.kafka import create_topic, produce, read_all, wait_for_count
from helpers.processes import running_mirrorspark
from helpers.records import sample_records

pytestmark = pytest.mark.broker


@TRIGGERS
def test_records_arrive_with_identical_partition_key_value_headers_timestamp(clusters, unique, tmp_path, trigger):
    topic = f"orders-{unique}"
    create_topic(clusters["primary"], topic, 3)
    base_ts = int(time.time() * 1000) - 3_600_000
    produce(clusters["primary"], topic, sample_records(60, 3, base_ts))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = orders-{unique}\n"
                          + trigger_settings(trigger))

    with running_mirrorspark(config, tmp_path / "state"):
        wait_for_count(clusters["backup"], f"primary.{topic}", 60)

    source = read_all(clusters["primary"], topic)
    target = read_all(clusters["backup"], f"primary.{topic}")
    assert [r.content() for r in target] == [r.content() for r in source]
    assert any(r.key is None for r in target) and any(r.value is None for r in target)
    assert any(r.headers == (("trace", b"t1"), ("empty", None), ("trace", b"dup")) for r in target)
    assert {r.partition for r in target} == {0, 1, 2}


@TRIGGERS
def test_restart_resumes_without_loss_or_duplicates(clusters, unique, tmp_path, trigger):
    topic = f"restart-{unique}"
    create_topic(clusters["primary"], topic, 2)
    now = int(time.time() * 1000)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          + trigger_settings(trigger))
    state = tmp_path / "state"

    produce(clusters["primary"], topic, sample_records(40, 2, now))
    with running_mirrorspark(config, state):
        wait_for_count(clusters["backup"], f"primary.{topic}", 40)

    produce(clusters["primary"], topic, sample_records(25, 2, now + 10_000))
    with running_mirrorspark(config, state):
        wait_for_count(clusters["backup"], f"primary.{topic}", 65)
        time.sleep(5)  # a re-copy would show up as more than 65 records

    target = read_all(clusters["backup"], f"primary.{topic}")
    assert len(target) == 65
    assert [r.content() for r in target] == [r.content() for r in read_all(clusters["primary"], topic)]


@TRIGGERS
def test_topic_created_after_start_is_replicated(clusters, unique, tmp_path, trigger):
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = late-{unique}-.*\n"
                          + trigger_settings(trigger))
    with running_mirrorspark(config, tmp_path / "state") as mirror:
        deadline = time.monotonic() + 90
        while "replicating" not in mirror.output() and time.monotonic() < deadline:
            time.sleep(0.5)
        topic = f"late-{unique}-1"
        create_topic(clusters["primary"], topic, 4)
        produce(clusters["primary"], topic, sample_records(20, 4, int(time.time() * 1000)))
        wait_for_count(clusters["backup"], f"primary.{topic}", 20)
    target = read_all(clusters["backup"], f"primary.{topic}")
    assert [r.content() for r in target] == [r.content() for r in read_all(clusters["primary"], topic)]
