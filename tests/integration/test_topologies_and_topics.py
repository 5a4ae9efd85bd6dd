"""MM2 scenarios against real brokers: active/active, chain naming, replicate from latest, new
partitions, remote topic re-created, topic config sync with MM2's exclusion and defaults rules."""
from __future__ import annotations

import subprocess
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions
from helpers.config import write_config
from helpers.kafka import count, create_topic, produce, read_all, wait_for_count
from helpers.processes import running_mirrorspark
from helpers.records import records
from helpers.waiting import wait_until

from mirrorspark.client import MirrorClient, count_hops
from mirrorspark.control.admin import admin_client, topic_partitions
from mirrorspark.formats import Heartbeat
from mirrorspark.offsets.checkpoint_store import read_compacted_topic

pytestmark = pytest.mark.broker


def wait_started(mirror) -> None:
    wait_until(lambda: "replicating" in mirror.output(), "mirrorspark to start")


def topic_config(bootstrap: str, topic: str) -> dict:
    admin = admin_client({"bootstrap.servers": bootstrap})
    resource = ConfigResource("TOPIC", topic)
    return admin.describe_configs([resource])[resource].result(30)


def test_active_active_each_record_once_on_the_other_side_no_echo(clusters, unique, tmp_path):
    a, b = f"aa-a-{unique}", f"aa-b-{unique}"
    create_topic(clusters["primary"], a, 2)
    create_topic(clusters["backup"], b, 2)
    produce(clusters["primary"], a, records(30, 2, "a"))
    produce(clusters["backup"], b, records(20, 2, "b"))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nbackup->primary.enabled = true\n"
                          f"topics = aa-.*-{unique}, primary\\.aa-.*, backup\\.aa-.*\n")
    with running_mirrorspark(config, tmp_path / "state"):
        wait_for_count(clusters["backup"], f"primary.{a}", 30)
        wait_for_count(clusters["primary"], f"backup.{b}", 20)
        time.sleep(6)  # an echo would need a few more batches
    assert count(clusters["backup"], f"primary.{a}") == 30
    assert count(clusters["primary"], f"backup.{b}") == 20
    assert f"backup.primary.{a}" not in topic_partitions(admin_client({"bootstrap.servers": clusters["primary"]}))
    assert f"primary.backup.{b}" not in topic_partitions(admin_client({"bootstrap.servers": clusters["backup"]}))


def test_chain_names_hops(clusters, unique, tmp_path):
    """A->B->C gives B.A.topic on C; heartbeats in MM2's format let MirrorClient on C count hops."""
    topic = f"chain-{unique}"
    create_topic(clusters["primary"], topic, 1)
    produce(clusters["primary"], topic, records(10, 1, "c"))
    (tmp_path / "mm2.properties").write_text(
        "clusters = primary, backup, third\n"
        + "".join(f"{n}.bootstrap.servers = {b}\n" for n, b in clusters.items())
        + "primary->backup.enabled = true\nbackup->third.enabled = true\nreplication.factor = 1\n"
          "checkpoints.topic.replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n"
          "heartbeats.topic.replication.factor = 1\n"
        f"topics = chain-{unique}, primary\\.chain-{unique}\n")
    with running_mirrorspark(tmp_path / "mm2.properties", tmp_path / "state"):
        wait_for_count(clusters["third"], f"backup.primary.{topic}", 10)
        wait_for_count(clusters["third"], "backup.primary.heartbeats", 1)
    third = MirrorClient({"bootstrap.servers": clusters["third"]})
    # Other tests may replicate primary straight into third (1 hop); over this chain it is 2.
    assert third.replication_hops("backup") == 1 and third.replication_hops("primary") in (1, 2)
    assert count_hops(third.policy, "backup.primary.heartbeats", "primary") == 2
    assert third.replication_hops("nowhere") == -1
    assert {"primary", "backup"} <= third.upstream_clusters()
    assert {"heartbeats", "backup.heartbeats", "backup.primary.heartbeats"} <= third.heartbeat_topics()
    assert "backup.checkpoints.internal" in third.checkpoint_topics()
    assert f"backup.primary.{topic}" in third.remote_topics("backup")
    beats = {Heartbeat.from_record(k, v) for k, v, *_ in
             read_compacted_topic({"bootstrap.servers": clusters["backup"]}, "heartbeats")}
    assert {(b.source, b.target) for b in beats} >= {("primary", "backup"), ("third", "backup")}
    # The compacted topic is shared by the session's tests and keeps older beats until it is
    # cleaned: the newest beat of this run's pair must be fresh.
    newest = max(b.timestamp for b in beats if (b.source, b.target) == ("primary", "backup"))
    assert abs(newest - time.time() * 1000) < 600_000
    source = read_all(clusters["primary"], topic)
    assert [r.content() for r in read_all(clusters["third"], f"backup.primary.{topic}")] == \
        [r.content() for r in source]


