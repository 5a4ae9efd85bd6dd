"""MM2 files mirrorspark used to refuse, run against real brokers: a target producer without
idempotence (older brokers, no IdempotentWrite ACL) copies each record once, in order, with exact
failover; ``auto.offset.reset = none`` refuses a first start without saved positions, naming the key,
and runs once positions exist; identity naming both ways runs with regional filters and, on the
same topic name, active/active: each record once on each cluster, none back, failover skipping none."""
from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest
from confluent_kafka import Producer
from helpers.config import write_config
from helpers.kafka import count, create_topic, lost_and_duplicated, produce, read_all, seqs, wait_for_count
from helpers.offsets import checkpoints, commit_on, consume, read_from
from helpers.processes import MIRRORSPARK, cli_json, kill9, run_cli, running_mirrorspark
from helpers.records import numbered
from helpers.rest import flow_detail
from helpers.spark_state import committed_records, latest
from helpers.waiting import wait_until

IDENTITY = "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"

pytestmark = pytest.mark.broker


def seq(record) -> int:
    return int(dict(record.headers)["seq"])


@pytest.mark.long
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
                          IDENTITY + "primary->backup.enabled = true\nprimary->backup.topics = na\\\\..*\n"
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


def _failover(config, state, group: str, *extra: str) -> dict:
    done = run_cli("failover", "--config", str(config), "--group", group, "--from", "primary", "--to", "backup",
                   "--state-dir", str(state), "--json", *extra)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)


@pytest.mark.long
def test_active_active_on_the_same_topic_name_copies_each_record_once_each_way_and_fails_over_skipping_none(
        clusters, unique, tmp_path):
    """``orders`` produced on both clusters, both flows ``topics = orders``, identity naming (MM2 would
    copy it round and round): each cluster ends with every record of both sides once, in each side's
    order, and none comes back. A group that read part of the mixed topic on primary fails over to
    backup: it skips none, and reads again exactly the count ``failover`` reports. The audit of each
    flow compares its copies only and finds nothing missing, duplicated or differing."""
    topic, group = f"aa-{unique}", f"aa-group-{unique}"
    primary, backup = clusters["primary"], clusters["backup"]
    for side in (primary, backup):
        create_topic(side, topic, 2)
    per_side = 1_000  # primary produces seq 0..999, backup 1000..1999
    produce(primary, topic, numbered(0, 400, 2))
    produce(backup, topic, numbered(per_side, per_side + 400, 2))
    config = write_config(tmp_path / "mm2.properties", clusters, IDENTITY +
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          f"backup->primary.enabled = true\nbackup->primary.topics = {topic}\n"
                          "emit.checkpoints.interval.seconds = 1\n")
    state = tmp_path / "state"
    with running_mirrorspark(config, state) as run:
        for start in range(400, per_side, 100):  # both sides keep producing while the copies run
            produce(primary, topic, numbered(start, start + 100, 2))
            produce(backup, topic, numbered(per_side + start, per_side + start + 100, 2))
            time.sleep(0.5)
        wait_for_count(primary, topic, 2 * per_side, timeout=120)
        wait_for_count(backup, topic, 2 * per_side, timeout=120)
        on_primary = read_all(primary, topic)
        committed = {(topic, p): int(0.6 * sum(1 for r in on_primary if r.partition == p)) for p in range(2)}
        commit_on(primary, group, committed)
        plan = wait_until(lambda: (p := _failover(config, state, group))["partitions"] and all(
            (topic, r["partition"]) in committed and r["checkpoint_upstream"] == committed[(topic, r["partition"])]
            and r["read_twice"] is not None for r in p["partitions"]) and len(p["partitions"]) == 2 and p,
            "checkpoints of both partitions at the group's commits", 90)
        time.sleep(5)  # time for anything that would come back to do so
        done = _failover(config, state, group, "--execute")
        audits = [run_cli("audit", str(config), "--flow", name, "--state-dir", str(state), "--json", "--topics", topic,
                          timeout=240) for name in ("primary->backup", "backup->primary")]
        output = run.output()

    for bootstrap in (primary, backup):
        landed = read_all(bootstrap, topic)
        assert lost_and_duplicated(range(2 * per_side), [seq(r) for r in landed]) == (set(), 0)
        for p in range(2):  # each side's records keep their order on the other side
            for first in (0, per_side):
                mine = [seq(r) for r in landed if r.partition == p and first <= seq(r) < first + per_side]
                assert mine == sorted(mine)
    alias_of = {primary: b"primary", backup: b"backup"}
    for bootstrap, alias in alias_of.items():  # nothing carries a path through the cluster it is on
        paths = [dict(r.headers).get("mirrorspark.path", b"") for r in read_all(bootstrap, topic)]
        assert not any(alias in path.split(b",") for path in paths)
    read_on_primary = {seq(r) for r in on_primary if r.offset < committed[(topic, r.partition)]}
    moved = {(c["topic"], c["partition"]): c["offset"] for c in done["committed"]}
    read_after = [int(key) for key in read_from(backup, group, moved)]
    skipped = set(range(2 * per_side)) - read_on_primary - set(read_after)
    twice = sum(1 for s in read_after if s in read_on_primary) + len(read_after) - len(set(read_after))
    reported = sum(r["read_twice"] for r in plan["partitions"])
    print(f"active/active drill: each cluster 2,000 records once; failover skipped {len(skipped)}, read twice "
          f"{twice}, reported {reported}")
    assert skipped == set() and twice == reported
    assert "runs active/active on the same topic names" in output
    for audit in audits:
        assert audit.returncode == 0, audit.stdout[-2000:] + audit.stderr[-2000:]
        totals = json.loads(audit.stdout)["totals"]
        assert all(totals.get(k, 0) == 0 for k in ("missing", "duplicated", "differing")), totals


