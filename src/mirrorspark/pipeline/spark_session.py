"""The one SparkSession that runs every flow's query, with Spark's Kafka connector on its classpath."""
from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from mirrorspark import jdk, paths
from mirrorspark.config import redaction
from mirrorspark.config.trigger_choice import DEFAULT_MASTER
from mirrorspark.errors import OperationalError
from mirrorspark.local.spark_cluster import driver_auth

# Defaults sized for one 2-core machine; any spark.* key in mm2.properties overrides them.
SPARK_DEFAULTS: dict[str, str] = {
    "spark.master": DEFAULT_MASTER,
    "spark.app.name": "mirrorspark",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "1g",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.kafka.consumer.cache.capacity": "1024",
    "spark.sql.streaming.stopTimeout": "60000",
    # An idle query asks the source for new records every pollingDelay (10 ms by default): 100 end-offset
    # requests a second per flow for nothing. 100 ms keeps an idle flow cheap and adds at most that to
    # the first record after a quiet spell (docs/adr/0010-grouped-source.md).
    "spark.sql.streaming.pollingDelay": "100ms",
    # Each flow's jobs go to a pool of its own (FlowQuery); pools share the executors fairly.
    "spark.scheduler.mode": "FAIR",
    # Kafka input partitions prefer the executor that read them last; waiting for it (3 s by
    # default) stalls a batch while other executors are idle. Replication has no data locality.
    "spark.locality.wait": "0",
    # The checkpoint lives in the local state dir. Spark's default FileContext-based manager has
    # Hadoop fork `readlink` and `chmod` many times per batch there (seen with JFR, measured in ADR 0003);
    # the FileSystem-based one renames in-process (atomic on a local file system), and ours also writes
    # its temporary files without a forked `chmod` and `.crc`.
    "spark.sql.streaming.checkpointFileManagerClass": "io.mirrorspark.state.LocalCheckpointFiles",
}


# Where Spark's resolver keeps the connector's jars in a wheel install (``spark.jars.ivy``) unless the file
# sets it: the container image resolves them at build time into a folder of its own.
IVY_ENV = "MIRRORSPARK_IVY_DIR"


class SparkUnavailable(OperationalError):
    """The configured Spark master does not answer; the message names ``spark.master``."""


def check_master(master: str, timeout: float = 5.0) -> None:
    """A standalone master must accept connections before anything else happens: Spark itself
    would retry registering for a minute and then only log that all masters are unresponsive."""
    if not master.startswith("spark://"):
        return
    for address in master[len("spark://"):].split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return
        except (OSError, ValueError):
            continue
    raise SparkUnavailable(f"spark.master={master}: no Spark master answers there (is it running? "
                           "`mirrorspark local spark up` starts one locally)")


def spark_conf(user: Mapping[str, str], files: Sequence[Path] = ()) -> dict[str, str]:
    """Defaults, the secret of a ``mirrorspark local spark`` cluster if that is the master, then the
    user's ``spark.*`` keys; our jars are always appended to ``spark.jars`` (in a wheel install the
    connector goes to ``spark.jars.packages`` instead, see paths) and the client files executors need
    (``executors.files_to_ship``) to ``spark.files``."""
    log_config = Path(__file__).with_name("spark-log4j2.properties")
    # ParallelGC: the producer's 512 KiB batches and fetch buffers are G1 "humongous" objects at a
    # 1 GiB heap, which kept G1 in back-to-back concurrent cycles (JFR); measured in ADR 0003.
    # C1 only: on the machines measured, C2 compiling Spark's planning code cost more CPU than the
    # compiled code saved (ADR 0017).
    java_opts = f"-XX:+UseParallelGC -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile={log_config.as_uri()}"
    master = user.get("spark.master", SPARK_DEFAULTS["spark.master"])
    conf = {**SPARK_DEFAULTS, "spark.driver.extraJavaOptions": java_opts,
            "spark.executor.extraJavaOptions": java_opts, **driver_auth(master), **user}
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        conf[key] = " ".join([conf[key], *jdk.kerberos_options(conf[key])])  # KRB5_CONFIG's realm for GSSAPI
    deps = paths.spark_dependencies()
    if deps.packages and IVY_ENV in os.environ and "spark.jars.ivy" not in conf:
        conf["spark.jars.ivy"] = os.environ[IVY_ENV]  # an image's resolved jars (no download at start)
    _append(conf, "spark.jars", [str(p) for p in deps.jars])
    _append(conf, "spark.jars.packages", deps.packages)
    _append(conf, "spark.jars.excludes", deps.excludes)
    _append(conf, "spark.files", [str(f) for f in files])
    return conf


