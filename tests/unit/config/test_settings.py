"""Typed settings: every flow key resolved once from its declaration, errors naming the key as written."""
from __future__ import annotations

import math
import re

import pytest

from mirrorspark.config import parse_config
from mirrorspark.config.keys import BY_NAME
from mirrorspark.config.settings import DriverSettings, FlowSettings, SettingsReader
from mirrorspark.control.topic_configs import TopicConfigs
from mirrorspark.errors import ConfigError
from mirrorspark.offsets.group_filter import GroupFilter
from mirrorspark.policy.loading import policy_for_flow

BASE = {"clusters": "A, B", "A.bootstrap.servers": "a:1", "B.bootstrap.servers": "b:1", "A->B.enabled": "true"}


def options(**extra: str) -> FlowSettings:
    return parse_config({**BASE, **extra}).enabled_flows[0].options


def test_defaults_come_from_the_key_declarations():
    flow = options()
    assert flow.replication_factor == int(BY_NAME["replication.factor"].default)
    assert flow.checkpoints_interval == float(BY_NAME["emit.checkpoints.interval.seconds"].default)
    assert flow.emit_offset_syncs and flow.emit_checkpoints and not flow.sync_group_offsets
    assert not flow.offset_syncs_on_target and not flow.defaults_from_source and not flow.fail_on_data_loss
    assert flow.policy_class == BY_NAME["replication.policy.class"].default
    assert flow.separator == "."


def test_flow_level_beats_top_level_and_where_names_the_key_as_written():
    flow = options(**{"emit.checkpoints.interval.seconds": "30", "A->B.emit.checkpoints.interval.seconds": "7",
                      "sync.group.offsets.enabled": "true"})
    assert flow.checkpoints_interval == 7.0 and flow.sync_group_offsets
    assert flow.where("emit.checkpoints.interval.seconds") == "A->B.emit.checkpoints.interval.seconds"
    assert flow.where("sync.group.offsets.enabled") == "sync.group.offsets.enabled"


def test_a_task_switched_off_has_an_infinite_interval_and_checkpoints_follow_offset_syncs():
    assert math.isinf(options(**{"sync.topic.acls.enabled": "false"}).topic_acls_interval)
    flow = options(**{"emit.offset-syncs.enabled": "false"})
    assert not flow.emit_offset_syncs and not flow.emit_checkpoints


def test_choices_are_case_insensitive_and_typed():
    flow = options(**{"offset-syncs.topic.location": "TARGET", "use.defaults.from": "Source",
                      "mirrorspark.data.loss": "FAIL"})
    assert flow.offset_syncs_on_target and flow.defaults_from_source and flow.fail_on_data_loss


def test_deprecated_aliases_and_empty_lists():
    flow = options(**{"topics.blacklist": "secret.*", "groups.exclude": ""})
    assert flow.topics_exclude == ("secret.*",) and flow.topics_exclude_key == "topics.blacklist"
    assert flow.groups_exclude == ()  # empty: exclude nothing, never "use the default"
    assert options(**{"topics.exclude": "a", "topics.blacklist": "b"}).topics_exclude == ("a",)


def test_empty_config_properties_exclude_copies_every_config():
    flow = parse_config({**BASE, "config.properties.exclude": ""}).enabled_flows[0]
    configs = TopicConfigs(flow=flow, source=None, target=None)  # type: ignore[arg-type]  # no admin call at construction

    class Entry:
        name, is_read_only, is_sensitive, source = "min.insync.replicas", False, False, 1
    assert configs.replicable(Entry())  # type: ignore[arg-type]
    default_flow = parse_config(BASE).enabled_flows[0]
    assert not TopicConfigs(flow=default_flow, source=None, target=None).replicable(Entry())  # type: ignore[arg-type]


def test_group_filter_uses_the_resolved_lists():
    accept = GroupFilter(options(**{"groups": "app-.*", "A->B.groups.exclude": "app-test"}))
    assert accept("app-1") and not accept("app-test") and not accept("other")


def test_resolving_names_the_key_of_a_bad_value():
    reader = SettingsReader({"replication.factor": "many"}, lambda key: f"A->B.{key}")
    with pytest.raises(ConfigError) as raised:
        reader.integer("replication.factor")
    assert raised.value.key == "A->B.replication.factor"
    with pytest.raises(ConfigError, match=re.escape("emit.checkpoints.interval.seconds must be at least 1")):
        SettingsReader({"emit.checkpoints.interval.seconds": "0"}).interval("emit.checkpoints")


def test_topic_map_is_parsed_once_with_the_flow():
    assert dict(options(**{"A->B.topic.map": "orders:orders-a"}).topic_map) == {"orders": "orders-a"}
    with pytest.raises(ConfigError, match=re.escape("A->B.topic.map: 'orders' is not a 'source:target' pair")):
        options(**{"A->B.topic.map": "orders"})


def test_policy_defaults_come_from_the_declarations():
    policy = policy_for_flow({}, "A")
    assert policy.format_remote_topic("A", "orders") == "A.orders"
    assert policy_for_flow({"replication.policy.separator": "_"}, "A").format_remote_topic("A", "x") == "A_x"


def test_driver_settings():
    driver = DriverSettings.resolve({"mirrorspark.metrics.lag.interval.seconds": "2.5",
                                     "mirrorspark.state.location": "/tmp/x"})
    assert driver.lag_interval == 2.5 and driver.state_location == "/tmp/x" and driver.rest_enabled


def test_a_top_level_interval_a_flow_switches_back_on_is_validated():
    flow_on = {"emit.checkpoints.enabled": "false", "emit.checkpoints.interval.seconds": "0",
               "A->B.emit.checkpoints.enabled": "true"}
    with pytest.raises(ConfigError, match="emit.checkpoints.interval.seconds must be at least 1, got 0 "
                                          r"\(seconds between runs"):
        parse_config({**BASE, **flow_on})
    off_everywhere = {"emit.checkpoints.enabled": "false", "emit.checkpoints.interval.seconds": "0"}
    assert math.isinf(options(**off_everywhere).checkpoints_interval)  # unused, so not refused


def test_a_disabled_flow_resolves_only_its_heartbeat_settings():
    mirror = parse_config({**BASE, "B->A.enabled": "false", "B->A.topic.map": "not-a-pair",
                           "B->A.emit.heartbeats.interval.seconds": "3"})
    pair = next(f for f in mirror.flows if f.name == "B->A")
    assert pair.heartbeats.emit and pair.heartbeats.interval == 3.0
    with pytest.raises(ConfigError, match=r"B->A\.topic\.map"):  # would refuse it, but nobody asks
        pair.resolve_options()
