"""MM2 Java plug-ins (a ReplicationPolicy, a TopicFilter, a GroupFilter, a ConfigPropertyFilter) compiled
by the test, found on plugin.path and asked through the plug-in JVM: no broker, a JVM of its own."""
from __future__ import annotations

from pathlib import Path

import pytest
from helpers.java import build_plugin_jar

from mirrorspark.config import ConfigError, parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.offsets.group_filter import GroupFilter
from mirrorspark.pipeline.preflight import preflight
from mirrorspark.plugins.jars import class_location, plugin_classpath
from mirrorspark.plugins.loading import java_filter
from mirrorspark.policy import policy_for_flow
from mirrorspark.policy.java_policy import JavaReplicationPolicy
from mirrorspark.policy.loading import check_policy_class
from mirrorspark.policy.topic_selection import TopicSelection

POLICY = "com.example.mm2.PrefixPolicy"
FILTER = "com.example.mm2.KeepFilter"


@pytest.fixture(scope="module")
def plugins(tmp_path_factory) -> Path:
    """The plugin.path directory holding the compiled example jar."""
    return build_plugin_jar(tmp_path_factory.mktemp("java-plugins")).parent


def flow(extra: str):
    text = "clusters = A, B\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\nA->B.enabled=true\n" + extra
    return parse_config(parse_properties(text)).enabled_flows[0]


def test_plugin_path_finds_jars_in_directories_and_their_subdirectories(tmp_path, plugins):
    nested = tmp_path / "top" / "vendor"
    nested.mkdir(parents=True)
    (nested / "x.jar").write_bytes((plugins / "example-plugins.jar").read_bytes())
    found = plugin_classpath({"plugin.path": f"{tmp_path / 'top'}, {tmp_path / 'missing'}"})
    assert nested / "x.jar" in found
    assert class_location(POLICY, found) == nested / "x.jar"
    assert class_location("com.example.mm2.Nothing", found) is None
    assert plugin_classpath({"spark.jars": f"file://{nested / 'x.jar'}, https://repo/y.jar"}) == [nested / "x.jar"]


def test_a_java_policy_names_remote_topics_and_keeps_mm2s_internal_rules(plugins):
    configured = flow(f"plugin.path = {plugins}\nreplication.policy.class = {POLICY}\nprefix.policy.prefix = east_\n")
    assert check_policy_class(configured.settings) == "java"
    policy = policy_for_flow(configured.settings, "A")
    assert isinstance(policy, JavaReplicationPolicy)
    assert policy.format_remote_topic("A", "orders") == "east_A__orders"  # configure() got the file's settings
    assert policy.topic_source("east_A__orders") == "A" and policy.upstream_topic("east_A__orders") == "orders"
    assert policy.topic_source("orders") is None and policy.upstream_topic("orders") is None
    assert policy.original_topic("east_B__east_A__orders") == "orders"
    assert policy.is_heartbeats_topic("east_A__heartbeats")  # the interface's default, through originalTopic
    assert policy.is_internal_topic("mm2-offset-syncs.B.internal") and not policy.is_internal_topic("orders")
    assert policy.checkpoints_topic("A") == "A.checkpoints.internal"
    selection = TopicSelection(configured, policy)
    assert selection.remote_name("orders") == "east_A__orders"
    assert selection.is_cycle("east_B__orders") and not selection.should_replicate("east_B__orders")
    assert selection.should_replicate("orders")


def test_java_filters_decide_topics_groups_and_configs(plugins):
    configured = flow(f"plugin.path = {plugins}\ntopic.filter.class = {FILTER}\ngroup.filter.class = {FILTER}\n"
                      f"A->B.config.property.filter.class = {FILTER}\ntopics = orders\n")
    preflight(parse_config(parse_properties(
        f"clusters = A, B\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\nA->B.enabled=true\n"
        f"plugin.path = {plugins}\ntopic.filter.class = {FILTER}\n")))
    selection = TopicSelection(configured, policy_for_flow(configured.settings, "A"))
    assert selection.should_replicate("keep-orders") and not selection.should_replicate("orders")  # filter alone
    assert not selection.should_replicate("keep.internal")  # MM2's internal-topic rule still applies
    groups = GroupFilter(configured.options,
                         java_filter(configured.settings, "group.filter.class", "group.filter.class"))
    assert groups("keep-g") and not groups("console-consumer-1")
    configs = java_filter(configured.settings, "config.property.filter.class", "A->B.config.property.filter.class")
    assert configs is not None and configs("cleanup.policy") and not configs("retention.ms")


def test_a_class_no_plugin_place_holds_is_refused_naming_the_key_and_the_places(tmp_path, plugins):
    with pytest.raises(ConfigError) as missing:
        check_policy_class(flow(f"plugin.path = {plugins}\nreplication.policy.class = com.acme.Nope\n").settings)
    assert "replication.policy.class" in str(missing.value) and f"plugin.path = {plugins}" in str(missing.value)
    assert "spark.jars not set" in str(missing.value)
    config = parse_config(parse_properties(
        "clusters = A, B\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\nA->B.enabled=true\n"
        "A->B.topic.filter.class = com.acme.OnlyOrders\n"))
    with pytest.raises(ConfigError) as refused:
        preflight(config)
    assert refused.value.key == "A->B.topic.filter.class" and "plugin.path not set" in str(refused.value)


def test_a_plugin_that_fails_to_configure_is_a_config_error_with_its_message(plugins):
    configured = flow(f"plugin.path = {plugins}\ntopic.filter.class = com.example.mm2.Broken\n")
    with pytest.raises(ConfigError) as broken:
        TopicSelection(configured, policy_for_flow(configured.settings, "A"))
    assert "topic.filter.class='com.example.mm2.Broken' failed to initialise" in str(broken.value)
    assert "broken.setting is required" in str(broken.value)
    wrong = flow(f"plugin.path = {plugins}\nreplication.policy.class = {FILTER}\n")
    with pytest.raises(ConfigError, match=r"does not implement org\.apache\.kafka\.connect\.mirror\.ReplicationPolicy"):
        policy_for_flow(wrong.settings, "A")


def test_a_plugin_outlives_its_jvm(plugins):
    """The plug-in JVM killed (kill -9): the policy's next answer comes from the same class, configured
    as before, in a new JVM."""
    import os
    import signal

    configured = flow(f"plugin.path = {plugins}\nreplication.policy.class = {POLICY}\nprefix.policy.prefix = west_\n")
    policy = policy_for_flow(configured.settings, "A")
    assert policy.format_remote_topic("A", "orders") == "west_A__orders"
    first = policy._java._host
    os.kill(first.proc.pid, signal.SIGKILL)
    first.proc.wait(10)
    assert policy.format_remote_topic("A", "payments") == "west_A__payments"  # not cached: asked again
    assert policy._java._host is not first and policy._java._host.alive()