def test_replicate_from_latest(clusters, unique, tmp_path):
    topic = f"latest-{unique}"
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, records(15, 2, "old"))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          "primary.consumer.auto.offset.reset = latest\n")
    with running_mirrorspark(config, tmp_path / "state") as mirror:
        wait_started(mirror)
        time.sleep(8)  # let the first (empty) batch fix the starting offsets
        produce(clusters["primary"], topic, records(10, 2, "new"))
        wait_for_count(clusters["backup"], f"primary.{topic}", 10)
        time.sleep(3)
    target = read_all(clusters["backup"], f"primary.{topic}")
    assert len(target) == 10 and all(r.key.startswith(b"new") for r in target)


def test_new_partitions_and_recreated_remote_topic(clusters, unique, tmp_path):
    topic = f"grow-{unique}"
    remote = f"primary.{topic}"
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, records(10, 2, "one"))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          "refresh.topics.interval.seconds = 2\n")
    source_admin = admin_client({"bootstrap.servers": clusters["primary"]})
    target_admin = admin_client({"bootstrap.servers": clusters["backup"]})
    with running_mirrorspark(config, tmp_path / "state"):
        wait_for_count(clusters["backup"], remote, 10)
        source_admin.create_partitions([NewPartitions(topic, 4)])[topic].result(30)
        produce(clusters["primary"], topic, [{"partition": 3, "key": b"p3", "value": b"in new partition"}])
        wait_for_count(clusters["backup"], remote, 11)
        assert topic_partitions(target_admin)[remote] == 4
        target_admin.delete_topics([remote])[remote].result(30)
        wait_until(lambda: remote not in topic_partitions(target_admin), "remote topic deletion", 30)
        wait_until(lambda: topic_partitions(target_admin).get(remote) == 4, "remote topic re-creation")
        produce(clusters["primary"], topic, records(4, 4, "after"))
        wait_for_count(clusters["backup"], remote, 15)
        time.sleep(2)  # anything copied twice would land by now
    # The re-created remote topic is refilled from the source: the 11 earlier records, then the new ones, once.
    assert sorted(r.key for r in read_all(clusters["backup"], remote)) == sorted(
        [*(f"one-{i}".encode() for i in range(10)), b"p3", *(f"after-{i}".encode() for i in range(4))])


