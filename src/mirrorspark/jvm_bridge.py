"""The one way into mirrorspark's classes in the Spark driver JVM (``jvm/mirrorspark``), over py4j.

Python steers the sink, the lease's write fence and the state location through a few static Java
methods. They are all here, as :class:`SparkJvm`'s methods that take and return Python values, so
py4j's objects and errors stay in this module: a failed call raises :class:`JvmError`, part of
mirrorspark's error family, whose ``kind`` and ``detail`` let a caller word it for its user. What the
sink reports is text whose format ``sink_report`` owns; this module only fetches it.

The plug-in JVM (``plugins/java_host.py``) is another process with a gateway of its own, and
``pipeline/spark_session.py`` builds the session this module reaches through.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from mirrorspark.errors import OperationalError
from mirrorspark.sink_report import BatchReport, parse_report

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")


class JvmError(OperationalError):
    """A call into the driver JVM failed. ``kind``: the Java exception's simple class name (py4j's or
    pyspark's error class when no Java exception came back); ``detail``: its message; ``text``: the
    Java exception as it prints itself (class and message), for callers that look for a cause in it.
    The error's own message is one line: ``<call> failed: <kind>: <detail's first line>``."""

    def __init__(self, *, call: str, kind: str, detail: str, text: str) -> None:
        super().__init__(f"{call} failed: {kind}: {_first_line(detail)}")
        self.call = call
        self.kind = kind
        self.detail = detail
        self.text = text


def _first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0][:500] if text else ""


def jvm_error(call: str, exc: BaseException) -> JvmError:
    """``exc``, raised by py4j or pyspark during ``call``, as a :class:`JvmError`."""
    cause = getattr(exc, "java_exception", None)  # set by Py4JJavaError: the Java side threw
    if cause is None:
        text = str(exc)
    else:
        try:
            message = cause.getMessage()
            return JvmError(call=call, kind=str(cause.getClass().getSimpleName()),
                            detail="" if message is None else str(message), text=str(cause.toString()))
        except Exception:  # noqa: BLE001 - the gateway is gone: py4j's own text is all there is
            text = str(getattr(exc, "errmsg", ""))  # str(exc) would ask the gateway too
    return JvmError(call=call, kind=type(exc).__name__, detail=text, text=text)


def import_before_threads() -> None:
    """Import py4j and pyspark now, before threads that both use them start: packages whose modules
    import each other, which two threads importing at once stop on with a _DeadlockError (seen when
    the control plane's client JVM and Spark's started side by side)."""
    import py4j.java_gateway  # noqa: F401
    import pyspark.errors
    import pyspark.sql  # noqa: F401


def _call(call: str, thunk: Callable[[], T]) -> T:
    """``thunk()``, py4j calls (the classes' lookups too); a failure becomes a :class:`JvmError` naming ``call``."""
    from py4j.protocol import Py4JError  # here, not at the top: importing py4j costs the CLI ~0.1 s

    try:
        return thunk()
    except Py4JError as exc:
        raise jvm_error(call, exc) from None


def spark_job(what: str, call: Callable[[], T]) -> T:
    """``call()``, Spark work through pyspark's own API (a read, a join, a collect); a py4j or pyspark
    failure becomes a :class:`JvmError` naming ``what``."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        return call()
    except (Py4JError, PySparkException) as exc:
        raise jvm_error(what, exc) from None


class JvmFences:
    """The write fences of the driver JVM's local executors (``io.mirrorspark.sink.Fences``), renewed by
    a flow's lease."""

    def __init__(self, *, java: Any) -> None:
        self._java = java
        # Looked up once: py4j asks the JVM what a class's member is at each lookup, a second round
        # trip for each of the lease's two renewals a second.
        self._renew = java.renew
        self._revoke = java.revoke

    def renew(self, flow: str, until_ms: int) -> None:
        """Writes of ``flow`` are allowed until ``until_ms`` (epoch ms); blocks while the JVM is stopped."""
        _call("Fences.renew", lambda: self._renew(flow, until_ms))

    def revoke(self, flow: str) -> None:
        _call("Fences.revoke", lambda: self._revoke(flow))

    def drop_unsent(self, flow: str) -> int:
        """Close ``flow``'s producers in this JVM, dropping what they still retry (``Fences.dropUnsent``)."""
        return int(_call("Fences.dropUnsent", lambda: self._java.dropUnsent(flow)))

    def late_writes(self, flow: str, flush_ms: int) -> str:
        """What the JVM's producers sent for ``flow`` after its deadline (JSON, read by ``stale_writes``)."""
        return str(_call("Fences.lateWrites", lambda: self._java.lateWrites(flow, flush_ms)))


class JvmStateFiles:
    """Files under a Hadoop URI, read and written by the driver JVM (``io.mirrorspark.state.StateFiles``)
    with one Hadoop configuration, built once and shared by every folder: building one copies the whole
    session configuration."""

    def __init__(self, *, java: Any, conf: Any) -> None:
        self._java = java
        self._conf = conf

    def probe(self, uri: str) -> str:
        """``uri`` fully qualified, the folder created and proven writable."""
        return str(_call("StateFiles.probe", lambda: self._java.probe(uri, self._conf)))

    def read(self, uri: str) -> str | None:
        text = _call("StateFiles.read", lambda: self._java.read(uri, self._conf))
        return None if text is None else str(text)

    def write(self, uri: str, text: str) -> None:
        _call("StateFiles.write", lambda: self._java.write(uri, text, self._conf))

    def list(self, uri: str) -> list[str]:
        return [name for name in str(_call("StateFiles.list", lambda: self._java.list(uri, self._conf))).split("\n")
                if name]

    def delete(self, uri: str) -> None:
        _call("StateFiles.delete", lambda: self._java.delete(uri, self._conf))

    def rename(self, uri: str, to: str) -> bool:
        """False when there is nothing at ``uri``."""
        return bool(_call("StateFiles.rename", lambda: self._java.rename(uri, to, self._conf)))


class JvmGroupAdmin:
    """One cluster's consumer groups through Kafka's Admin client in the driver JVM
    (``io.mirrorspark.control.GroupAdmin``); offsets cross as JSON rows ``[topic, partition, offset,
    metadata]``. Failures are :class:`JvmError` whose ``kind`` is ``NotAnswering`` or ``Refused``."""

    def __init__(self, *, java: Any) -> None:
        self._java = java

    def group_ids(self, timeout_ms: int) -> list[str]:
        return [str(g) for g in json.loads(str(_call("GroupAdmin.groupIds", lambda: self._java.groupIds(timeout_ms))))]

    def committed(self, group: str, timeout_ms: int) -> dict[tuple[str, int], tuple[int, str]]:
        rows = json.loads(str(_call("GroupAdmin.committed", lambda: self._java.committed(group, timeout_ms))))
        return {(str(topic), int(partition)): (int(offset), str(metadata))
                for topic, partition, offset, metadata in rows}

    def describe(self, group: str, timeout_ms: int) -> tuple[str, int]:
        found = json.loads(str(_call("GroupAdmin.describe", lambda: self._java.describe(group, timeout_ms))))
        return str(found["state"]), int(found["members"])

    def describe_all(self, groups: Sequence[str], timeout_ms: int) -> dict[str, tuple[str, int] | str]:
        """Each group's (state, member count), or the cluster's refusal text, from one call."""
        found = json.loads(str(_call("GroupAdmin.describeAll",
                                     lambda: self._java.describeAll(json.dumps(list(groups)), timeout_ms))))
        return {str(group): str(row["refused"]) if "refused" in row else (str(row["state"]), int(row["members"]))
                for group, row in found.items()}

    def committed_stable(self, group: str, partitions: Sequence[tuple[str, int]],
                         timeout_ms: int) -> tuple[dict[tuple[str, int], tuple[int, str]], list[tuple[str, int]]]:
        """The group's offsets as a read_committed consumer sees them, and the partitions whose offset
        sits in a transaction still open."""
        asked = json.dumps([[topic, partition] for topic, partition in partitions])
        found = json.loads(str(_call("GroupAdmin.committedStable",
                                     lambda: self._java.committedStable(group, asked, timeout_ms))))
        return ({(str(topic), int(partition)): (int(offset), str(metadata))
                 for topic, partition, offset, metadata in found["offsets"]},
                [(str(topic), int(partition)) for topic, partition in found["open"]])

    def fence(self, transactional_ids: Sequence[str], timeout_ms: int) -> None:
        _call("GroupAdmin.fence", lambda: self._java.fence(json.dumps(list(transactional_ids)), timeout_ms))

    def fence_open(self, prefix: str, timeout_ms: int) -> list[str]:
        """Fence every transactional id under ``prefix`` whose transaction is open; the ids fenced."""
        return [str(i) for i in json.loads(str(_call("GroupAdmin.fenceOpen",
                                                     lambda: self._java.fenceOpen(prefix, timeout_ms))))]

    def commit(self, group: str, offsets: Mapping[tuple[str, int], tuple[int, str]], timeout_ms: int) -> None:
        rows = json.dumps([[topic, partition, offset, metadata]
                           for (topic, partition), (offset, metadata) in sorted(offsets.items())])
        _call("GroupAdmin.commit", lambda: self._java.commit(group, rows, timeout_ms))

    def close(self) -> None:
        _call("GroupAdmin.close", lambda: self._java.close())


class SparkJvm:
    """mirrorspark's classes in the driver JVM of ``session``. Building one costs no JVM call; a class is
    looked up (a py4j round trip per package level) when first used, then kept."""

    def __init__(self, *, session: SparkSession) -> None:
        view = session._jvm
        if view is None:  # only before a SparkContext exists
            raise OperationalError("the Spark session has no driver JVM to call")
        self._view = view
        self._context = session._jsc
        self._session = session._jsparkSession

    @cached_property
    def _sink(self) -> Any:
        return self._view.io.mirrorspark.sink

    @cached_property
    def _kafka(self) -> Any:
        return self._view.io.mirrorspark.kafka

    @cached_property
    def _batches(self) -> Any:
        return self._sink.WrittenBatches

    def preflight(self, file_names: Iterable[str]) -> str:
        """Run ``Preflight.check`` on the executors: a line per executor, its id, then after a TAB what it
        lacks of mirrorspark's classes and of ``file_names`` (shipped with ``spark.files``), if anything."""
        names = "\n".join(file_names)
        return str(_call("Preflight.check", lambda: self._sink.Preflight.check(self._context, names)))

    def fences(self) -> JvmFences:
        return _call("Fences", lambda: JvmFences(java=self._sink.Fences))

    def group_admin(self, settings: Mapping[str, str]) -> JvmGroupAdmin:
        """Kafka's Admin client for one cluster's groups, from its Java client settings (as MM2 gives
        them to its admin client)."""
        def make() -> JvmGroupAdmin:
            java_map = self._view.java.util.HashMap()
            for key, value in settings.items():
                java_map.put(key, value)
            return JvmGroupAdmin(java=self._view.io.mirrorspark.control.GroupAdmin(java_map))

        return _call("GroupAdmin", make)

    def state_files(self) -> JvmStateFiles:
        """The state location's files through Hadoop, with a configuration made now from the session's."""
        return _call("StateFiles", lambda: JvmStateFiles(java=self._view.io.mirrorspark.state.StateFiles,
                                                         conf=self._session.sessionState().newHadoopConf()))

    def drain_written(self, flow: str) -> BatchReport:
        """Take what the sink wrote for ``flow`` since the last drain (offset runs, executors), parsed by
        ``sink_report``."""
        runs = _call("OffsetRuns.drain", lambda: self._kafka.OffsetRuns.drain(flow))
        executors = _call("WrittenBatches.drainExecutors", lambda: self._batches.drainExecutors(flow))
        return parse_report(runs=runs, executors=executors)

    def drain_figures(self, flow: str) -> BatchReport:
        """Take the sink's figures for ``flow`` (per-partition stats, resumed partitions, records copied with
        a schema id neither registry knows). Drained only once
        the batch's bookkeeping succeeded: when it fails they stay in the JVM and count with the next batch,
        since the records were written all the same."""
        resumed = _call("WrittenBatches.drainResumed", lambda: self._batches.drainResumed(flow))
        stats = _call("FlowStats.drain", lambda: self._kafka.FlowStats.drain(flow))
        unresolved = _call("WrittenBatches.drainUnresolved", lambda: self._batches.drainUnresolved(flow))
        return parse_report(resumed=resumed, stats=stats, unresolved=unresolved)

    def jvm_metrics(self) -> str:
        """The driver JVM's memory, collections, threads and CPU (``metrics.jvm`` parses the text)."""
        return str(_call("JvmMetrics.sample", lambda: self._view.io.mirrorspark.metrics.JvmMetrics.sample()))

    def reset_epochs(self, flow: str) -> None:
        """Real-time mode: a new query of ``flow`` starts; its batches count from its first one again."""
        _call("WrittenBatches.resetEpochs", lambda: self._batches.resetEpochs(flow))

    def await_epoch(self, flow: str, wait_ms: int) -> int:
        """The real-time batch of ``flow`` whose sink commit waits to be recorded; -1 when none came
        within ``wait_ms``."""
        return int(_call("WrittenBatches.awaitEpoch", lambda: self._batches.awaitEpoch(flow, wait_ms)))

    def end_realtime_batches(self, flow: str, ending: bool = True) -> None:
        """Real-time mode: the flow's readers in this JVM end each batch as soon as they are asked for a
        record (a stop records the batch in flight), or, ``ending`` False, read to the deadline again."""
        ends = self._view.io.mirrorspark.source.BatchEnds
        _call("BatchEnds", lambda: ends.request(flow) if ending else ends.clear(flow))

    def take_drops(self, flow: str) -> dict[tuple[str, int], int]:
        """Source partitions the flow's real-time tasks gave up since the last call (their end went behind
        the position read: re-created or truncated), each with the offset it stopped at."""
        text = str(_call("RealTimeDrops.take", lambda: self._view.io.mirrorspark.source.RealTimeDrops.take(flow)))
        out: dict[tuple[str, int], int] = {}
        for line in text.splitlines():
            topic, partition, position = line.rsplit("\t", 2)
            out[(topic, int(partition))] = int(position)
        return out

    def give_resume(self, run: str, ranges: str, starts: str = "") -> None:
        """Real-time mode: where the query started as ``run`` resumes on the target (the sink's ``resume``
        format) and where its writes begin per target partition (``retryFrom`` lines), which its first
        batch waits for (``io.mirrorspark.sink.ResumeRanges``)."""
        _call("ResumeRanges.give", lambda: self._sink.ResumeRanges.give(run, ranges, starts))

    def wake_epochs(self, flow: str) -> None:
        """The recorder of ``flow`` stops: its ``await_epoch`` returns -1 now instead of at its end."""
        _call("WrittenBatches.wake", lambda: self._batches.wake(flow))

    def epoch_taken(self, flow: str, epoch: int) -> None:
        """The batch is recorded: its sink commit goes on."""
        _call("WrittenBatches.taken", lambda: self._batches.taken(flow, epoch))

    def refuse_epoch(self, flow: str, epoch: int, why: str) -> None:
        """The batch could not be recorded: its sink commit fails with ``why`` and Spark replays it."""
        _call("WrittenBatches.refuse", lambda: self._batches.refuse(flow, epoch, why))
