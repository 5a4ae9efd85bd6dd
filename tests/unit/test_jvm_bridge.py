"""The driver JVM's bridge without a JVM: py4j's failures become one ``JvmError`` that names the call and
the Java exception, and the sink's drains hand their texts to ``sink_report``."""
from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest
from py4j.protocol import Py4JJavaError, Py4JNetworkError
from pyspark.errors import PySparkException

from mirrorspark.errors import OperationalError
from mirrorspark.jvm_bridge import JvmError, SparkJvm, jvm_error, spark_job
from mirrorspark.sink_report import BatchReportError

SRC = Path(__file__).resolve().parents[2] / "src" / "mirrorspark"
SESSION_INTERNALS = {"_jvm", "_jsc", "_jsparkSession"}  # pyspark's handles on the driver JVM
# spark_session.py builds the session. runner.py and flow.py: the flow's fence binding (flow.py line ~201) is
# restructured by issue 43's other half, which moves it to SparkJvm.fences(); drop them from here then.
MAY_REACH_THE_SESSION_JVM = {"jvm_bridge.py", "pipeline/spark_session.py"}
# The plug-in JVM (plugins/java_host.py) is another process with its own gateway: its own bridge.
# control/java_clients.py turns py4j's failures into the KafkaException librdkafka raises, once.
MAY_IMPORT_PY4J = {"jvm_bridge.py", "plugins/java_host.py", "plugins/java_filters.py", "policy/java_policy.py",
                   "control/java_clients.py"}


class Throwable:
    """What py4j hands back for a Java exception: a proxy whose methods run in the JVM."""

    _target_id = "o7"

    def __init__(self, kind: str, message: str | None, gone: bool = False) -> None:
        self.kind, self.message, self.gone = kind, message, gone

    def getClass(self):
        return SimpleNamespace(getSimpleName=lambda: self.kind)

    def getMessage(self):
        if self.gone:
            raise Py4JNetworkError("Answer from Java side is empty")
        return self.message

    def toString(self):
        return f"java.io.{self.kind}: {self.message}"


def java_error(kind: str, message: str | None, gone: bool = False) -> Py4JJavaError:
    return Py4JJavaError("An error occurred while calling z:io.mirrorspark.state.StateFiles.write.\n",
                         Throwable(kind, message, gone))


def session(package: object) -> SimpleNamespace:
    """A SparkSession as the bridge sees it: py4j's view of the JVM, whose io.mirrorspark is ``package``."""
    return SimpleNamespace(_jvm=SimpleNamespace(io=SimpleNamespace(mirrorspark=package)), _jsc="jsc",
                           _jsparkSession=None)


def test_a_java_exception_becomes_one_line_naming_the_call_and_its_class():
    error = jvm_error("StateFiles.write", java_error("AccessDeniedException", "s3a://b/x: 403\n\tat some.Frame"))
    assert isinstance(error, OperationalError)
    assert (error.kind, error.detail) == ("AccessDeniedException", "s3a://b/x: 403\n\tat some.Frame")
    assert error.text == "java.io.AccessDeniedException: s3a://b/x: 403\n\tat some.Frame"
    assert str(error) == "StateFiles.write failed: AccessDeniedException: s3a://b/x: 403"


def test_a_java_exception_without_a_message_has_an_empty_detail():
    assert jvm_error("Fences.renew", java_error("NullPointerException", None)).detail == ""


def test_when_the_gateway_is_gone_py4j_s_own_text_is_used():
    error = jvm_error("OffsetRuns.drain", java_error("IOException", "x", gone=True))
    assert error.kind == "Py4JJavaError"
    assert str(error) == ("OffsetRuns.drain failed: Py4JJavaError: An error occurred while calling "
                          "z:io.mirrorspark.state.StateFiles.write.")


def test_a_py4j_error_without_a_java_side_keeps_its_class_and_text():
    text = "An error occurred while trying to connect to the Java server"
    error = jvm_error("Fences.revoke", Py4JNetworkError(text))
    assert (error.kind, error.text) == ("Py4JNetworkError", text)


def test_every_call_of_the_bridge_raises_the_family_and_the_lookups_too():
    class Kafka:
        class OffsetRuns:
            @staticmethod
            def drain(flow: str) -> str:
                raise java_error("IllegalStateException", f"no store for {flow}")

    jvm = SparkJvm(session=session(SimpleNamespace(kafka=Kafka)))  # type: ignore[arg-type]
    with pytest.raises(JvmError, match=r"^OffsetRuns.drain failed: IllegalStateException: no store for a->b$"):
        jvm.drain_written("a->b")

    class Gone:
        def __getattr__(self, name: str):
            raise Py4JNetworkError("Error while sending or receiving")

    with pytest.raises(JvmError, match=r"^Fences failed: Py4JNetworkError"):
        SparkJvm(session=session(Gone())).fences()  # type: ignore[arg-type]


