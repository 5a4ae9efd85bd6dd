"""The executor check's verdicts from what the driver JVM answers, without Spark: the probe's lines, or
the Java exception behind a failed job (through the bridge's JvmError)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from py4j.protocol import Py4JJavaError

from mirrorspark.pipeline.executors import ExecutorSetupError, check_executors


class Throwable:
    _target_id = "o1"

    def __init__(self, text: str) -> None:
        self.text = text

    def getClass(self):
        return SimpleNamespace(getSimpleName=lambda: self.text.partition(":")[0].rpartition(".")[2])

    def getMessage(self):
        return self.text.partition(": ")[2]

    def toString(self):
        return self.text


def session(check) -> SimpleNamespace:
    """A SparkSession whose driver JVM's ``Preflight.check`` is ``check``."""
    preflight = SimpleNamespace(check=check)
    jvm = SimpleNamespace(io=SimpleNamespace(mirrorspark=SimpleNamespace(sink=SimpleNamespace(Preflight=preflight))))
    context = SimpleNamespace(setJobGroup=lambda *a: None, cancelJobGroup=lambda *a: None)
    conf = SimpleNamespace(get=lambda key, default=None: {"spark.master": "spark://m:7077"}.get(key, default))
    return SimpleNamespace(_jvm=jvm, _jsc="jsc", _jsparkSession=None, sparkContext=context, conf=conf)


def failing(text: str):
    def check(jsc, names):
        raise Py4JJavaError("An error occurred while calling z:io.mirrorspark.sink.Preflight.check.\n",
                            Throwable(text))
    return check


def test_the_executors_ids_come_back_and_what_one_lacks_is_named():
    asked: list[str] = []

    def check(jsc, names: str) -> str:
        asked.append(names)
        return "1\n2\ttruststore.jks not shipped" if "truststore.jks" in names else "1\n2\n1"

    assert check_executors(session(check), []) == ["1", "2"]
    with pytest.raises(ExecutorSetupError, match=r"^executor 2: truststore\.jks not shipped$"):
        check_executors(session(check), [Path("/etc/kafka/truststore.jks")])
    assert asked == ["", "truststore.jks"]


def test_an_executor_without_mirrorspark_s_jar_is_told_apart_from_other_failures():
    missing = failing("org.apache.spark.SparkException: Job aborted: java.lang.ClassNotFoundException: "
                      "io.mirrorspark.sink.Preflight$Probe")
    with pytest.raises(ExecutorSetupError, match=r"^executors cannot load mirrorspark's jar"):
        check_executors(session(missing), [])
    with pytest.raises(ExecutorSetupError, match=r"^the executor check job failed: org.apache.spark.SparkException: "
                                                 r"Job aborted: executor lost$"):
        check_executors(session(failing("org.apache.spark.SparkException: Job aborted: executor lost\n\tat x")), [])
