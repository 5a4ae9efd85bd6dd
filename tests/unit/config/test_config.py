"""mm2.properties parsing and MM2's precedence rules."""
from __future__ import annotations

import pytest

from mirrorspark.config import ConfigError, parse_config
from mirrorspark.config.properties_file import parse_properties


def config(text: str, clusters=None):
    return parse_config(parse_properties(text), clusters)


BASE = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"


def test_java_properties_syntax():
    props = parse_properties(
        "# comment\n! also a comment\nclusters = A, B\nkey:value\nspaced value here\n"
        "long = one, \\\n    two\nescaped = tab\\there\\u0041\n\n  indented=1\n")
    assert props == {"clusters": "A, B", "key": "value", "spaced": "value here", "long": "one, two",
                     "escaped": "tab\thereA", "indented": "1"}


def test_flows_default_disabled_and_enabled_by_key():
    mirror = config(BASE + "A->B.enabled = true\n")
    assert [f.name for f in mirror.flows] == ["A->B", "B->A"]
    assert [f.name for f in mirror.enabled_flows] == ["A->B"]


def test_flow_setting_beats_top_level():
    mirror = config(BASE + "A->B.enabled=true\ntopics = x.*\nA->B.topics = y.*\nreplication.factor = 3\n")
    flow = mirror.enabled_flows[0]
    assert flow.options.topics == ("y.*",)
    assert flow.options.replication_factor == 3


def test_mm2_defaults():
    flow = config(BASE + "A->B.enabled=true\n").enabled_flows[0]
    assert flow.options.topics == (".*",)
    assert flow.options.topics_exclude == (r".*[\-\.]internal", r".*\.replica", "__.*")
    assert flow.options.replication_factor == 2


def test_cluster_consumer_override_beats_flow_consumer_override():
    flow = config(BASE + "A->B.enabled=true\nA->B.consumer.fetch.min.bytes=1\nA.consumer.fetch.min.bytes=2\n"
                  "A->B.consumer.max.poll.records=7\n").enabled_flows[0]
    consumer = flow.source_consumer()
    assert consumer["fetch.min.bytes"] == "2"
    assert consumer["max.poll.records"] == "7"
    assert consumer["bootstrap.servers"] == "a:9092"


def test_top_level_security_is_a_fallback_for_every_cluster():
    flow = config(BASE + "A->B.enabled=true\nsecurity.protocol=SSL\nB.security.protocol=SASL_SSL\n").enabled_flows[0]
    assert flow.source_consumer()["security.protocol"] == "SSL"
    assert flow.target_producer()["security.protocol"] == "SASL_SSL"


def test_target_producer_overrides():
    flow = config(BASE + "A->B.enabled=true\nB.producer.linger.ms=20\nA->B.producer.override.linger.ms=30\n"
                  ).enabled_flows[0]
    assert flow.target_producer()["linger.ms"] == "30"


def test_clusters_flag_keeps_flows_whose_target_is_listed():
    mirror = config(BASE + "A->B.enabled=true\nB->A.enabled=true\n", clusters=["B"])
    assert [f.name for f in mirror.flows] == ["A->B"]


def test_spark_keys_are_collected():
    mirror = config(BASE + "A->B.enabled=true\nspark.master=local[1]\n")
    assert mirror.spark == {"spark.master": "local[1]"}


@pytest.mark.parametrize("text, key", [
    ("A.bootstrap.servers = a:1\n", "clusters"),
    ("clusters = \n", "clusters"),
    (BASE + "A->C.enabled = true\n", "A->C.enabled"),
    (BASE + "C->B.enabled = true\n", "C->B.enabled"),  # a flow of a cluster not in clusters cannot run
    (BASE + "A->B.enabled = yes\n", "A->B.enabled"),
    ("clusters = A, B\nA.bootstrap.servers = a:1\nA->B.enabled = true\n", "B.bootstrap.servers"),
    (BASE + "A->B.enabled = true\nreplication.factor = two\n", "replication.factor"),
    (BASE + "A->B.enabled = true\nA->B.replication.factor = 0\n", "A->B.replication.factor"),
])
def test_errors_name_the_key(text, key):
    with pytest.raises(ConfigError) as err:
        config(text)
    assert err.value.key == key
    assert key in str(err.value)


def test_unknown_cluster_in_clusters_flag():
    with pytest.raises(ConfigError, match="--clusters names C"):
        config(BASE, clusters=["C"])


@pytest.mark.parametrize("only", [["A"], ["B"]])
def test_an_identity_pair_is_active_active_even_when_clusters_runs_one_direction(only):
    """MM2's multi-DC deployment runs one process per target (--clusters): each sees one flow of the
    active/active pair, and that flow must still mark and skip provenance."""
    text = BASE + ("A->B.enabled = true\nB->A.enabled = true\n"
                   "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n")
    (flow,) = config(text, only).enabled_flows
    assert flow.target.alias == only[0] and flow.same_names


def test_a_built_in_policy_in_module_colon_class_form_is_the_built_in_one():
    text = BASE + ("A->B.enabled = true\nB->A.enabled = true\n"
                   "replication.policy.class = mirrorspark.policy.default:DefaultReplicationPolicy\n")
    assert len(config(text).enabled_flows) == 2  # a safe cycle: the default policy renames


def test_an_interval_of_a_task_switched_off_is_not_range_checked():
    text = BASE + "A->B.enabled = true\nemit.heartbeats.enabled = false\nemit.heartbeats.interval.seconds = -1\n"
    assert config(text).enabled_flows
    with pytest.raises(ConfigError, match=r"emit\.heartbeats\.interval\.seconds"):
        config(BASE + "A->B.enabled = true\nemit.heartbeats.interval.seconds = -1\n")
    with pytest.raises(ConfigError, match=r"A->B\.emit\.checkpoints\.interval\.seconds"):  # switched on again per flow
        config(BASE + "A->B.enabled = true\nemit.checkpoints.enabled = false\nA->B.emit.checkpoints.enabled = true\n"
               "A->B.emit.checkpoints.interval.seconds = 0\n")