def test_spark_work_failing_in_pyspark_is_one_line_too():
    with pytest.raises(JvmError, match=r"^reading the source failed: PySparkException: \[X\] bad$"):
        spark_job("reading the source", lambda: (_ for _ in ()).throw(PySparkException(message="[X] bad\nmore")))
    assert spark_job("counting", lambda: 3) == 3


def test_the_written_rows_and_the_figures_are_drained_apart():
    calls: list[tuple[str, str]] = []

    def store(name: str, text: str):
        def take(flow: str) -> str:
            calls.append((name, flow))
            return text
        return take

    class Jvm:
        class kafka:
            class OffsetRuns:
                drain = staticmethod(store("runs", "r\t0\t1\t2\t3\n"))

            class FlowStats:
                drain = staticmethod(store("stats", "r\t0\t5\t50\t1\t2\t3\t4\t5\t6\t5" + "\t0" * 30 + "\n"))

        class sink:
            class WrittenBatches:
                drainResumed = staticmethod(store("resumed", ""))
                drainExecutors = staticmethod(store("executors", "7"))
                drainUnresolved = staticmethod(store("unresolved", "r\t0\t2\n"))

    from mirrorspark.sink_report import BatchReport, WrittenRun

    jvm = SparkJvm(session=session(Jvm))  # type: ignore[arg-type]
    written = jvm.drain_written("A->B")
    assert written == BatchReport(runs=(WrittenRun.of("r", 0, 1, 2, 3),), executors=frozenset({"7"}))
    assert sorted(calls) == [("executors", "A->B"), ("runs", "A->B")]  # figures stay until the bookkeeping is done
    figures = jvm.drain_figures("A->B")
    assert not figures.runs and [s.count for s in figures.stats] == [5]
    assert [(u.topic, u.partition, u.records) for u in figures.unresolved] == [("r", 0, 2)]
    assert sorted(calls[2:]) == [("resumed", "A->B"), ("stats", "A->B"), ("unresolved", "A->B")]


def test_a_drained_line_the_package_cannot_read_fails_as_sink_report_says():
    class Jvm:
        class kafka:
            class OffsetRuns:
                drain = staticmethod(lambda flow: "r\t0\t1\n")

        class sink:
            class WrittenBatches:
                drainExecutors = staticmethod(lambda flow: "")

    with pytest.raises(BatchReportError, match=r"OffsetRuns\.drain returned a line"):
        SparkJvm(session=session(Jvm)).drain_written("a->b")  # type: ignore[arg-type]


def test_the_state_files_share_one_hadoop_configuration_and_return_python_values():
    made: list[str] = []

    class StateFiles:
        read = staticmethod(lambda uri, conf: None if uri.endswith("missing") else f"{uri} with {conf}")
        list = staticmethod(lambda uri, conf: "a.json\nb.json\n")
        rename = staticmethod(lambda uri, to, conf: False)

    class SessionState:
        def newHadoopConf(self) -> str:
            made.append("conf")
            return "conf"

    spark = session(SimpleNamespace(state=SimpleNamespace(StateFiles=StateFiles)))
    spark._jsparkSession = SimpleNamespace(sessionState=SessionState)
    files = SparkJvm(session=spark).state_files()  # type: ignore[arg-type]
    assert files.read("s3a://b/x") == "s3a://b/x with conf" and files.read("s3a://b/missing") is None
    assert files.list("s3a://b") == ["a.json", "b.json"] and files.rename("s3a://b/x", "s3a://b/y") is False
    assert made == ["conf"]


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), ast.parse(path.read_text(), str(path))


def test_only_the_bridge_reaches_the_spark_driver_jvm():
    found = [f"src/mirrorspark/{name}:{node.lineno}: .{node.attr}" for name, tree in _modules()
             if name not in MAY_REACH_THE_SESSION_JVM for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and node.attr in SESSION_INTERNALS]
    assert not found, ("these lines reach the Spark driver JVM through pyspark's internals; call a method of "
                       "mirrorspark.jvm_bridge.SparkJvm instead (add one there if the call is new):\n"
                       + "\n".join(found))


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return [node.module or ""] if isinstance(node, ast.ImportFrom) else []


def test_py4j_stays_in_the_bridge_and_the_plug_in_jvm():
    found = [f"src/mirrorspark/{name}:{node.lineno}: import {module}" for name, tree in _modules()
             if name not in MAY_IMPORT_PY4J for node in ast.walk(tree)
             for module in _imported(node) if module.split(".")[0] == "py4j"]
    assert not found, ("these lines import py4j outside mirrorspark.jvm_bridge: catch its JvmError (py4j's "
                       "failures, translated once) instead:\n" + "\n".join(found))


def test_the_allowed_files_exist():
    names = {name for name, _ in _modules()}
    assert not (MAY_REACH_THE_SESSION_JVM | MAY_IMPORT_PY4J) - names