@pytest.mark.long
def test_active_active_writer_killed_mid_batch_resumes_past_its_copies_among_the_targets_own_records(
        clusters, unique, tmp_path):
    """kill -9 while primary->backup's batch is half written into a topic where backup's own producer
    keeps writing too: the re-run batch compares its rows with its copies only (backup's own records
    between them are passed over), so nothing is sent twice and nothing is lost."""
    topic = f"aak-{unique}"
    primary, backup = clusters["primary"], clusters["backup"]
    for side in (primary, backup):
        create_topic(side, topic, 2)
    total, bound = 60_000, 20_000
    producer = Producer({"bootstrap.servers": primary, "linger.ms": 20})
    for record in numbered(0, total, 2, 200):
        producer.produce(topic, **record)
        producer.poll(0) if len(producer) < 50_000 else producer.flush(30)
    assert producer.flush(60) == 0
    config = write_config(tmp_path / "mm2.properties", clusters, IDENTITY +
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          f"backup->primary.enabled = true\nbackup->primary.topics = {topic}\n"
                          f"mirrorspark.batch.max.records = {bound}\n")
    state = tmp_path / "state"
    state.mkdir()
    checkpoint = state / "flows" / "primary" / "backup" / "checkpoint"
    local, stop = [0], threading.Event()

    def backup_producer() -> None:  # backup's own records, interleaved with the copies as they land
        own = Producer({"bootstrap.servers": backup, "linger.ms": 5})
        while not stop.is_set():
            for record in numbered(total + local[0], total + local[0] + 20, 2):
                own.produce(topic, **record)
            assert own.flush(10) == 0
            local[0] += 20
            time.sleep(0.02)

    writer = threading.Thread(target=backup_producer, daemon=True)
    writer.start()
    with (state / "run.log").open("wb") as out:
        driver = subprocess.Popen([*MIRRORSPARK, "run", str(config), "--state-dir", str(state)], stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)

    def copies() -> int:
        return sum(1 for r in read_all(backup, topic) if "mirrorspark.path" in dict(r.headers))

    def mid_batch() -> bool:
        if not (checkpoint / "offsets").is_dir() or not (checkpoint / "commits").is_dir():
            return False
        if latest(checkpoint, "offsets") <= latest(checkpoint, "commits"):
            return False
        return count(backup, topic) - local[0] > committed_records(checkpoint, topic) + 1_000

    try:
        deadline = time.monotonic() + 180
        while not mid_batch():
            assert time.monotonic() < deadline, "no batch caught in the middle of its write"
            assert driver.poll() is None, (state / "run.log").read_text()[-3000:]
            time.sleep(0.02)
    finally:
        kill9(driver)
        driver.wait(30)
        stop.set()
        writer.join(30)
    interrupted = copies() - committed_records(checkpoint, topic)
    everything = total + local[0]
    with running_mirrorspark(config, state) as second:
        wait_for_count(backup, topic, everything, timeout=180)
        wait_for_count(primary, topic, everything, timeout=180)
        time.sleep(3)
        detail = flow_detail(state, "primary->backup")
    for bootstrap in (primary, backup):
        lost, duplicated = lost_and_duplicated(range(everything), seqs(bootstrap, topic))
        print(f"active/active kill -9 drill: {local[0]} records of backup's own, {interrupted} copies written by the "
              f"interrupted batch; lost {len(lost)}, duplicated {duplicated}, re-copied {detail['records_recopied']}")
        assert (lost, duplicated) == (set(), 0)
    assert 0 < interrupted <= bound and detail["records_recopied"] == 0
    assert "already on the target were not sent again" in second.output()
