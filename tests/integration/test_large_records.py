"""Records larger than Kafka's 1 MiB defaults, against real brokers: a source topic that allows
6 MB (``max.message.bytes``) is copied whole, and a remote topic that cannot take them stops the
flow once with the setting to change (no restart loop, no traceback, nothing half-written)."""
from __future__ import annotations

import subprocess

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from helpers.config import write_config
from helpers.kafka import count, lost_and_duplicated, seqs, wait_for_count
from helpers.processes import MIRRORSPARK, running_mirrorspark

from mirrorspark.control.admin import admin_client, client_conf

pytestmark = pytest.mark.broker

RECORD = 4 * 1024 * 1024
TOPIC_LIMIT = 6 * 1024 * 1024


def large_topic(bootstrap: str, topic: str, records: int) -> None:
    """``records`` numbered records of 4 MiB in a topic that allows 6 MiB."""
    admin = admin_client(client_conf(bootstrap))
    config = {"max.message.bytes": str(TOPIC_LIMIT)}
    admin.create_topics([NewTopic(topic, 2, 1, config=config)])[topic].result(30)
    producer = Producer({**client_conf(bootstrap), "message.max.bytes": TOPIC_LIMIT + 65536, "linger.ms": 0})
    for i in range(records):
        producer.produce(topic, partition=i % 2, key=str(i).encode(), value=bytes([i % 251]) * RECORD,
                         headers=[("seq", str(i).encode())])
        producer.flush(30)
    assert producer.flush(30) == 0


def test_records_of_4_mib_are_copied_whole(clusters, unique, tmp_path):
    topic, remote = f"large-{unique}", f"primary.large-{unique}"
    large_topic(clusters["primary"], topic, 20)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n")
    with running_mirrorspark(config, tmp_path / "state") as mirror:
        wait_for_count(clusters["backup"], remote, 20, timeout=180)
        output = mirror.output()
    lost, duplicated = lost_and_duplicated(range(20), seqs(clusters["backup"], remote))
    assert (lost, duplicated) == (set(), 0)
    assert "RecordTooLarge" not in output


def test_a_remote_topic_that_cannot_take_them_stops_the_flow_once_naming_the_setting(clusters, unique, tmp_path):
    topic, remote = f"large-x-{unique}", f"primary.large-x-{unique}"
    large_topic(clusters["primary"], topic, 2)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          # the remote topic keeps the target's 1 MiB limit
                          "primary->backup.config.properties.exclude = max\\.message\\.bytes\n")
    done = subprocess.run([*MIRRORSPARK, "run", str(config), "--state-dir", str(tmp_path / "state")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "RecordTooLargeException" in done.stderr and "max.message.bytes of the remote topic" in done.stderr
    assert "a restart cannot help" in done.stderr and "restart 1 of" not in done.stderr
    assert "Traceback" not in done.stderr and "\n\tat " not in done.stderr  # no Python or Java stack
    assert count(clusters["backup"], remote) == 0
