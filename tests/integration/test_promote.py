"""``mirrorspark promote`` (its preflight) against real brokers: a running, clean flow with groups at
different positions passes; a consumer already on the target, a reverse flow that would not copy the
topic back, and a flow no longer running each fail the one check they concern, naming what to fix."""
from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType
from helpers.config import write_config
from helpers.kafka import create_topic, lost_and_duplicated, produce, wait_for_count, wait_for_every_seq
from helpers.offsets import checkpoints, commit_on, consume, share_consume
from helpers.processes import MIRRORSPARK, kill9, run_cli, running_mirrorspark
from helpers.records import numbered
from helpers.rest import flow_detail, rest
from helpers.waiting import wait_until

from mirrorspark.control.admin import admin_client
from mirrorspark.control.client_settings import java_conf
from mirrorspark.control.groups import RdkafkaGroups
from mirrorspark.control.share_groups import ShareGroups

FLOW = "primary->backup"


def promote(config, state, topic: str) -> tuple[int, dict]:
    done = run_cli("promote", str(config), "--flow", FLOW, "--state-dir", str(state), "--topics", topic, "--json",
                   timeout=240)
    assert done.returncode in (0, 1) and done.stdout.startswith("{"), done.stderr
    return done.returncode, json.loads(done.stdout)


def failed(report: dict) -> dict[str, str]:
    return {check["check"]: check["text"] for check in report["checks"] if not check["ok"]}


@pytest.mark.long  # minutes of one worker: in `make drills`, keeping `make test` under 30 minutes
@pytest.mark.broker
def test_promote_preflight_passes_a_clean_flow_and_fails_each_check_on_its_own_fault(clusters, unique, tmp_path):
    topic, early, late = f"promote-{unique}", f"early-{unique}", f"late-{unique}"
    remote = f"primary.{topic}"
    create_topic(clusters["primary"], topic, 2)
    now = int(time.time() * 1000)
    produce(clusters["primary"], topic, [{"partition": i % 2, "key": f"k{i}".encode(), "value": f"v{i}".encode(),
                                          "timestamp": now + i, "headers": [("seq", str(i).encode())]}
                                         for i in range(400)])
    commit_on(clusters["primary"], early, {(topic, 0): 20, (topic, 1): 10})
    commit_on(clusters["primary"], late, {(topic, 0): 190, (topic, 1): 200})
    body = f"{FLOW}.enabled = true\n{FLOW}.topics = {topic}\nemit.checkpoints.interval.seconds = 1\n"
    config = write_config(tmp_path / "mm2.properties", clusters, body)
    narrow = write_config(tmp_path / "narrow.properties", clusters,
                          body + "backup->primary.topics = something-else\n")
    state = tmp_path / "state"
    with running_mirrorspark(config, state):
        wait_for_count(clusters["backup"], remote, 400)
        wait_until(lambda: sum(checkpoints(clusters["backup"], "primary", early).values()) == 30
                   and sum(checkpoints(clusters["backup"], "primary", late).values()) == 390,
                   "checkpoints of both groups")
        code, clean = promote(config, state, topic)
        assert code == 0 and clean["ok"] and failed(clean) == {}, clean
        texts = {check["check"]: check["text"] for check in clean["checks"]}
        assert texts["audit"] == "400 record(s) of 2 partition(s) match, none missing, duplicated or differing"
        assert texts["groups"] == f"2 group(s), each translation exact: {early}, {late}"
        assert texts["fence"] == "primary has an authorizer: writes are fenced by ACLs"  # StandardAuthorizer
        assert clean["steps"][3] == "write the final checkpoints and commit the offsets of 2 group(s) on backup"

        code, narrowed = promote(narrow, state, topic)
        assert code == 1 and failed(narrowed) == {"reverse-flow": (
            f"backup->primary would not copy back {topic}: what producers write there on backup after the cutover "
            "would never reach primary")}

        consumer = Consumer({"bootstrap.servers": clusters["backup"], "group.id": late, "client.id": "early-bird",
                             "group.protocol": "consumer", "enable.auto.commit": False})  # KIP-848's protocol
        try:
            consumer.subscribe([remote])
            wait_until(lambda: consumer.poll(0.5) is not None or bool(consumer.assignment()),
                       "the consumer on backup joined its group")
            code, active = promote(config, state, topic)
        finally:
            consumer.close()
        assert code == 1 and list(failed(active)) == ["groups-on-target"], active
        assert failed(active)["groups-on-target"].startswith(f"1 group(s) already have consumers on backup: {late} (")
        assert "early-bird@" in failed(active)["groups-on-target"]

    code, stopped = promote(config, state, topic)
    assert code == 1 and list(failed(stopped)) == ["running"], stopped
    assert "no running mirrorspark found" in failed(stopped)["running"]


