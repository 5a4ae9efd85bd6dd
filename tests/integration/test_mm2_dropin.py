"""MM2 files mirrorspark used to refuse, run against real brokers: a target producer without
idempotence (older brokers, no IdempotentWrite ACL) copies each record once, in order, with exact
failover; ``auto.offset.reset = none`` refuses a first start without saved positions, naming the key,
and runs once positions exist."""
from __future__ import annotations

import time

import pytest
from conftest import run_cli, running_mirrorspark, write_config
from kafka_tools import count, create_topic, lost_and_duplicated, produce, read_all, wait_for_count
from test_integrity_drills import numbered
from test_offsets_e2e import checkpoints, cli_json, consume, read_from
from test_topologies_and_topics import wait_until

pytestmark = pytest.mark.broker


def seq(record) -> int:
    return int(dict(record.headers)["seq"])


def test_no_idempotence_then_auto_offset_reset_none_copy_each_record_once_and_fail_over_exactly(
        clusters, unique, tmp_path):
    topic, group, remote = f"dropin-{unique}", f"group-{unique}", f"primary.dropin-{unique}"
    create_topic(clusters["primary"], topic, 3)
    produce(clusters["primary"], topic, numbered(0, 600, 3))
    flow = (f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
            "emit.checkpoints.interval.seconds = 1\n")
    state = tmp_path / "state"

    # auto.offset.reset = none and nothing saved yet: MM2's consumer would not start either
    none = write_config(tmp_path / "none.properties", clusters,
                        flow + "primary.consumer.auto.offset.reset = none\n")
    refused = run_cli("run", str(none), "--state-dir", str(state), timeout=180)
    assert refused.returncode == 2, refused.stderr
    assert "primary.consumer.auto.offset.reset = none" in refused.stderr and "no saved position" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert count(clusters["backup"], remote) == 0  # nothing copied

    # without idempotence: one request in flight keeps order; a warning names the key and the cost
    plain = write_config(tmp_path / "plain.properties", clusters,
                         flow + "backup.producer.enable.idempotence = false\n")
    consumed = consume(clusters["primary"], group, topic, 450)  # at least 50 of each partition's 200
    with running_mirrorspark(plain, state) as run:
        wait_for_count(clusters["backup"], remote, 600)
        translated = wait_until(lambda: (c := checkpoints(clusters["backup"], "primary", group)) and len(c) == 3
                                and c, "checkpoints for the three partitions")
    assert "backup.producer.enable.idempotence = false" in run.output() and "one request in flight" in run.output()

    # a position saved now: none resumes from it and copies what came since, never skipping
    produce(clusters["primary"], topic, numbered(600, 900, 3))
    with running_mirrorspark(none, state):
        wait_for_count(clusters["backup"], remote, 900)
    landed = read_all(clusters["backup"], remote)
    lost, duplicated = lost_and_duplicated(range(900), [seq(r) for r in landed])
    assert (lost, duplicated) == (set(), 0)
    for p in range(3):  # source order kept in each partition
        in_partition = [seq(r) for r in landed if r.partition == p]
        assert in_partition == sorted(in_partition)
    rest = read_from(clusters["backup"], group, {(remote, p): translated.get((remote, p), 0) for p in range(3)})
    assert len(rest) + len(consumed) == 900 and not set(rest) & set(consumed)  # failover: 0 read twice


def test_identity_both_ways_with_regional_filters_copies_each_side_once_and_nothing_comes_back(
        clusters, unique, tmp_path):
    """MM2's active/active recipe with identical names: each direction only copies its region's topics."""
    na, eu = f"na.orders-{unique}", f"eu.orders-{unique}"
    create_topic(clusters["primary"], na, 2)
    create_topic(clusters["backup"], eu, 2)
    produce(clusters["primary"], na, numbered(0, 300, 2))
    produce(clusters["backup"], eu, numbered(0, 200, 2))
    config = write_config(tmp_path / "mm2.properties", clusters,
                          "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
                          "primary->backup.enabled = true\nprimary->backup.topics = na\\\\..*\n"
                          "backup->primary.enabled = true\nbackup->primary.topics = eu\\\\..*\n")
    with running_mirrorspark(config, tmp_path / "state"):
        wait_for_count(clusters["backup"], na, 300)
        wait_for_count(clusters["primary"], eu, 200)
        time.sleep(10)  # time for anything that would come back to do so
    for bootstrap, topic, total in ((clusters["backup"], na, 300), (clusters["primary"], eu, 200),
                                    (clusters["primary"], na, 300), (clusters["backup"], eu, 200)):
        lost, duplicated = lost_and_duplicated(range(total), [seq(r) for r in read_all(bootstrap, topic)])
        assert (lost, duplicated) == (set(), 0), (topic, len(lost), duplicated)


def test_the_no_prefix_recipe_keeps_names_and_fails_over_with_the_cli_exactly(clusters, unique, tmp_path):
    """MM2's "no prefix" recipe: remote topics keep the source's names, internal topics get MM2's names
    for it (mm2-offset-syncsinternal, checkpointsinternal), and a failed-over group reads each record once."""
    topic, group = f"np-{unique}", f"np-group-{unique}"
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, numbered(0, 400, 2))
    consumed = consume(clusters["primary"], group, topic, 300)  # at least 100 of each partition's 200
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          "emit.checkpoints.interval.seconds = 1\nreplication.policy.separator =\n"
                          "source.cluster.alias =\ntarget.cluster.alias =\n")
    base = ["offsets", "translate", "--config", str(config), "--group", group, "--from", "primary", "--to",
            "backup", "--json"]
    with running_mirrorspark(config, tmp_path / "state") as run:
        wait_for_count(clusters["backup"], topic, 400)  # the same name on the target
        plan = wait_until(lambda: (p := cli_json(*base))["partitions"] and len(p["partitions"]) == 2
                          and all(r["translated"] is not None for r in p["partitions"]) and p,
                          "translated positions for both partitions")
    assert "no prefix" in run.output()
    landed = read_all(clusters["backup"], topic)
    assert lost_and_duplicated(range(400), [seq(r) for r in landed]) == (set(), 0)
    assert count(clusters["primary"], "mm2-offset-syncsinternal") > 0
    assert count(clusters["backup"], "checkpointsinternal") > 0
    rest = read_from(clusters["backup"], group, {(topic, r["partition"]): r["translated"] for r in plan["partitions"]})
    assert len(rest) + len(consumed) == 400 and not set(rest) & set(consumed)  # 0 read twice, none skipped
