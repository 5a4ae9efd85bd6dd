"""Claims name the deployment: separate lease groups on one cluster pair never set each other's state aside."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from mirrorspark.coordination import claims
from mirrorspark.pipeline import flow as flow_module
from mirrorspark.pipeline.flow import Flow
from mirrorspark.pipeline.flow_assembly import FlowContext
from mirrorspark.state.files import LocalFiles

FLOW = "a->b"


class ClaimsTopic:
    """mirrorspark.leases.internal on the target: one partition, records in the order written."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes]] = []

    def read_to_end(self, conf, topic, timeout=60.0, partitions=None):
        assert topic == claims.LEASE_TOPIC
        for offset, (key, value) in enumerate(list(self.records)):
            yield key, value, 0, offset, 0

    def send_all(self, producer, topic, records, what, timeout=30.0, timestamp=None):
        assert topic == claims.LEASE_TOPIC
        self.records.extend(records)


@pytest.fixture
def topic(monkeypatch) -> ClaimsTopic:
    fake = ClaimsTopic()
    monkeypatch.setattr(claims, "read_to_end", fake.read_to_end)
    monkeypatch.setattr(claims, "send_all", fake.send_all)
    monkeypatch.setattr(claims, "producer", lambda conf: None)
    monkeypatch.setattr(claims.Claims, "ensure_topic", lambda self: None)  # the topic exists
    monkeypatch.setattr(flow_module, "assemble_flow", lambda context, writing, unbroken, lease: "assembled")
    return fake


def _state_dir(root) -> LocalFiles:
    """A state folder whose flow has an intact copy position (Spark's checkpoint and write marks)."""
    state = LocalFiles(root)
    folder = state.child("a").child("b")
    checkpoint = folder.child("checkpoint")
    checkpoint.child("offsets").write("0", "v1\n{}\n{\"t\":{\"0\":5}}")
    checkpoint.child("commits").write("0", "v1\n{}")
    folder.write("write-marks.json", json.dumps({"source_next": {}}))
    return state


def _seat(state: LocalFiles, instance: str, group: str | None) -> Flow:
    options = SimpleNamespace(lease_enabled=True, lease_group=group, lease_timeout=10.0)
    flow = SimpleNamespace(name=FLOW, source=SimpleNamespace(alias="a"), target=SimpleNamespace(alias="b"),
                           options=options, target_producer=dict)
    clusters = SimpleNamespace(admin=lambda cluster: (None, {"bootstrap.servers": "target:9092"}),
                               settings=lambda cluster: {"bootstrap.servers": "target:9092"})
    shared = SimpleNamespace(clusters=clusters, state=state, scheduler=None, metrics=None)
    return Flow(context=FlowContext(config=flow, policy=None, shared=shared, instance=instance))


def _intact(seat: Flow) -> bool:
    return seat.folder.child("checkpoint").child("offsets").read("0") is not None


def test_deployments_in_separate_lease_groups_keep_their_own_state_across_restarts(topic, tmp_path):
    # Two deployments copy different topics between the same clusters, each in its own lease group
    # (what mirrorspark.flow.lease.group is for): both restart, more than once, in turn.
    east, west = _state_dir(tmp_path / "east"), _state_dir(tmp_path / "west")
    for _restart in range(2):
        for state, instance, group in ((east, "east", "mirror.orders"), (west, "west", "mirror.payments")):
            seat = _seat(state, instance, group)
            seat.assemble()
            assert _intact(seat), f"{instance}'s state was set aside after the other deployment's claim"


def test_a_standby_of_the_same_deployment_still_finds_its_state_out_of_date(topic, tmp_path):
    writer, standby = _seat(_state_dir(tmp_path / "one"), "one", "g"), _seat(_state_dir(tmp_path / "two"), "two", "g")
    writer.assemble()
    assert _intact(writer)
    standby.assemble()  # the writer stopped; the standby took the flow over
    assert not _intact(standby)
    writer.assemble()  # and back: the first writer's state is older than the standby's copy now
    assert not _intact(writer)


def test_the_default_group_is_one_deployment_too(topic, tmp_path):
    first, second = _seat(_state_dir(tmp_path / "1"), "1", None), _seat(_state_dir(tmp_path / "2"), "2", None)
    first.assemble()
    second.assemble()
    assert _intact(first) and not _intact(second)
