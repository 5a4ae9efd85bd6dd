"""Secret ``spark.*`` values reach the Spark JVM but no process's command line or other users' view.

Starts a real local Spark JVM (about 10 s), no Kafka brokers.
"""
from __future__ import annotations

import subprocess
import sys
import threading

from helpers.process_views import assert_environ_private, assert_off_command_lines, command_lines, descendants

SECRET_KEY = "topsecret123"
ACCESS_KEY = "AKIAFAKEACCESS42"

# A mirrorspark session with fake S3A credentials (read from standard input, so that this script's own
# command line holds none); prints what the JVM's Hadoop configuration holds, then waits for its
# standard input to close so the test can look at the running processes.
DRIVER = """
import sys
from mirrorspark.pipeline.spark_session import build_session
secret_key, access_key = sys.stdin.readline().split()
spark = build_session({"spark.master": "local[1]", "spark.hadoop.fs.s3a.secret.key": secret_key,
                       "spark.hadoop.fs.s3a.access.key": access_key, "spark.app.name": "secrets-check"})
hadoop = spark.sparkContext._jsc.hadoopConfiguration()
print("secret.key", hadoop.get("fs.s3a.secret.key"), flush=True)
print("access.key", hadoop.get("fs.s3a.access.key"), flush=True)
print("app.name", spark.sparkContext.appName, flush=True)
sys.stdin.read()
spark.stop()
"""


def test_secret_spark_settings_reach_the_jvm_off_its_command_line():
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    guard = threading.Timer(120, driver.kill)  # a hung JVM fails the test instead of blocking it
    guard.start()
    try:
        assert driver.stdin is not None and driver.stdout is not None
        driver.stdin.write(f"{SECRET_KEY} {ACCESS_KEY}\n")
        driver.stdin.flush()
        lines = [driver.stdout.readline().strip() for _ in range(3)]
        assert lines == [f"secret.key {SECRET_KEY}", f"access.key {ACCESS_KEY}", "app.name secrets-check"], lines
        jvms = [pid for pid in descendants(driver.pid) if b"java" in command_lines().get(pid, b"")]
        assert jvms, "the Spark JVM should run under the driver"
        assert_off_command_lines([SECRET_KEY, ACCESS_KEY])
        assert_environ_private([driver.pid, *jvms], without=[SECRET_KEY, ACCESS_KEY])
    finally:
        guard.cancel()
        _, err = driver.communicate(timeout=60)
    assert driver.returncode == 0, err[-3000:]