@pytest.mark.parametrize("defaults_from", ["target", "source"])
def test_topic_config_sync_excluded_key_untouched_and_use_defaults_from(clusters, unique, tmp_path, defaults_from):
    topic = f"cfg-{defaults_from}-{unique}"
    remote = f"primary.{topic}"
    admin = admin_client({"bootstrap.servers": clusters["primary"]})
    from confluent_kafka.admin import NewTopic
    admin.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "3600000",
                                                        "cleanup.policy": "compact"})])[topic].result(30)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          f"sync.topic.configs.interval.seconds = 2\nuse.defaults.from = {defaults_from}\n")
    target_admin = admin_client({"bootstrap.servers": clusters["backup"]})
    with running_mirrorspark(config, tmp_path / "state"):
        created = wait_until(lambda: remote in topic_partitions(target_admin)
                             and topic_config(clusters["backup"], remote), "remote topic")
        assert created["retention.ms"].value == "3600000" and created["cleanup.policy"].value == "compact"
        # Target-side changes: an excluded key (kept) and a key the source leaves at its default.
        resource = ConfigResource("TOPIC", remote, incremental_configs=[
            ConfigEntry("message.timestamp.type", "LogAppendTime", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("segment.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
        target_admin.incremental_alter_configs([resource])[resource].result(30)
        source_resource = ConfigResource("TOPIC", topic, incremental_configs=[
            ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([source_resource])[source_resource].result(30)
        synced = wait_until(lambda: (c := topic_config(clusters["backup"], remote))["retention.ms"].value == "7200000"
                            and c, "config sync")
        time.sleep(3)
        synced = topic_config(clusters["backup"], remote)
    assert synced["message.timestamp.type"].value == "LogAppendTime"  # excluded: untouched
    if defaults_from == "target":
        assert synced["segment.ms"].is_default  # source default -> DELETE on the target
    else:
        assert not synced["segment.ms"].is_default  # source default value pushed explicitly
        assert synced["segment.ms"].value == "604800000"


def test_fan_out_aggregation_and_read_committed(clusters, unique, tmp_path):
    """primary -> backup and primary -> third (fan-out), third -> backup (aggregation on backup), with
    primary's consumer at read_committed: records of an aborted transaction are never copied."""
    tx, plain = f"tx-{unique}", f"agg-{unique}"
    create_topic(clusters["primary"], tx, 1)
    create_topic(clusters["third"], plain, 1)
    producer = Producer({"bootstrap.servers": clusters["primary"], "transactional.id": f"t-{unique}"})
    producer.init_transactions(30)
    for batch, keep in (("c1", True), ("ab", False), ("c2", True)):
        producer.begin_transaction()
        for rec in records(5, 1, batch):
            producer.produce(tx, **rec)
        (producer.commit_transaction if keep else producer.abort_transaction)(30)
    produce(clusters["third"], plain, records(7, 1, "third"))
    (tmp_path / "mm2.properties").write_text(
        "clusters = primary, backup, third\n"
        + "".join(f"{n}.bootstrap.servers = {b}\n" for n, b in clusters.items())
        + "primary->backup.enabled = true\nprimary->third.enabled = true\nthird->backup.enabled = true\n"
        "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
        "offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n"
        f"topics = {tx}, {plain}\nprimary.consumer.isolation.level = read_committed\n")
    with running_mirrorspark(tmp_path / "mm2.properties", tmp_path / "state"):
        for cluster in ("backup", "third"):
            wait_until(lambda c=cluster: len(read_all(clusters[c], f"primary.{tx}")) >= 10, f"tx records on {cluster}")
        wait_for_count(clusters["backup"], f"third.{plain}", 7)
        time.sleep(3)
    for cluster in ("backup", "third"):
        keys = [r.key for r in read_all(clusters[cluster], f"primary.{tx}")]
        assert keys == [f"{b}-{i}".encode() for b in ("c1", "c2") for i in range(5)], cluster
    assert [r.key for r in read_all(clusters["backup"], f"third.{plain}")] == [f"third-{i}".encode() for i in range(7)]


def test_refresh_topics_disabled_replicates_only_topics_present_at_start(clusters, unique, tmp_path):
    early, late = f"fixed-early-{unique}", f"fixed-late-{unique}"
    create_topic(clusters["primary"], early, 1)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = fixed-.*-{unique}\n"
                          "refresh.topics.enabled = false\n")
    target_admin = admin_client({"bootstrap.servers": clusters["backup"]})
    with running_mirrorspark(config, tmp_path / "state") as mirror:
        wait_started(mirror)
        create_topic(clusters["primary"], late, 1)
        produce(clusters["primary"], late, records(3, 1, "late"))
        produce(clusters["primary"], early, records(3, 1, "early"))
        wait_for_count(clusters["backup"], f"primary.{early}", 3)
        time.sleep(6)
        assert f"primary.{late}" not in topic_partitions(target_admin)


def test_a_file_with_no_flow_enabled_emits_heartbeats_only_as_mm2_does(clusters, unique, tmp_path):
    """MM2 runs its heartbeat connector for every pair, enabled or not: a file that enables no flow
    beats in both directions (no Spark is started for it) and stops cleanly."""
    here, there = f"hb{unique[:6]}a", f"hb{unique[:6]}b"
    (tmp_path / "mm2.properties").write_text(
        f"clusters = {here}, {there}\n{here}.bootstrap.servers = {clusters['primary']}\n"
        f"{there}.bootstrap.servers = {clusters['backup']}\nheartbeats.topic.replication.factor = 1\n")

    def beats(bootstrap: str, source: str, target: str) -> list[Heartbeat]:
        return [b for b in (Heartbeat.from_record(k, v) for k, v, *_ in
                            read_compacted_topic({"bootstrap.servers": bootstrap}, "heartbeats"))
                if (b.source, b.target) == (source, target)]

    with running_mirrorspark(tmp_path / "mm2.properties", tmp_path / "state") as mirror:
        wait_until(lambda: len(beats(clusters["backup"], here, there)) >= 3
                   and len(beats(clusters["primary"], there, here)) >= 3, "heartbeats both ways", 90)
        children = subprocess.run(["ps", "--ppid", str(mirror.proc.pid), "-o", "args="], capture_output=True,
                                  text=True).stdout
    assert "org.apache.spark.deploy.SparkSubmit" not in children, children  # no Spark JVM (the clients' JVM runs)
    assert "mirrorspark: heartbeats only (no flow enabled)" in mirror.output()
