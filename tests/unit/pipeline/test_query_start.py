"""Where a flow's query starts: explicit positions only on a first start after MM2 or with
``auto.offset.reset = none``, MM2's positions where it has them, a refusal naming the key where none."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from mirrorspark.errors import ConfigError
from mirrorspark.pipeline import query_start
from mirrorspark.pipeline.query_start import QueryStart


def start(reset: str, takeover: dict | None = None, fixed: frozenset | None = None,
          custom_filter: object | None = None) -> QueryStart:
    flow = SimpleNamespace(name="a->b", source_reset=lambda: (reset, "a.consumer.auto.offset.reset"))
    plan = SimpleNamespace(partitions={"orders": 2}, remote={"orders": "a.orders"})
    remote = SimpleNamespace(plan=plan, source="admin", fixed_topics=fixed)
    selection = SimpleNamespace(custom_filter=custom_filter, subscribe_pattern=lambda: "orders|pay.*",
                                exact_pattern=lambda topics: "|".join(sorted(topics)))
    return QueryStart(flow=flow, selection=selection, remote_topics=remote, takeover=takeover)


@pytest.fixture(autouse=True)
def source_topics(monkeypatch):
    monkeypatch.setattr(query_start, "topic_partitions", lambda _admin: {"orders": 2, "payments": 1, "other": 3})


def test_explicit_positions_only_on_a_first_start_after_mm2_or_with_reset_none():
    assert not start("earliest").explicit(first_start=True)
    assert start("earliest", {("orders", 0): 5}).explicit(first_start=True)
    assert not start("earliest", {("orders", 0): 5}).explicit(first_start=False)  # Spark's checkpoint resumes
    assert start("none", {("orders", 0): 5, ("orders", 1): 0, ("payments", 0): 1}).explicit(first_start=True)


def test_mm2_positions_where_it_has_them_and_the_reset_elsewhere():
    offsets = start("earliest", {("orders", 0): 5}).starting_offsets("orders|pay.*")
    assert offsets == {"orders": {"0": 5, "1": -2}, "payments": {"0": -2}}  # every topic the pattern matches
    latest = start("latest", {("orders", 1): 9}).starting_json("orders|pay.*", topics={"orders": 2})
    assert json.loads(latest) == {"orders": {"0": -1, "1": 9}}  # an assignment: only its topics


def test_the_topics_listed_are_those_javas_matches_accepts_as_sparks_source_does():
    """Issue 44: Spark's source matches its pattern with java.util.regex, whole names only; so does the
    list of starting offsets (a Java-only construct matched, a partial match not)."""
    offsets = start("earliest", {}).starting_offsets(r"\p{Lower}+s|other")
    assert offsets == {"orders": {"0": -2, "1": -2}, "payments": {"0": -2}, "other": {"0": -2, "1": -2, "2": -2}}
    assert start("earliest", {}).starting_offsets("order") == {}  # Python's search would take "orders"


def test_reset_none_refuses_a_partition_without_a_saved_position_naming_the_key():
    with pytest.raises(ConfigError, match=r"a.consumer.auto.offset.reset = none.*payments-0"):
        start("none", {("orders", 0): 5, ("orders", 1): 0}).starting_offsets("orders|pay.*")


def test_a_java_topic_filter_subscribes_to_exactly_what_it_accepts_and_notices_a_change():
    chosen = start("earliest", custom_filter=object())
    assert chosen.subscribe_pattern() == "orders" and chosen.subscribed == frozenset({"orders"})
    assert not chosen.filter_moved(SimpleNamespace(remote={"orders": "a.orders"}))
    assert chosen.filter_moved(SimpleNamespace(remote={"orders": "a.orders", "pay": "a.pay"}))
    plain = start("earliest")
    assert plain.subscribe_pattern() == "orders|pay.*" and not plain.filter_moved(SimpleNamespace(remote={}))
