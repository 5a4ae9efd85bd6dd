"""A flow's topic plan: source -> remote topic, and its one inverse."""
from __future__ import annotations

import dataclasses

import pytest

from mirrorspark.control.remote_topics import TopicPlan


def test_the_plan_knows_the_source_of_each_remote_topic():
    plan = TopicPlan({"t": "A.t", "u": "renamed"}, {"t": 3, "u": 1})
    assert plan.source_of == {"A.t": "t", "renamed": "u"}
    assert TopicPlan().source_of == {}


def test_source_of_follows_the_plan_and_is_not_an_argument():
    plan = TopicPlan({"t": "A.t"}, {"t": 1})
    assert plan == TopicPlan({"t": "A.t"}, {"t": 1}) and "source_of" not in repr(plan)
    with pytest.raises(TypeError):
        TopicPlan({"t": "A.t"}, {"t": 1}, {"A.t": "t"})  # type: ignore[call-arg]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.source_of = {}  # type: ignore[misc]
