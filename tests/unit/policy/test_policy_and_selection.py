"""Replication policies, topic filters and MM2's cycle detection (its unit-test examples)."""
from __future__ import annotations

import re

import pytest

from mirrorspark.config import ConfigError, parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.policy import DefaultReplicationPolicy, IdentityReplicationPolicy, policy_for_flow
from mirrorspark.policy.topic_selection import TopicSelection


def selection(extra: str = "", source: str = "source", target: str = "target") -> TopicSelection:
    text = (f"clusters = {source}, {target}\n{source}.bootstrap.servers=s:1\n{target}.bootstrap.servers=t:1\n"
            f"{source}->{target}.enabled=true\n" + extra)
    flow = parse_config(parse_properties(text)).enabled_flows[0]
    return TopicSelection(flow, policy_for_flow(flow.settings, flow.source.alias))


@pytest.mark.parametrize("topic", ["target.topic1", "target.source.topic1", "source.target.topic1",
                                   "target.source.target.topic1", "source.target.source.topic1"])
def test_cycles_are_refused(topic):
    assert selection().is_cycle(topic)
    assert not selection().should_replicate(topic)


@pytest.mark.parametrize("topic", ["topic1", "source.topic1"])
def test_non_cycles_are_replicated(topic):
    assert selection().should_replicate(topic)


def test_default_policy_names():
    policy = DefaultReplicationPolicy()
    assert policy.format_remote_topic("A", "orders") == "A.orders"
    assert policy.topic_source("B.A.orders") == "B"
    assert policy.upstream_topic("B.A.orders") == "A.orders"
    assert policy.original_topic("B.A.orders") == "orders"
    assert policy.checkpoints_topic("A") == "A.checkpoints.internal"
    assert policy.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    assert DefaultReplicationPolicy("_").format_remote_topic("A", "orders") == "A_orders"


def test_identity_policy_keeps_names_but_prefixes_heartbeats():
    policy = IdentityReplicationPolicy("A")
    assert policy.format_remote_topic("A", "orders") == "orders"
    assert policy.format_remote_topic("A", "heartbeats") == "A.heartbeats"
    assert policy.topic_source("orders") == "A"


def test_java_policy_class_names_are_accepted():
    sel = selection("replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n")
    assert isinstance(sel.policy, IdentityReplicationPolicy)


def test_unloadable_policy_names_the_key():
    with pytest.raises(ConfigError) as err:
        selection("replication.policy.class = no.such.Policy\n")
    assert err.value.key == "replication.policy.class"


def test_filters_excludes_win_and_internal_topics_never_replicate():
    sel = selection("source->target.topics = orders.*, payments\ntopics.exclude = orders\\.secret\n")
    assert sel.should_replicate("orders.eu") and sel.should_replicate("payments")
    assert not sel.should_replicate("orders.secret")
    assert not sel.should_replicate("payments2")
    assert not sel.should_replicate("__consumer_offsets")
    assert not sel.should_replicate("mm2-offset-syncs.target.internal")
    assert sel.should_replicate("heartbeats") and sel.should_replicate("other.heartbeats")


def test_empty_topics_list_replicates_nothing():
    assert not selection("source->target.topics =\n").should_replicate("orders")


@pytest.mark.parametrize("topic", ["topic1", "source.topic1", "target.topic1", "source.target.x", "x.target",
                                   "xtarget.y", "__consumer_offsets", "a.internal", "orders-internal", ".hidden",
                                   "heartbeats", "source.heartbeats", "target.heartbeats", "orders.replica"])
def test_subscribe_pattern_agrees_with_should_replicate_for_the_default_policy(topic):
    sel = selection()
    # The Java pattern uses only syntax Python's re shares (lookahead, escapes of non-word chars).
    matched = re.fullmatch(sel.subscribe_pattern(), topic) is not None
    assert matched == sel.should_replicate(topic)
