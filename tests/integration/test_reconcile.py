"""``mirrorspark reconcile`` after an unplanned failover, on clusters of its own (the old primary's
only broker is stopped and started again): what the old primary took that never reached the new one
is moved aside, counted and reported, never appended late to the remote topic, and a group failing
back resumes after it."""
from __future__ import annotations

import json

import pytest
from helpers.kafka import count, create_topic, lost_and_duplicated, produce, seqs, wait_for_count
from helpers.offsets import checkpoints, commit_on, consume, read_from
from helpers.processes import cli_json, run_cli, running_mirrorspark
from helpers.records import numbered
from helpers.rest import flow_detail, rest
from helpers.waiting import wait_until

from mirrorspark.control.admin import admin_client
from mirrorspark.cutover.reconcile import Tail, copy_aside, ensure_side_topic, read_tail


def group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    from mirrorspark.control.admin import admin_client
    from mirrorspark.control.groups import RdkafkaGroups

    found = RdkafkaGroups(admin=admin_client({"bootstrap.servers": bootstrap}), cluster=bootstrap).committed(group)
    return {key: offset for key, (offset, _) in found.items()}


@pytest.mark.long
@pytest.mark.broker
def test_after_an_unplanned_failover_the_old_primarys_tail_is_moved_aside_counted_and_failback_resumes_after_it(
        tmp_path, unique):
    """3,000 numbered records copied from a to b; a group read 2,400 of them on a. The flow falls
    behind (paused) while a takes 1,000 more, then a's broker stops. The group fails over to b and
    reads the rest there; producers write 500 records on b. a comes back; b->a carries b's records to
    it. ``reconcile`` (dry run, then ``--execute``, then again): all 1,000 in the side topic on b and
    on a, once each, in order, reported with their offsets; b's remote topic still holds the 3,000.
    The flow resumed copies only what a takes afterwards. The group fails back to a at the first
    record after the moved ones."""
    from mirrorspark.local import ClusterSpec, LocalClusters

    local = LocalClusters(tmp_path / "clusters")
    up = {c.name: c.bootstrap for c in local.up([ClusterSpec("a"), ClusterSpec("b")])}
    a, b = up["a"], up["b"]
    try:
        topic, group = f"orders-{unique}", f"billing-{unique}"
        remote = f"a.{topic}"
        create_topic(a, topic, 3)
        config = tmp_path / "mm2.properties"
        config.write_text(f"clusters = a, b\na.bootstrap.servers = {a}\nb.bootstrap.servers = {b}\n"
                          f"a->b.enabled = true\nb->a.enabled = true\ntopics = {topic}\nreplication.factor = 1\n"
                          "checkpoints.topic.replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n"
                          "heartbeats.topic.replication.factor = 1\nemit.checkpoints.interval.seconds = 1\n"
                          "refresh.topics.interval.seconds = 2\n")
        state = tmp_path / "state"
        base = ["--state-dir", str(state), "--flow", "a->b", "--json"]
        with running_mirrorspark(config, state):
            produce(a, topic, numbered(0, 3000, 3))
            wait_for_count(b, remote, 3000)
            commit_on(a, group, {(topic, p): 800 for p in range(3)})
            wait_until(lambda: checkpoints(b, "a", group) == {(remote, p): 800 for p in range(3)},
                       "the group's checkpoints on b")

            rest(state, "/flows/a->b/pause", method="POST")  # the copy falls behind ...
            produce(a, topic, numbered(3000, 4000, 3))         # ... a takes 1,000 records b never sees
            local.down(["a"])                                  # ... and a is lost
            moved = cli_json("failover", str(config), "--group", group, "--from", "a", "--to", "b", "--execute",
                             "--state-dir", str(state))
            assert moved["executed"] and not moved["from_reachable"]
            assert len(consume(b, group, remote, 600)) == 600  # the application goes on on b
            create_topic(b, topic, 3)
            produce(b, topic, numbered(10_000, 10_500, 3))     # and its producers write there

            local.up([ClusterSpec("a")])
            wait_for_count(a, f"b.{topic}", 500)               # b->a carries b's records to a

            dry = run_cli("reconcile", str(config), *base, timeout=300)
            assert dry.returncode == 0, dry.stdout + dry.stderr
            found = json.loads(dry.stdout)
            assert (found["records"], found["partitions"], found["gone"], found["executed"]) == (1000, 3, 0, False)
            assert {(t["partition"], t["first"], t["last"], t["records"]) for t in found["tails"]} == {
                (0, 1000, 1333, 334), (1, 1000, 1332, 333), (2, 1000, 1332, 333)}
            assert f"{remote}.diverged.internal" not in admin_client({"bootstrap.servers": b}).list_topics(
                timeout=10).topics  # a dry run changes nothing

            # a first run killed after 100 records of partition 0 reached b's side topic: the next continues
            interrupted = Tail(topic=topic, partition=0, remote=remote, copy_end=1000, target_end=1000, end=1334)
            head = read_tail({"bootstrap.servers": a}, interrupted, 60)[:100]
            ensure_side_topic(admin_client({"bootstrap.servers": b}), f"{remote}.diverged.internal", 3, 1)
            assert copy_aside(records=head, tail=interrupted, conf={"bootstrap.servers": b},
                              side=f"{remote}.diverged.internal", source_alias="a") == 100

            done = run_cli("reconcile", str(config), *base, "--execute", timeout=300)
            assert done.returncode == 0, done.stdout + done.stderr
            report = json.loads(done.stdout)
            assert report["records"] == 1000 and len(report["moved"]) == 3, report
            assert all(m["position_after"] == m["end"] for m in report["moved"]), report["moved"]
            for cluster, side in ((b, f"{remote}.diverged.internal"), (a, f"{topic}.diverged.internal")):
                landed = seqs(cluster, side)
                assert lost_and_duplicated(range(3000, 4000), landed) == (set(), 0) and len(landed) == 1000
            again = json.loads(run_cli("reconcile", str(config), *base, "--execute", timeout=300).stdout)
            assert again["records"] == 1000 and count(b, f"{remote}.diverged.internal") == 1000  # nothing twice

            rest(state, "/flows/a->b/resume", method="POST")
            produce(a, topic, numbered(20_000, 20_030, 3))
            wait_for_count(b, remote, 3030)
            landed = seqs(b, remote)
            assert sorted(landed) == [*range(3000), *range(20_000, 20_030)]  # the moved records never copied

            def audit_all() -> dict | None:
                """The audit once the 30 new copies are recorded (a real-time batch records them at its end)."""
                audited = run_cli("audit", str(config), "--flow", "a->b", "--topics", topic, "--state-dir",
                                  str(state), "--json", timeout=300)
                assert audited.returncode == 0, audited.stdout + audited.stderr  # moved aside is not missing
                found = json.loads(audited.stdout)
                return found if sum(p["matched"] for p in found["partitions"]) >= 3030 else None

            audit = wait_until(audit_all, "the audit of every copy", 120)
            assert sum(p["missing"] for p in audit["partitions"]) == 0
            assert sum(p["matched"] for p in audit["partitions"]) == 3030
            assert f"{topic}[0] offsets 1000..1333 were moved aside by `mirrorspark reconcile` (kept in side topics, " \
                   "not compared)" in audit["notes"], audit["notes"]

            plan = ["failover", str(config), "--group", group, "--from", "b", "--to", "a", "--state-dir", str(state)]
            wait_until(lambda: sum(r["translated"] for r in cli_json(*plan)["partitions"]) == 4000,
                       "failback checkpoints past the moved records", timeout=120)
            cli_json(*plan, "--execute")
            assert group_offsets(a, group) == {(topic, 0): 1334, (topic, 1): 1333, (topic, 2): 1333}
            back = read_from(a, group, {(topic, p): o for (_, p), o in group_offsets(a, group).items()})
            assert sorted(int(k) for k in back) == list(range(20_000, 20_030))  # the group reads on after them
            assert flow_detail(state, "a->b")["records_lost"] == 0
    finally:
        local.down()
