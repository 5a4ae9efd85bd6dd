"""The failure summary of a flow's query."""
from __future__ import annotations

from mirrorspark.pipeline.flow_query import root_cause


def test_root_cause_finds_the_kafka_or_python_error():
    spark = ("An exception was raised by the Python Proxy. Return Message: Traceback\n"
             "py4j.protocol.Py4JJavaError: An error occurred while calling o185.save.\n"
             "Caused by: java.io.IOException: writing failed\n"
             "Caused by: org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized\n")
    assert root_cause(spark) == "org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized"
    assert root_cause("Traceback\n  File x\nRuntimeError: flow a->b: batch 3") == "RuntimeError: flow a->b: batch 3"
