"""The JVM code's own unit tests (jvm/mirrorspark/src/test), compiled against the built jar and run
without brokers or Spark: the source's grouping of partitions into tasks and its offset JSON."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pyspark

from mirrorspark import paths
from mirrorspark.local.cluster import java_executable

TESTS = paths.project_root() / "jvm" / "mirrorspark" / "src" / "test" / "java"


def _classpath() -> str:
    clients = sorted((paths.build_dir() / "spark-kafka-jars").glob("kafka-clients-*.jar"))
    spark = Path(pyspark.__file__).parent / "jars" / "*"
    return os.pathsep.join([str(paths.mirrorspark_jar()), *map(str, clients), str(spark)])


def test_jvm_unit_tests_pass(tmp_path):
    sources = sorted(str(p) for p in TESTS.rglob("*.java"))  # the test classes and their shared UnitChecks
    tests = [source for source in sources if source.endswith("Tests.java")]
    assert tests, f"no JVM unit tests under {TESTS}"
    javac = Path(java_executable()).with_name("javac")
    subprocess.run([str(javac), "--release", "17", "-Xlint:all,-path,-processing", "-Werror", "-cp", _classpath(),
                    "-d", str(tmp_path), *sources], check=True, capture_output=True, text=True)
    for source in tests:
        name = Path(source).relative_to(TESTS).with_suffix("").as_posix().replace("/", ".")
        run = subprocess.run([java_executable(), "-cp", f"{tmp_path}{os.pathsep}{_classpath()}", name],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, f"{name}:\n{run.stderr[-3000:]}"
        assert run.stdout.startswith("ok: "), run.stdout
