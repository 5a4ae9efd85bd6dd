"""MM2's Java plug-ins against real brokers: a ReplicationPolicy, a TopicFilter, a GroupFilter and a
transformation, compiled by the test as a user builds them for MM2, found on plugin.path and used where
MM2 uses them (the policy in a cycle of flows too)."""
from __future__ import annotations

import time

import pytest
from helpers.config import write_config
from helpers.java import build_plugin_jar
from helpers.kafka import create_topic, produce, read_all, wait_for_count
from helpers.offsets import checkpoints, commit_on
from helpers.processes import running_mirrorspark
from helpers.records import records
from helpers.waiting import wait_until

from mirrorspark.control.admin import admin_client, topic_partitions

pytestmark = pytest.mark.broker


def test_a_java_policy_and_filters_copy_what_they_select_under_the_names_they_give(clusters, unique, tmp_path):
    plugins = build_plugin_jar(tmp_path / "build").parent
    keep, late, other = f"keep{unique}-orders", f"keep{unique}-late", f"other-{unique}"
    remote, remote_late = f"dc_primary__{keep}", f"dc_primary__{late}"
    create_topic(clusters["primary"], keep, 2)
    create_topic(clusters["primary"], other, 1)
    produce(clusters["primary"], keep, records(200, 2, unique))
    produce(clusters["primary"], other, records(50, 1, unique))
    kept_group, dropped_group = f"keep{unique}-group", f"drop-{unique}"
    commit_on(clusters["primary"], kept_group, {(keep, 0): 60, (keep, 1): 60})
    commit_on(clusters["primary"], dropped_group, {(keep, 0): 10, (keep, 1): 10})
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nplugin.path = {plugins}\n"
                          "replication.policy.class = com.example.mm2.PrefixPolicy\n"
                          "topic.filter.class = com.example.mm2.KeepFilter\n"
                          "group.filter.class = com.example.mm2.KeepFilter\n"
                          f"keep.filter.prefix = keep{unique}\n"
                          "emit.checkpoints.interval.seconds = 1\nrefresh.topics.interval.seconds = 2\n")
    with running_mirrorspark(config, tmp_path / "state") as mirror:
        wait_for_count(clusters["backup"], remote, 200)
        landed = read_all(clusters["backup"], remote)
        assert sorted(r.key for r in landed) == sorted(r["key"] for r in records(200, 2, unique))
        assert wait_until(lambda: checkpoints(clusters["backup"], "primary", kept_group) ==
                          {(remote, 0): 60, (remote, 1): 60}, "checkpoints of the group the Java filter keeps")
        create_topic(clusters["primary"], late, 1)  # accepted by the filter: the next refresh adds it
        produce(clusters["primary"], late, records(30, 1, f"{unique}-late"))
        wait_for_count(clusters["backup"], remote_late, 30)
        produce(clusters["primary"], keep, records(20, 2, f"{unique}-more"))
        wait_for_count(clusters["backup"], remote, 220)
        on_target = topic_partitions(admin_client({"bootstrap.servers": clusters["backup"]}))
        assert f"dc_primary__{other}" not in on_target and f"primary.{other}" not in on_target
        assert checkpoints(clusters["backup"], "primary", dropped_group) == {}
        assert "Java topic.filter.class accepts other topics" in mirror.output()
    assert len(read_all(clusters["backup"], remote)) == 220 and len(read_all(clusters["backup"], remote_late)) == 30


def test_a_custom_transformation_reporter_and_java_policy_in_a_cycle(clusters, unique, tmp_path):
    """Issue 44: a transformation compiled by the test as a user builds one for MM2, found on plugin.path,
    applied to every record of the flow that names it (not to the other); a metrics reporter from
    plugin.path loaded by every kind of client, the control plane's admin included, as MM2's clients all
    load it; and both flows of a cycle enabled under a Java policy: MM2 runs it, stopping records that come
    back by the policy's topicSource, and so does mirrorspark: each record is copied once each way, none
    round the cycle."""
    plugins = build_plugin_jar(tmp_path / "build").parent
    east, west = f"cyc{unique}-east", f"cyc{unique}-west"
    create_topic(clusters["primary"], east, 2)
    create_topic(clusters["backup"], west, 1)
    produce(clusters["primary"], east, records(120, 2, f"{unique}-e"))
    produce(clusters["backup"], west, records(80, 1, f"{unique}-w"))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nbackup->primary.enabled = true\nplugin.path = {plugins}\n"
                          "replication.policy.class = com.example.mm2.PrefixPolicy\n"
                          f"topics = .*cyc{unique}.*\n"
                          "primary->backup.transforms = stamp\n"
                          "primary->backup.transforms.stamp.type = com.example.mm2.StampHeader\n"
                          "primary->backup.transforms.stamp.header = dc\n"
                          "primary->backup.transforms.stamp.value = east\n"
                          "metric.reporters = com.example.mm2.FileReporter\n"
                          "refresh.topics.interval.seconds = 2\n")
    east_copy, west_copy = f"dc_primary__{east}", f"dc_backup__{west}"
    reported = tmp_path / "reporters"
    with running_mirrorspark(config, tmp_path / "state", env={"MIRRORSPARK_TEST_REPORTER_FILE": str(reported)}):
        wait_for_count(clusters["backup"], east_copy, 120)
        wait_for_count(clusters["primary"], west_copy, 80)
        produce(clusters["primary"], east, records(30, 2, f"{unique}-e2"))
        wait_for_count(clusters["backup"], east_copy, 150)
        time.sleep(6)  # three topic refreshes: a remote topic copied back would be created by now
        on_primary = topic_partitions(admin_client({"bootstrap.servers": clusters["primary"]}))
        on_backup = topic_partitions(admin_client({"bootstrap.servers": clusters["backup"]}))
    stamped = read_all(clusters["backup"], east_copy)
    assert len(stamped) == 150 and all(dict(r.headers).get("dc") == b"east" for r in stamped)
    unstamped = read_all(clusters["primary"], west_copy)
    assert len(unstamped) == 80 and not any(name == "dc" for r in unstamped for name, _ in r.headers)
    came_back = [t for t in (*on_primary, *on_backup) if t.count("__") > 1 and f"cyc{unique}" in t]
    assert came_back == [], came_back
    kinds = set(reported.read_text().split())
    assert {"kafka.admin.client", "kafka.consumer", "kafka.producer"} <= kinds, kinds
