"""`pip install mirrorspark` is all a Python user needs besides Java: the wheel from scripts/build_wheel.py
(`make dist`) goes into a fresh venv, and with no Maven on PATH and an empty jar cache that venv's
`mirrorspark local up` fetches the Kafka jars (first use), and `mirrorspark run` replicates a topic between
the two clusters with the connector resolved by Spark (spark.jars.packages). Durations are printed."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from helpers.kafka import create_topic, produce, read_all, wait_for_count

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]
RECORDS = 500


def _timed(label: str, timings: dict[str, float], cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    timings[label] = time.monotonic() - started
    print(f"[wheel] {label}: {timings[label]:.1f} s")
    assert done.returncode == 0, f"{label} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done


def _path_without_maven(tmp_path: Path) -> str:
    """A PATH with the venv first and every other tool of the current PATH except Maven (java, bash and the
    core utilities that Spark's launcher scripts use live in /usr/bin beside mvn, so they are linked)."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not Path(folder).is_dir():
            continue
        for entry in Path(folder).iterdir():
            if entry.name.startswith("mvn") or (tools / entry.name).exists():
                continue
            if entry.is_file() and os.access(entry, os.X_OK):
                (tools / entry.name).symlink_to(entry.resolve())
    return os.pathsep.join([str(tmp_path / "venv" / "bin"), str(tools)])


@pytest.mark.long
def test_wheel_in_a_fresh_venv_replicates_without_maven(tmp_path, unique):
    timings: dict[str, float] = {}
    _timed("build wheel", timings, [sys.executable, str(ROOT / "scripts" / "build_wheel.py"), str(tmp_path / "dist")])
    wheel = next((tmp_path / "dist").glob("mirrorspark-*.whl"))
    assert "mirrorspark/jars/mirrorspark-jvm.jar" in zipfile.ZipFile(wheel).namelist()
    print(f"[wheel] {wheel.name}: {wheel.stat().st_size / 1e3:.0f} kB")

    venv = tmp_path / "venv"
    _timed("create venv", timings, [sys.executable, "-m", "venv", str(venv)])
    # pip's own cache (PyPI is reachable) makes pyspark's ~450 MB a copy rather than a download.
    _timed("pip install wheel", timings, [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                                          "--disable-pip-version-check", str(wheel)])

    path = _path_without_maven(tmp_path)
    assert shutil.which("mvn", path=path) is None and shutil.which("java", path=path) is not None
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "MIRRORSPARK_BUILD_DIR", "MIRRORSPARK_STATE_DIR", "PYTHONHOME"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    # A fresh home, as a new user has: Spark's Ivy finds no ~/.m2 (filled by setup.sh's Maven) and no Ivy
    # cache, so the connector comes from Maven Central too (Java takes user.home from the password file,
    # not $HOME, hence the property); the Kafka jar cache is its own empty folder.
    home = tmp_path / "home"
    home.mkdir()
    env.update(PATH=path, HOME=str(home), JAVA_TOOL_OPTIONS=f"-Duser.home={home}",
               MIRRORSPARK_CACHE_DIR=str(tmp_path / "cache"), PYTHONNOUSERSITE="1")
    cli = [str(venv / "bin" / "mirrorspark")]
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import mirrorspark, sys; print(mirrorspark.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True).stdout
    assert str(venv) in where, where  # the installed copy, not the checkout

    state = tmp_path / "state"
    try:
        up = _timed("local up (first use: Kafka jar download)", timings,
                    [*cli, "local", "up", "primary", "backup", "--state-dir", str(state)],
                    env=env, cwd=tmp_path, timeout=600)
        fetched = [line for line in up.stderr.splitlines() if line.startswith("mirrorspark:")]
        print("[wheel] " + "\n[wheel] ".join(fetched))
        assert any("first use: fetching" in line for line in fetched), up.stderr[-3000:]
        cached = list((tmp_path / "cache").glob("kafka-*/*.jar"))
        print(f"[wheel] Kafka jar cache: {len(cached)} jars, {sum(p.stat().st_size for p in cached) / 1e6:.1f} MB")
        bootstrap = dict(line.split("=", 1) for line in up.stdout.split() if "=" in line)
        assert set(bootstrap) == {"primary", "backup"}, up.stdout

        topic = f"wheel-{unique}"
        create_topic(bootstrap["primary"], topic, 2)
        produce(bootstrap["primary"], topic, [{"partition": i % 2, "key": f"k{i}".encode(),
                                               "value": f"v{i}".encode()} for i in range(RECORDS)])
        config = tmp_path / "mm2.properties"
        config.write_text(
            "clusters = primary, backup\n"
            f"primary.bootstrap.servers = {bootstrap['primary']}\nbackup.bootstrap.servers = {bootstrap['backup']}\n"
            f"primary->backup.enabled = true\nprimary->backup.topics = {topic}\n"
            "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
            "offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n")
        log = tmp_path / "run.log"
        started = time.monotonic()
        with log.open("wb") as out:
            run = subprocess.Popen([*cli, "run", str(config), "--state-dir", str(state)], stdout=out,
                                   stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
        try:
            wait_for_count(bootstrap["backup"], f"primary.{topic}", RECORDS, timeout=300)
            timings["run until replicated"] = time.monotonic() - started
            print(f"[wheel] run until all {RECORDS} records replicated: {timings['run until replicated']:.1f} s")
        finally:
            run.send_signal(signal.SIGTERM)
            try:
                code = run.wait(90)
            except subprocess.TimeoutExpired:
                run.kill()
                code = None
        output = log.read_text(errors="replace")
        assert code == 0, f"mirrorspark run exited with {code}:\n{output[-5000:]}"
        assert "Traceback" not in output, output[-5000:]
        # resolved by Spark's Ivy into the fresh HOME, not taken from a build/ folder
        assert sorted(p.name for p in home.glob(".ivy2*/jars/*.jar")) == [
            "org.apache.commons_commons-pool2-2.13.1.jar", "org.apache.kafka_connect-api-3.9.2.jar",
            "org.apache.kafka_connect-transforms-3.9.2.jar", "org.apache.kafka_kafka-clients-3.9.2.jar",
            "org.apache.spark_spark-sql-kafka-0-10_2.13-4.2.0.jar",
            "org.apache.spark_spark-token-provider-kafka-0-10_2.13-4.2.0.jar"], output[-5000:]
        copied = (line.strip() for line in output.splitlines() if "artifacts copied" in line)
        print("[wheel] Spark Ivy: " + " ".join(copied))
        values = sorted(r.value for r in read_all(bootstrap["backup"], f"primary.{topic}"))
        assert values == sorted(f"v{i}".encode() for i in range(RECORDS))
    finally:
        down = subprocess.run([*cli, "local", "down", "--purge", "--state-dir", str(state)],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180)
        print(f"[wheel] local down --purge: exit {down.returncode}")
        for big in (venv, home, tmp_path / "cache"):  # ~650 MB; pytest keeps its last three temp folders
            shutil.rmtree(big, ignore_errors=True)
    assert down.returncode == 0, down.stderr[-3000:]
    print("[wheel] durations: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