def deny_acls(bootstrap: str, topic: str) -> int:
    """The DENY WRITE ACLs for every principal on ``topic`` (what promote fences a source with)."""
    admin = admin_client({"bootstrap.servers": bootstrap})  # kept until the answer is in
    found = admin.describe_acls(AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:*",
                                                 "*", AclOperation.WRITE, AclPermissionType.DENY),
                                request_timeout=30).result()
    return len(found)


def committed_on(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    groups = RdkafkaGroups(admin=admin_client({"bootstrap.servers": bootstrap}), cluster=bootstrap)
    return {key: offset for key, (offset, _) in groups.committed(group).items()}


@pytest.mark.long
@pytest.mark.broker
def test_promote_under_a_steady_stream_aborted_then_killed_mid_way_resumes_and_moves_every_group_exactly(
        clusters, unique, tmp_path):
    """A stream of numbered records (2,000/s) flows into primary throughout; three groups sit at different
    positions.

    1. ``promote --execute`` while the producer goes on (a super user: the DENY WRITE ACLs do not stop
       it, so the source never stays still): it fences with ACLs, then stops at the quiet step after
       ``--timeout`` (exit 1); ``--abort`` removes the ACLs and the flow never stopped.
    2. ``promote --execute`` again, ``kill -9`` at the quiet step; the producer stops; the same command
       resumes at the quiet step and ends: every record on backup once, each group's offsets on backup
       those it committed on primary, the flow paused, primary's topic denied WRITE until ``--release``;
       records written on backup reach primary through the reverse flow.
    """
    topic = f"cut-{unique}"
    remote = f"primary.{topic}"
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, numbered(0, 600, 2))
    positions = {f"ga-{unique}": {(topic, 0): 50, (topic, 1): 40}, f"gb-{unique}": {(topic, 0): 150, (topic, 1): 160},
                 f"gc-{unique}": {(topic, 0): 300, (topic, 1): 300}}
    for group, offsets in positions.items():
        commit_on(clusters["primary"], group, offsets)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"{FLOW}.enabled = true\n{FLOW}.topics = {topic}\nbackup->primary.enabled = true\n"
                          f"backup->primary.topics = {topic}\nemit.checkpoints.interval.seconds = 1\n"
                          "refresh.topics.interval.seconds = 2\n")
    state = tmp_path / "state"
    command = [*MIRRORSPARK, "promote", str(config), "--flow", FLOW, "--state-dir", str(state), "--topics", topic,
               "--execute", "--quiet-seconds", "5"]
    stop, sent, began = threading.Event(), [600], [0.0]

    def steady() -> None:  # 2,000 records/s: 100 every 50 ms
        producer = Producer({"bootstrap.servers": clusters["primary"], "linger.ms": 5})
        began[0] = time.monotonic()
        tick = began[0]
        while not stop.is_set():
            for record in numbered(sent[0], sent[0] + 100, 2):
                producer.produce(topic, **record)
            sent[0] += 100
            producer.poll(0)
            tick += 0.05
            time.sleep(max(0.0, tick - time.monotonic()))
        producer.flush(30)
        began[0] = (sent[0] - 600) / (time.monotonic() - began[0])  # the rate it kept

    feeder = threading.Thread(target=steady, daemon=True)
    with running_mirrorspark(config, state):
        wait_until(lambda: all(sum(checkpoints(clusters["backup"], "primary", g).values()) == sum(o.values())
                               for g, o in positions.items()), "checkpoints of the three groups", timeout=120)
        feeder.start()
        try:
            held = run_cli(*command[3:], "--timeout", "15", timeout=300)
            assert held.returncode == 1 and "still waiting" in held.stderr and "run the same command again" in \
                held.stderr, held.stdout + held.stderr
            assert "step fence: done" in held.stdout and deny_acls(clusters["primary"], topic) == 1
            shown = flow_detail(state, FLOW)["promotion"]  # REST, `status` and the page show the step
            assert shown["step"] == "quiet" and shown["fenced"] == 1, shown
            listed = run_cli("status", "--state-dir", str(state), timeout=60)
            assert f"{FLOW}: promotion under way: next step quiet (3 of 7)" in listed.stdout, listed.stdout
            undone = run_cli(*command[3:-3], "--abort", timeout=120)
            assert undone.returncode == 0 and "undone at step quiet" in undone.stdout, undone.stdout + undone.stderr
            assert deny_acls(clusters["primary"], topic) == 0
            assert flow_detail(state, FLOW)["state"] == "running"

            killed = subprocess.Popen([*command, "--timeout", "300"], stdout=subprocess.PIPE, text=True)
            assert killed.stdout is not None
            for line in killed.stdout:
                if line.startswith("step quiet:") and not line.startswith("step quiet: done"):
                    break
            kill9(killed)
        finally:
            stop.set()
            feeder.join(60)
        total = sent[0]
        print(f"{total - 600} records written during the cutover, at {began[0]:.0f} records/s")
        assert began[0] > 1500, began[0]
        # a consumer of the new protocol (KIP-848) still in group gc on primary: the groups step waits
        # for it, naming it, and goes on once it stops (it commits nothing)
        late = Consumer({"bootstrap.servers": clusters["primary"], "group.id": f"gc-{unique}",
                         "group.protocol": "consumer", "client.id": "still-on-primary", "enable.auto.commit": False})
        late.subscribe([topic])
        wait_until(lambda: late.poll(0.5) is not None or bool(late.assignment()), "the consumer joined gc on primary")
        again = subprocess.Popen([*command, "--timeout", "300"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True)
        assert again.stdout is not None
        lines = []
        for line in again.stdout:
            lines.append(line)
            if "waiting until its 1 consumer(s) on primary stop: still-on-primary@" in line:
                late.close()
        assert again.wait(60) == 0, "".join(lines)
        resumed = "".join(lines)
        assert "resuming the cutover of primary->backup at step quiet" in resumed
        assert f"group gc-{unique}: waiting until its 1 consumer(s) on primary stop" in resumed
        assert "primary->backup promoted: backup takes over" in resumed
        print(held.stdout, resumed)  # each step and what it took

        lost, doubled = lost_and_duplicated(range(total), wait_for_every_seq(clusters["backup"], remote, total))
        assert (len(lost), doubled) == (0, 0)
        for group, offsets in positions.items():
            assert committed_on(clusters["backup"], group) == {(remote, p): o for (_, p), o in offsets.items()}
        assert flow_detail(state, FLOW)["state"] == "paused" and flow_detail(state, FLOW)["promotion"] is None
        assert deny_acls(clusters["primary"], topic) == 1

        create_topic(clusters["backup"], topic, 2)
        produce(clusters["backup"], topic, numbered(0, 10, 2))  # written on backup after the cutover
        wait_for_count(clusters["primary"], f"backup.{topic}", 10)

        # and back: group ga reads on on backup, then everything moves back to primary
        consume(clusters["backup"], f"ga-{unique}", remote, 100)
        on_backup = committed_on(clusters["backup"], f"ga-{unique}")
        home = run_cli("promote", str(config), "--flow", "backup->primary", "--state-dir", str(state), "--topics",
                       topic, "--execute", "--quiet-seconds", "5", "--timeout", "300", timeout=600)
        assert home.returncode == 0, home.stdout + home.stderr
        assert "backup->primary promoted: primary takes over" in home.stdout, home.stdout
        print(home.stdout)
        assert committed_on(clusters["primary"], f"ga-{unique}") == {(topic, p): o for (_, p), o in on_backup.items()}
        assert flow_detail(state, "backup->primary")["state"] == "paused" and flow_detail(state, FLOW)["state"] == \
            "running"
        assert deny_acls(clusters["backup"], topic) == 1
        home_released = run_cli("promote", str(config), "--flow", "backup->primary", "--state-dir", str(state),
                                "--release", timeout=120)
        assert home_released.returncode == 0 and deny_acls(clusters["backup"], topic) == 0, home_released.stderr

    released = run_cli(*command[3:-3], "--release", timeout=120)
    assert released.returncode == 0 and deny_acls(clusters["primary"], topic) == 0, released.stdout + released.stderr


def journal_step(state) -> str | None:
    path = state / "promote" / "primary-to-backup.json"
    return json.loads(path.read_text())["step"] if path.exists() else None


def killed_at(command: list[str], step: str) -> str:
    """Run ``command`` (promote --execute) and ``kill -9`` it as soon as it starts ``step``; returns its output."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith(f"step {step}:") and "done in" not in line:
            kill9(proc)
            return "".join(seen)
    proc.wait(30)
    raise AssertionError(f"promote never started step {step}:\n{''.join(seen)}")


@pytest.mark.long
@pytest.mark.broker
def test_promote_aborted_at_each_step_leaves_everything_as_it_was_and_killed_at_each_step_ends_the_same(
        clusters, unique, tmp_path):
    """``--abort`` after a ``kill -9`` at the start of each step in turn: the ACLs gone, the flow running
    and the reverse flow paused as before, the group's offsets on backup as before (none). Then one
    cutover killed at the start of every step, run again each time: it ends with every record on
    backup once and the group's offsets exactly translated."""
    topic = f"steps-{unique}"
    remote, group = f"primary.{topic}", f"g-{unique}"
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, numbered(0, 400, 2))
    commit_on(clusters["primary"], group, {(topic, 0): 120, (topic, 1): 80})
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"{FLOW}.enabled = true\n{FLOW}.topics = {topic}\nbackup->primary.enabled = true\n"
                          f"backup->primary.topics = {topic}\nemit.checkpoints.interval.seconds = 1\n")
    state = tmp_path / "state"
    command = [*MIRRORSPARK, "promote", str(config), "--flow", FLOW, "--state-dir", str(state), "--topics", topic,
               "--execute", "--quiet-seconds", "2", "--timeout", "120"]
    with running_mirrorspark(config, state):
        wait_until(lambda: sum(checkpoints(clusters["backup"], "primary", group).values()) == 200,
                   "the group's checkpoints", timeout=120)
        rest(state, "/flows/backup->primary/pause", method="POST")  # the stop step resumes it; --abort pauses it
        reached = {}
        for step in ("lag", "fence", "quiet", "drain", "groups", "stop"):
            killed_at(command, step)
            reached[step] = journal_step(state)
            undone = run_cli(*command[3:-5], "--abort", timeout=120)
            assert undone.returncode == 0, undone.stdout + undone.stderr
            assert deny_acls(clusters["primary"], topic) == 0, step
            assert flow_detail(state, FLOW)["state"] == "running", step
            assert flow_detail(state, "backup->primary")["state"] == "paused", step
            assert committed_on(clusters["backup"], group) == {}, step
            assert journal_step(state) is None
        print("killed, then aborted, at:", reached)

        for step in ("lag", "fence", "quiet", "drain", "groups", "stop"):
            killed_at(command, step)
        done = run_cli(*command[3:], timeout=600)
        assert done.returncode == 0 and "primary->backup promoted" in done.stdout, done.stdout + done.stderr
        lost, doubled = lost_and_duplicated(range(400), wait_for_every_seq(clusters["backup"], remote, 400))
        assert (len(lost), doubled) == (0, 0)
        assert committed_on(clusters["backup"], group) == {(remote, 0): 120, (remote, 1): 80}
        assert flow_detail(state, FLOW)["state"] == "paused"
        assert flow_detail(state, "backup->primary")["state"] == "running"
    released = run_cli(*command[3:-5], "--release", timeout=120)
    assert released.returncode == 0 and deny_acls(clusters["primary"], topic) == 0, released.stderr


