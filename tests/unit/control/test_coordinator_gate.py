"""Group-coordinator requests are not sent into an outage: librdkafka aborts the process when one
meets a connection that just dropped (upstream issue 4605), so each round asks the cluster first."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from mirrorspark.config import parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.control.admin import admin_client, coordinator_gate, not_answering
from mirrorspark.errors import ClusterFailure
from mirrorspark.offsets.checkpoint_store import CheckpointStore
from mirrorspark.offsets.checkpoint_task import CheckpointTask
from mirrorspark.offsets.group_filter import GroupFilter
from mirrorspark.offsets.group_sync import GroupOffsetSync
from mirrorspark.policy import policy_for_flow
from mirrorspark.policy.topic_selection import TopicSelection

NOBODY = "127.0.0.1:9"  # nothing listens: a cluster in an outage, as a real client sees it
FLOW = parse_config(parse_properties(f"clusters = a, b\na.bootstrap.servers = {NOBODY}\n"
                                     f"b.bootstrap.servers = {NOBODY}\na->b.enabled = true\n")).enabled_flows[0]


def test_a_cluster_that_does_not_answer_is_refused_by_the_gate_naming_it():
    started = time.monotonic()
    with pytest.raises(ClusterFailure, match="source cluster a does not answer"):
        coordinator_gate(admin_client({"bootstrap.servers": NOBODY}), "source cluster a", timeout=1.0)
    assert time.monotonic() - started < 10


def test_a_checkpoint_round_into_an_outage_sends_no_group_request():
    selection = TopicSelection(FLOW, policy_for_flow(FLOW.settings, "a"))
    task = CheckpointTask(flow_name="a->b", target_alias="b", selection=selection,
                          groups=GroupFilter(FLOW.options, None), source=admin_client({"bootstrap.servers": NOBODY}),
                          target=None,  # type: ignore[arg-type]
                          target_conf={}, translate=lambda topic, partition, offset: None, replication_factor=1,
                          resets=(lambda: set(), lambda done: None))
    task._producer = object()  # type: ignore[assignment]
    asked: list[str] = []
    task.source_groups = lambda: asked.append("groups") or []  # type: ignore[method-assign]
    with pytest.raises(ClusterFailure, match="source cluster a does not answer"):
        task.run_once()
    assert asked == []


def test_a_group_sync_round_stops_at_the_first_group_the_cluster_does_not_answer_for(monkeypatch):
    import mirrorspark.offsets.group_sync as module
    monkeypatch.setattr(module, "coordinator_gate", lambda admin, cluster: None)  # answered, then went away
    store = CheckpointStore()
    monkeypatch.setattr(store, "groups", lambda: {"g1", "g2", "g3"})
    sync = GroupOffsetSync("a->b", None, store)  # type: ignore[arg-type]
    tried: list[str] = []

    def sync_group(group: str) -> int:
        tried.append(group)
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Broker transport failure"))

    monkeypatch.setattr(sync, "sync_group", sync_group)
    with pytest.raises(ClusterFailure, match="syncing offsets of group g1 failed"):
        sync.run_once()
    assert tried == ["g1"]


def test_only_codes_of_a_cluster_that_does_not_answer_count_as_not_answering():
    assert not_answering(KafkaException(KafkaError(KafkaError._TIMED_OUT)))
    assert not_answering(KafkaException(KafkaError(KafkaError.COORDINATOR_NOT_AVAILABLE)))
    assert not not_answering(KafkaException(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED)))
    assert not not_answering(KafkaException("text only"))
