"""Interop with real MirrorMaker 2 (Maven Central jars): MM2's Java RemoteClusterUtils reads
mirrorspark's checkpoints, and mirrorspark.client reads checkpoints written by real MM2."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.config import write_config
from helpers.java import INTEROP, QUIET_LOG4J, classpath
from helpers.kafka import create_topic, produce, wait_for_count
from helpers.offsets import checkpoints, commit_on
from helpers.processes import running_mirrorspark
from helpers.records import records
from helpers.waiting import wait_until

from mirrorspark.client import MirrorClient
from mirrorspark.local.cluster import java_executable

pytestmark = pytest.mark.broker


def java_translate(tmp_path: Path, bootstrap: str, remote: str, group: str) -> dict[tuple[str, int], int]:
    classes = tmp_path / "classes"
    javac = shutil.which("javac") or str(Path(java_executable()).with_name("javac"))
    subprocess.run([javac, "-d", str(classes), "-cp", classpath(), str(INTEROP / "TranslateOffsets.java")],
                   check=True, capture_output=True)
    (tmp_path / "log4j2.properties").write_text(QUIET_LOG4J)
    done = subprocess.run([java_executable(), "-Xmx128m",
                           f"-Dlog4j2.configurationFile={tmp_path / 'log4j2.properties'}",
                           "-cp", classpath(classes), "TranslateOffsets", bootstrap, remote, group],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = {}
    for line in done.stdout.splitlines():
        topic, partition, offset = line.split("\t")
        out[(topic, int(partition))] = int(offset)
    return out


def test_java_remote_cluster_utils_reads_mirrorspark_checkpoints(clusters, unique, tmp_path):
    """Same scenario as the MM2 test below: 100 records per partition, the group at 70 and 30."""
    topic, group = f"jinterop-{unique}", f"jgroup-{unique}"
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, records(200, 2, unique))
    commit_on(clusters["primary"], group, {(topic, 0): 70, (topic, 1): 30})
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
                          "emit.checkpoints.interval.seconds = 1\n")
    with running_mirrorspark(config, tmp_path / "state"):
        ours = wait_until(lambda: (c := checkpoints(clusters["backup"], "primary", group)) and len(c) == 2 and c,
                          "mirrorspark checkpoints")
    assert ours == {(f"primary.{topic}", 0): 70, (f"primary.{topic}", 1): 30}  # exact: nothing re-delivered
    assert java_translate(tmp_path, clusters["backup"], "primary", group) == ours
    print("mirrorspark failover re-delivery (group at 70/30 of 100/100): 0 records")


def test_mirror_client_reads_checkpoints_written_by_real_mm2(clusters, unique, tmp_path):
    """Real MM2 with its defaults (offset.lag.max = 100) on the scenario above; the client reads
    its checkpoints, and the re-delivery they imply is printed for comparison."""
    topic, group = f"mm2only-{unique}", f"mm2group-{unique}"
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, records(200, 2, unique))
    commit_on(clusters["primary"], group, {(topic, 0): 70, (topic, 1): 30})
    (tmp_path / "mm2.properties").write_text(
        "clusters = primary, backup\n"
        f"primary.bootstrap.servers = {clusters['primary']}\nbackup.bootstrap.servers = {clusters['backup']}\n"
        f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\ngroups = {group}\n"
        "backup->primary.enabled = false\nemit.heartbeats.enabled = false\n"
        "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n"
        "offset-syncs.topic.replication.factor = 1\noffset.storage.replication.factor = 1\n"
        "config.storage.replication.factor = 1\nstatus.storage.replication.factor = 1\n"
        "emit.checkpoints.interval.seconds = 1\nrefresh.topics.interval.seconds = 1\n"
        "refresh.groups.interval.seconds = 1\nsync.topic.acls.enabled = false\n"
        "offset.flush.interval.ms = 1000\n")
    (tmp_path / "log4j2.properties").write_text(QUIET_LOG4J)
    log = (tmp_path / "mm2.log").open("wb")
    mm2 = subprocess.Popen([java_executable(), "-Xms128m", "-Xmx384m", "-XX:+UseSerialGC",
                            f"-Dlog4j2.configurationFile={tmp_path / 'log4j2.properties'}", "-cp", classpath(),
                            "org.apache.kafka.connect.mirror.MirrorMaker", str(tmp_path / "mm2.properties")],
                           stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_count(clusters["backup"], f"primary.{topic}", 200, timeout=180)
        client = MirrorClient({"bootstrap.servers": clusters["backup"]})
        translated = wait_until(lambda: (o := client.remote_consumer_offsets(group, "primary")) and len(o) == 2 and o,
                                "checkpoints written by MM2", timeout=180)
    finally:
        mm2.terminate()
        try:
            mm2.wait(60)
        except subprocess.TimeoutExpired:
            mm2.kill()
        log.close()
    exact = {(f"primary.{topic}", 0): 70, (f"primary.{topic}", 1): 30}
    assert set(translated) == set(exact)
    assert all(0 < translated[tp] <= exact[tp] for tp in exact), translated  # MM2: never ahead
    print(f"real MM2 failover re-delivery (group at 70/30 of 100/100): "
          f"{sum(exact[tp] - translated[tp] for tp in exact)} records, translated {translated}")