def share_groups_of(bootstrap: str) -> ShareGroups:
    return ShareGroups.connect(java_conf({"bootstrap.servers": bootstrap}, []), bootstrap)


@pytest.mark.long
@pytest.mark.broker
def test_promote_moves_share_groups_at_least_once_waiting_for_their_members_and_abort_puts_them_back(
        clusters, unique, tmp_path):
    """Share groups (KIP-932) on primary: ``sa`` acknowledged every record, ``sb`` 150 of 600 (the rest
    released), and a consumer of ``sb`` still on primary. ``promote`` moves ``sa`` to backup, then waits
    for ``sb``'s member, naming it, until ``--timeout``; ``--abort`` deletes ``sa`` on backup again (it
    had no start offsets there) and removes the settings it gave it. Once the member stops, the cutover
    ends: on backup ``sa`` reads none of the old records and ``sb`` (its ``share.auto.offset.reset``
    copied along) reads every record it had not acknowledged on primary; those it had acknowledged
    above its start offset come again (at least once), counted here."""
    topic, idle = f"share-{unique}", f"idle-{unique}"
    remote, done_group, part_group = f"primary.{topic}", f"sa-{unique}", f"sb-{unique}"
    create_topic(clusters["primary"], topic, 2)
    create_topic(clusters["primary"], idle, 1)
    produce(clusters["primary"], topic, numbered(0, 600, 2))
    assert len(share_consume(clusters["primary"], done_group, topic, at_least=600)) == 600
    acked = {seq for _, _, seq in share_consume(clusters["primary"], part_group, topic, at_least=150, limit=150)}
    assert len(acked) == 150
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"{FLOW}.enabled = true\n{FLOW}.topics = {topic}\nbackup->primary.enabled = true\n"
                          f"backup->primary.topics = {topic}\n")
    state = tmp_path / "state"
    command = [*MIRRORSPARK, "promote", str(config), "--flow", FLOW, "--state-dir", str(state), "--topics", topic,
               "--execute", "--quiet-seconds", "2"]
    stop_member = threading.Event()

    def member() -> None:  # in sb on primary, reading a topic with nothing in it
        from confluent_kafka import ShareConsumer

        consumer = ShareConsumer({"bootstrap.servers": clusters["primary"], "group.id": part_group,
                                  "client.id": "still-sharing"})
        consumer.subscribe([idle])
        while not stop_member.is_set():
            consumer.poll(0.5)
        consumer.close()

    on_primary, on_backup = share_groups_of(clusters["primary"]), share_groups_of(clusters["backup"])
    live = threading.Thread(target=member, daemon=True)
    live.start()
    try:
        wait_until(lambda: bool(on_primary.describe(part_group).members), "sb's member joined on primary")
        with running_mirrorspark(config, state):
            wait_for_count(clusters["backup"], remote, 600)
            held = run_cli(*command[3:], "--timeout", "20", timeout=300)
            assert held.returncode == 1, held.stdout + held.stderr
            assert f"share group {done_group}: 2 start offset(s) set on backup" in held.stdout, held.stdout
            assert f"share group {part_group}: waiting until its 1 consumer(s) on primary stop: " in held.stdout
            assert "(still-sharing@" in held.stdout and "still waiting" in held.stderr, held.stdout + held.stderr
            starts = {key: start for key, (start, _) in on_backup.start_offsets(done_group).items()}
            assert starts == {(remote, 0): 300, (remote, 1): 300}, starts  # the ends: it had read everything
            undone = run_cli(*command[3:-3], "--abort", timeout=120)
            assert undone.returncode == 0, undone.stdout + undone.stderr
            assert f"share group {done_group}: deleted on backup" in undone.stdout, undone.stdout
            assert on_backup.describe(done_group).state == "DEAD" and on_backup.configs(done_group) == {}
            assert flow_detail(state, FLOW)["state"] == "running"

            stop_member.set()
            live.join(30)
            finished = run_cli(*command[3:], "--timeout", "300", timeout=600)
            assert finished.returncode == 0 and "primary->backup promoted" in finished.stdout, \
                finished.stdout + finished.stderr
            print(held.stdout, finished.stdout)
        lost, doubled = lost_and_duplicated(range(600), wait_for_every_seq(clusters["backup"], remote, 600))
        assert (len(lost), doubled) == (0, 0)
        moved = on_backup.start_offsets(part_group)
        # its own setting came along: a partition it never started on primary begins on backup as there
        assert on_backup.configs(part_group) == {"share.auto.offset.reset": "earliest"}
        print("share group start offsets on primary:", on_primary.start_offsets(part_group), "on backup:", moved)
        again = share_consume(clusters["backup"], part_group, remote, at_least=450)
        seen = {seq for _, _, seq in again}
        assert set(range(600)) - acked <= seen, "a record sb had not acknowledged on primary was not delivered"
        assert len(again) == len(seen), "a record delivered twice on backup"
        redelivered = len(seen & acked)
        print(f"share group sb on backup: {len(seen)} delivered, {600 - len(acked)} it had not acknowledged, "
              f"{redelivered} of its {len(acked)} acknowledged on primary delivered again")
        for (_, partition), (start, _) in moved.items():  # each partition starts at the record it started at
            first = min(offset for p, offset, _ in again if p == partition)
            assert first == start, (partition, first, start)
        assert share_consume(clusters["backup"], done_group, remote, at_least=0, quiet=5) == []
    finally:
        stop_member.set()
        on_primary.close()
        on_backup.close()
    released = run_cli(*command[3:-3], "--release", timeout=120)
    assert released.returncode == 0 and deny_acls(clusters["primary"], topic) == 0, released.stderr
