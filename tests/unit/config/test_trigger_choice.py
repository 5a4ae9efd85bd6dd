"""``mirrorspark.trigger = auto``: real-time mode where the file's local master holds every real-time
task beside the micro-batch flows, micro-batches otherwise; the choice is made once, with its reason."""
from __future__ import annotations

import pytest

from mirrorspark.config import parse_config
from mirrorspark.config.model import FlowConfig
from mirrorspark.config.trigger_choice import local_slots

PAIR = {"clusters": "A, B, C", "A.bootstrap.servers": "a:1", "B.bootstrap.servers": "b:1",
        "C.bootstrap.servers": "c:1", "A->B.enabled": "true"}


def flows(**extra: str) -> dict[str, FlowConfig]:
    return {f.name: f for f in parse_config({**PAIR, **extra}).enabled_flows}


def test_one_flow_on_two_slots_runs_in_real_time_mode():
    flow = flows(**{"mirrorspark.trigger": "auto", "spark.master": "local[2]"})["A->B"]
    assert flow.options.realtime and flow.options.trigger == "auto"
    assert flow.auto_choice == ("realtime", "spark.master = local[2] has 2 task slot(s): 1 for real-time tasks, "
                                            "0 for micro-batch flows")


def test_flows_the_slots_cannot_hold_run_micro_batches_all_of_them():
    chosen = flows(**{"mirrorspark.trigger": "auto", "spark.master": "local[2]", "B->A.enabled": "true",
                      "A->C.enabled": "true"})
    assert not any(f.options.realtime for f in chosen.values())
    assert chosen["A->C"].auto_choice[1] == ("spark.master = local[2] has 2 task slot(s), fewer than the 3 "
                                             "real-time tasks and 0 micro-batch flow(s) would need")


def test_explicit_choices_count_and_stay():
    chosen = flows(**{"mirrorspark.trigger": "auto", "spark.master": "local[3]", "B->A.enabled": "true",
                      "B->A.mirrorspark.trigger": "microbatch", "A->C.enabled": "true",
                      "A->C.mirrorspark.trigger": "realtime", "A->C.mirrorspark.realtime.tasks": "2"})
    assert not chosen["B->A"].options.realtime and chosen["B->A"].auto_choice == ("", "")
    assert chosen["A->C"].options.realtime and chosen["A->C"].auto_choice == ("", "")
    assert not chosen["A->B"].options.realtime, "2 real-time tasks of A->C, 1 of A->B and a micro-batch flow: 4 > 3"
    assert flows(**{"mirrorspark.trigger": "auto", "spark.master": "local[4]", "B->A.enabled": "true",
                    "B->A.mirrorspark.trigger": "microbatch", "A->C.enabled": "true",
                    "A->C.mirrorspark.trigger": "realtime",
                    "A->C.mirrorspark.realtime.tasks": "2"})["A->B"].options.realtime


def test_a_flow_bounding_its_batches_by_records_keeps_micro_batches_and_is_not_refused():
    chosen = flows(**{"mirrorspark.trigger": "auto", "spark.master": "local[4]",
                      "A->B.mirrorspark.batch.max.records": "1000", "B->A.enabled": "true"})
    assert not chosen["A->B"].options.realtime
    assert chosen["A->B"].auto_choice[1] == "A->B.mirrorspark.batch.max.records = 1000 bounds micro-batches"
    assert chosen["B->A"].options.realtime, "A->B takes one slot as a micro-batch flow, B->A one real-time task"


def test_a_cluster_master_keeps_micro_batches():
    flow = flows(**{"mirrorspark.trigger": "auto", "spark.master": "spark://host:7077"})["A->B"]
    assert not flow.options.realtime
    assert flow.auto_choice[1].startswith("spark.master = spark://host:7077 is a cluster")


def test_the_default_is_auto():
    local = flows(**{"spark.master": "local[2]"})["A->B"]
    assert local.options.trigger == "auto" and local.options.realtime and local.auto_choice[0] == "realtime"
    cluster = flows(**{"spark.master": "spark://host:7077"})["A->B"]
    assert cluster.options.trigger == "auto" and not cluster.options.realtime and cluster.auto_choice[0] == "microbatch"


def test_microbatch_named_is_untouched():
    flow = flows(**{"mirrorspark.trigger": "microbatch", "spark.master": "local[2]"})["A->B"]
    assert not flow.options.realtime and flow.auto_choice == ("", "")


@pytest.mark.parametrize(("master", "cpus", "slots"), [("local", 1, 1), ("local[4]", 1, 4), ("local[4]", 2, 2),
                                                       (" local[3, 2] ", 1, 3), ("k8s://https://api:6443", 1, None)])
def test_local_slots(master, cpus, slots):
    assert local_slots(master, cpus) == slots
