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
    # the soak's log: the Python proxy's traceback ends with mirrorspark's own error, not its first line
    fenced = ("An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):\n"
              '  File "batch_writer.py", line 180, in write\n'
              "mirrorspark.integrity.batch_guard.Fenced: flow a->b: batch 7 finished after this process lost the lease")
    assert root_cause(fenced) == ("mirrorspark.integrity.batch_guard.Fenced: flow a->b: batch 7 finished after this "
                                  "process lost the lease")


def test_a_batch_starts_where_the_previous_entry_ended_without_reading_it_again():

    from mirrorspark.pipeline.batch_writer import BatchStarts

    reads: list[int] = []

    class Log:
        def entry(self, batch_id: int):
            reads.append(batch_id)
            return "", {("t", 0): batch_id * 10}

    starts = BatchStarts(spark_log=Log(), takeover={("t", 0): 7})  # type: ignore[arg-type]
    assert starts.of(0) == {("t", 0): 7}  # where MM2 stopped
    assert starts.of(5) == {("t", 0): 40} and reads == [4]  # nothing cached: read
    starts.remember(5, {("t", 0): 55})
    assert starts.of(6) == {("t", 0): 55} and reads == [4]  # the entry batch 5 read
    assert starts.of(8) == {("t", 0): 70} and reads == [4, 7]  # not the one before: read
    starts.remember(8, {("t", 0): 85})
    starts.forget()  # a rewind rewrote the entries
    assert starts.of(9) == {("t", 0): 80} and reads == [4, 7, 8]


def test_the_sink_is_told_each_source_topics_remote_topic_and_the_largest_record():
    from types import SimpleNamespace

    from mirrorspark.pipeline.batch_writer import BatchWriter
    from mirrorspark.pipeline.record_columns import remote_topics_option

    assert remote_topics_option({"payments": "a.payments", "orders": "a.orders"}) == \
        "orders\ta.orders\npayments\ta.payments"
    assert remote_topics_option({}) == ""

    class Configs:
        def __init__(self, largest: int) -> None:
            self.largest = largest

        def largest_message(self, topics):
            assert topics == ["orders"]
            return self.largest

    plan = SimpleNamespace(remote={"orders": "a.orders"})
    for largest, request in ((1000, None), (4_000_000, str(4_000_000 + 16384))):
        writer = SimpleNamespace(sink_options={"flow": "a->b"}, schemas=None,
                                 remote_topics=SimpleNamespace(configs=Configs(largest)))
        options = BatchWriter.sink_options_for(writer, plan)
        assert options["remoteTopics"] == "orders\ta.orders" and options["flow"] == "a->b"
        assert options.get("kafka.max.request.size") == request
    kept = SimpleNamespace(sink_options={"kafka.max.request.size": "2000000"}, schemas=None,
                           remote_topics=SimpleNamespace(configs=Configs(4_000_000)))
    assert BatchWriter.sink_options_for(kept, plan)["kafka.max.request.size"] == "2000000"  # the user's
    assert "remoteTopics" not in kept.sink_options  # the flow's own options are left as they were
