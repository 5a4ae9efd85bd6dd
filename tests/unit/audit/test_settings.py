"""The audit's input: each refusal is a ConfigError naming the key to change, with the message the
CLI prints; and each cluster is read as the flow reads it."""
from __future__ import annotations

import pytest
from confluent_kafka import IsolationLevel

from mirrorspark.audit.settings import (
    batch_options,
    check_auditable,
    find_flow,
    plans_for,
    source_isolation,
    target_isolation,
    target_reader,
    topic_pattern,
)
from mirrorspark.errors import ConfigError
from mirrorspark.offsets.ranges import OffsetRanges
from mirrorspark.partition import OffsetRun
from mirrorspark.policy import policy_for_flow
from mirrorspark.policy.topic_selection import TopicSelection

FLOW = "primary->backup"  # the flow of conftest's mirror_config


def refusal(call, *args, **kwargs) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        call(*args, **kwargs)
    return caught.value


def test_find_flow_takes_any_flow_of_the_configuration_enabled_or_not(mirror_config):
    config = mirror_config()
    assert find_flow(config, FLOW).name == FLOW
    assert find_flow(config, " backup->primary ").name == "backup->primary"  # disabled: its state may remain


@pytest.mark.parametrize("enabled, listed", [(True, FLOW), (False, "none enabled")])
def test_an_unknown_flow_is_refused_under_the_flow_option(mirror_config, enabled, listed):
    error = refusal(find_flow, mirror_config(enabled=enabled), "primary->elsewhere")
    assert error.key == "--flow"
    assert str(error) == ("--flow 'primary->elsewhere' is not a flow of this configuration (flows are source->target "
                          f"between clusters primary, backup; enabled: {listed})")


def test_topics_is_a_regular_expression_or_refused_under_the_topics_option():
    assert topic_pattern(None) is None
    assert topic_pattern("orders.*").fullmatch("orders-eu")
    error = refusal(topic_pattern, "orders(")
    assert error.key == "--topics"
    assert str(error).startswith("--topics 'orders(' is not a valid regular expression: Unclosed group near index 7")


@pytest.mark.parametrize("line, key", [
    ("emit.offset-syncs.enabled = false", "emit.offset-syncs.enabled"),
    (f"{FLOW}.emit.offset-syncs.enabled = false", f"{FLOW}.emit.offset-syncs.enabled"),
])
def test_a_flow_without_offset_syncs_is_refused_naming_the_key_where_it_was_set(mirror_config, line, key):
    flow = mirror_config(line + "\n").enabled_flows[0]
    error = refusal(check_auditable, flow)
    assert error.key == key
    assert str(error) == (f"{key} = false: flow {FLOW} keeps no offset ranges, so there is nothing exact to audit "
                          "against")
    check_auditable(mirror_config().enabled_flows[0])  # on by default


def plans(mirror_config, ranges: OffsetRanges, topics: str | None):
    flow = mirror_config().enabled_flows[0]
    selection = TopicSelection(flow, policy_for_flow(flow.settings, flow.source.alias))
    return plans_for(ranges, flow=flow, selection=selection, pattern=topic_pattern(topics), topics=topics,
                     folder_uri="file:/state/primary/backup", where="local folder /state")


def test_an_empty_range_log_is_refused_under_the_state_location(mirror_config):
    error = refusal(plans, mirror_config, OffsetRanges(), None)
    assert error.key == "mirrorspark.state.location"
    assert str(error) == (f"no offset ranges for flow {FLOW} in file:/state/primary/backup/offset-ranges: nothing "
                          "has been replicated with this state location (local folder /state); pass the --state-dir "
                          "`mirrorspark run` used, or check mirrorspark.state.location")


def test_topics_matching_nothing_is_refused_naming_ten_of_the_replicated_topics(mirror_config):
    ranges = OffsetRanges()
    for n in range(12):
        ranges.add(f"t{n:02d}", 0, [OffsetRun(upstream=0, downstream=0, count=1)])
    error = refusal(plans, mirror_config, ranges, "nothing-.*")
    assert error.key == "--topics"
    assert str(error) == (f"--topics 'nothing-.*' matches none of the 12 replicated topic(s) of flow {FLOW} "
                          "(t00, t01, t02, t03, t04, t05, t06, t07, t08, t09, ...)")
    assert [p.source_topic for p in plans(mirror_config, ranges, "t1.")] == ["t10", "t11"]


def test_the_target_is_read_with_its_own_connection_and_none_of_the_flows_source_settings(mirror_config):
    flow = mirror_config(f"{FLOW}.consumer.max.poll.records = 7\nbackup.consumer.client.rack = r2\n").enabled_flows[0]
    assert flow.source_consumer()["max.poll.records"] == "7"
    reading = target_reader(flow)
    assert reading.source == flow.target and not reading.flow_settings
    consumer = reading.source_consumer()
    assert consumer["bootstrap.servers"] == "127.0.0.1:2" and consumer["client.rack"] == "r2"
    assert "max.poll.records" not in consumer


@pytest.mark.parametrize("extra, source, target", [
    ("", IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_UNCOMMITTED),
    (f"{FLOW}.consumer.isolation.level = read_committed\n", IsolationLevel.READ_COMMITTED,
     IsolationLevel.READ_UNCOMMITTED),
    # Exactly-once: the source is read committed as the flow reads it; aborted copies on the target are no copies.
    ("backup.exactly.once.source.support = enabled\n", IsolationLevel.READ_COMMITTED, IsolationLevel.READ_COMMITTED),
])
def test_each_side_is_read_at_the_isolation_the_flow_implies(mirror_config, extra, source, target):
    flow = mirror_config(extra).enabled_flows[0]
    assert (source_isolation(flow), target_isolation(flow)) == (source, target)


def test_a_batch_read_keeps_the_client_settings_and_headers_and_never_fails_on_data_loss():
    streaming = {"kafka.bootstrap.servers": "s:1", "kafka.security.protocol": "SSL", "includeHeaders": "true",
                 "subscribe": "orders", "startingOffsets": "earliest", "maxOffsetsPerTrigger": "1000",
                 "failOnDataLoss": "true"}
    assert batch_options(streaming) == {"kafka.bootstrap.servers": "s:1", "kafka.security.protocol": "SSL",
                                        "includeHeaders": "true", "failOnDataLoss": "false"}



def test_topics_known_to_the_range_log_without_runs_yet_are_said_to_be_unrecorded(mirror_config):
    """Real-time mode records a batch when it ends; right after a stop its last batch's copies are in
    the range log only after the next start. The refusal said the topic matched nothing."""
    ranges = OffsetRanges()
    ranges.add("t00", 0, [OffsetRun(upstream=0, downstream=0, count=1)])
    ranges.restore("avro", 0, [])
    error = refusal(plans, mirror_config, ranges, "avro")
    assert error.key == "--topics"
    assert str(error) == (f"flow {FLOW}: the copies of 1 topic(s) (avro) are not in the range log yet: a real-time "
                          "batch is recorded when it ends, and one a stop cut short at the flow's next start; audit "
                          "again after that")
    assert "matches none" in str(refusal(plans, mirror_config, ranges, "nothing"))
