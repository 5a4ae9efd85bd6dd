"""Real-time mode's decisions without Spark: task slots, the slot rule, the assignment."""
from __future__ import annotations

import pytest

from mirrorspark.control.remote_topics import TopicPlan
from mirrorspark.errors import ConfigError
from mirrorspark.pipeline.realtime import SlotBook, assignment, task_slots


class Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class Context:
    defaultParallelism = 6


class Session:
    def __init__(self, **conf: str) -> None:
        self.conf = Conf(conf)
        self.sparkContext = Context()


@pytest.mark.parametrize(("master", "slots"), [("local", 1), ("local[8]", 8), ("local[12, 3]", 12),
                                               ("spark://h:7077", 6)])
def test_task_slots_follow_the_master(master, slots):
    assert task_slots(Session(), master)[0] == slots


def test_task_slots_divide_by_cpus_per_task():
    assert task_slots(Session(**{"spark.task.cpus": "2"}), "local[8]") == (4, "spark.master = local[8]")


def test_the_slot_rule_counts_other_flows_and_names_what_to_change():
    book = SlotBook()
    book.hold("B->A", 1)  # a micro-batch flow needs one
    book.claim("A->B", "mirrorspark.trigger", {"orders": 4, "heartbeats": 1}, 6, "spark.master = local[6]")
    with pytest.raises(ConfigError) as refused:
        book.claim("A->C", "A->C.mirrorspark.trigger", {"orders": 4}, 6, "spark.master = local[6]")
    assert refused.value.key == "A->C.mirrorspark.trigger"
    assert "reads 4 partition(s) (orders: 4), other flows of this process hold 6" in str(refused.value)
    assert "local[10]" in str(refused.value)
    book.release("A->B")
    book.claim("A->C", "A->C.mirrorspark.trigger", {"orders": 4}, 6, "spark.master = local[6]")


def test_a_flow_claiming_again_replaces_its_own_slots():
    book = SlotBook()
    book.claim("A->B", "mirrorspark.trigger", {"t": 5}, 6, "")
    book.claim("A->B", "mirrorspark.trigger", {"t": 6}, 6, "")  # a restart after a partition was added


def test_assignment_lists_the_planned_partitions_only():
    plan = TopicPlan({"orders": "A.orders", "empty": "A.empty"}, {"orders": 3, "empty": 0, "other": 2})
    text, partitions = assignment(plan)
    assert partitions == {"orders": 3}
    assert text == '{"orders": [0, 1, 2]}'
