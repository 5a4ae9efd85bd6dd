"""The audit job's failures without Spark: one line naming what was being done and the Java exception."""
from __future__ import annotations

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from mirrorspark.audit.job import AuditError, spark_call


class Throwable:
    _target_id = "o9"

    def getClass(self):
        return type("Class", (), {"getSimpleName": staticmethod(lambda: "SparkException")})

    def getMessage(self):
        return "Job aborted due to stage failure: Task 0 failed 4 times\n\tat org.apache.spark.Some.frame"

    def toString(self):
        return f"org.apache.spark.SparkException: {self.getMessage()}"


def test_a_failed_spark_job_is_one_line_naming_what_was_done():
    def job():
        raise Py4JJavaError("An error occurred while calling o51.collectToPython.\n", Throwable())

    with pytest.raises(AuditError) as caught:
        spark_call("comparing source and target", job)
    assert str(caught.value) == ("comparing source and target failed: SparkException: Job aborted due to stage "
                                 "failure: Task 0 failed 4 times")


def test_pyspark_s_own_errors_too():
    def read():
        raise PySparkException(message="[UNRESOLVED_COLUMN] `hash` cannot be resolved\nplan...")

    with pytest.raises(AuditError, match=r"^reading mm2-checkpoints failed: PySparkException: \[UNRESOLVED_COLUMN\]"):
        spark_call("reading mm2-checkpoints", read)
    assert spark_call("counting", lambda: 4) == 4