def _append(conf: dict[str, str], key: str, values: Sequence[str]) -> None:
    """Ours after the user's own comma-separated entries, if any."""
    if values:
        conf[key] = ",".join([*filter(None, [conf.get(key)]), *values])


def build_session(user: Mapping[str, str], files: Sequence[Path] = ()):  # -> pyspark.sql.SparkSession
    """Start (or reuse) the SparkSession; imported lazily so non-Spark commands start fast."""
    from pyspark.sql import SparkSession

    # Spark binds to the loopback address unless told otherwise (and warns about it otherwise).
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers (if any) must use this interpreter and its packages, not whatever python3 is first.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.errors import PySparkRuntimeError

    builder = SparkSession.builder
    conf = spark_conf(user, files)
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        session = _new_session(conf) if _no_context() else builder.getOrCreate()
    except PySparkRuntimeError as exc:  # the JVM exited before it answered: its own lines are above
        hint = ""
        if conf.get("spark.jars.packages"):
            hint = (f"; it resolves spark.jars.packages ({conf['spark.jars.packages']}) through Ivy on first use, so "
                    "Maven Central must be reachable (or those jars already in Spark's Ivy cache, ~/.ivy2.5.2)")
        reason = str(exc).rstrip(".")
        raise SparkUnavailable(f"the Spark JVM did not start: {reason}{hint}") from None
    session.sparkContext.setLogLevel("WARN")
    return session


# Lines the JVM prints on every start that tell a user nothing: Spark's launcher always adds the
# incubating Vector API module (for its ML code), and the JVM announces it on standard error.
JVM_NOISE = (b"WARNING: Using incubator modules:",)


def _no_context() -> bool:
    from pyspark import SparkContext

    return SparkContext._active_spark_context is None  # pyspark keeps its running context there


def _new_session(conf: Mapping[str, str]):  # -> pyspark.sql.SparkSession
    """A new session whose JVM's standard error passes through a filter: what the JVM says goes to
    ours, except ``JVM_NOISE``. The pipe is read from before the JVM starts, so a JVM that writes a
    lot before it answers (Ivy resolving packages on first use) never blocks on a full pipe.

    The JVM runs in a session of its own, so a SIGTERM (or Ctrl-C) sent to mirrorspark's process group
    reaches only this Python process, which then stops the queries between batches; the JVM still exits
    when this process does (pyspark's gateway ends when its standard input closes). Ignoring SIGTERM
    here while the JVM started instead lost a stop that came in those seconds: the process ran on."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    on_command_line, secret = split_secrets(conf)
    read_end, write_end = os.pipe()
    threading.Thread(target=_forward_stderr, args=(read_end,), name="spark-jvm-stderr", daemon=True).start()
    try:
        gateway = launch_gateway(SparkConf(loadDefaults=False).setAll(list(on_command_line.items())),
                                 popen_kwargs={"stderr": write_end, "start_new_session": True})
    finally:
        os.close(write_end)  # the JVM holds its own copy; the reader ends when the JVM does
    # The secrets go to the JVM's SparkConf through py4j, before the SparkContext reads it.
    everything = SparkConf(loadDefaults=False).setAll([*on_command_line.items(), *secret.items()])
    return SparkSession(SparkContext(conf=everything, gateway=gateway))


def split_secrets(conf: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``conf`` as (settings for the launcher, secret settings). pyspark's launcher passes each
    setting as ``--conf key=value`` to spark-submit, where any local user reads it (``ps``); the
    settings the redactor calls secret are handed to the running JVM instead. None of them is one
    the launcher itself reads (master, memory, class path, jars), so nothing is lost by it."""
    secret = {key: value for key, value in conf.items() if redaction.is_secret(key)}
    return {key: value for key, value in conf.items() if key not in secret}, secret


def _forward_stderr(read_end: int) -> None:
    with os.fdopen(read_end, "rb") as lines:
        for line in lines:
            if not line.startswith(JVM_NOISE):
                sys.stderr.buffer.write(line)
                sys.stderr.flush()
