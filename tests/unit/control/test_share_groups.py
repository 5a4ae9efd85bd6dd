"""Share groups' answers as ``promote`` reads them, from a stand-in for the client JVM's bridge."""
from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaError, KafkaException

from mirrorspark.control.share_groups import ShareGroups
from mirrorspark.errors import ClusterFailure


class Bridge:
    """Answers as ``JavaAdminClient.ask_share_groups`` gives them (JSON parsed), or raises ``error``."""

    def __init__(self, answers: dict[str, str], error: int | None = None) -> None:
        self.answers = answers
        self.error = error

    def ask_share_groups(self, what, thunk):
        if self.error is not None:
            raise KafkaException(KafkaError(self.error, f"{what}: refused"))

        class Java:
            def __getattr__(_, name):
                return lambda *args: self.answers[name]

        return json.loads(thunk(Java()))


def groups(answers: dict[str, str], error: int | None = None) -> ShareGroups:
    return ShareGroups(client=Bridge(answers, error), cluster="A", timeout=1.0)


def test_members_offsets_and_lags_read_as_promote_needs_them():
    found = groups({"list": '[["b", "EMPTY"], ["a", "STABLE"]]',
                    "describe": '{"a": {"ok": {"state": "STABLE", "members": [["m1", "c1", "/10.0.0.1", []]]}}}',
                    "startOffsets": '[["t", 0, 0, 0], ["t", 1, 12, null]]'})
    assert found.ids() == ["a", "b"]
    described = found.describe("a")
    assert described.members == ("m1 (c1@/10.0.0.1)",) and not described.idle
    assert found.start_offsets("a") == {("t", 0): (0, 0), ("t", 1): (12, None)}


def test_a_group_the_cluster_does_not_know_is_dead_and_other_errors_name_the_cluster():
    unknown = groups({"describe": json.dumps({"g": {"error": [KafkaError.GROUP_ID_NOT_FOUND, False, "no"]}})})
    assert unknown.describe("g").state == "DEAD" and unknown.describe("g").idle
    refused = groups({"describe": json.dumps({"g": {"error": [KafkaError.GROUP_AUTHORIZATION_FAILED, False,
                                                              "not allowed"]}})})
    with pytest.raises(ClusterFailure, match="cluster A: not allowed"):
        refused.describe("g")


def test_brokers_older_than_share_groups_have_none_and_other_failures_stop():
    assert groups({}, error=KafkaError.UNSUPPORTED_VERSION).ids() == []
    with pytest.raises(ClusterFailure, match="cluster A: listing share groups: refused"):
        groups({}, error=KafkaError._TIMED_OUT).ids()
