"""The process: every enabled flow of a configuration in one SparkSession, until asked to stop.

This module owns the process's lifecycle (prepare, start, run, stop, signals, progress); each flow
owns its own (``flow.py``), its wiring is ``flow_assembly.py`` and cluster access ``control/clusters.py``.
"""
from __future__ import annotations

import functools
import logging
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.config.topology import custom_policy_cycles, policy_kind
from mirrorspark.control.client_settings import client_class_jars, use_state_dir
from mirrorspark.control.clusters import Clusters
from mirrorspark.control.heartbeats import HeartbeatEmitter
from mirrorspark.control.remote_topics import RemoteNames
from mirrorspark.control.scheduler import Scheduler
from mirrorspark.coordination.claims import instance_id
from mirrorspark.errors import ConfigError, OperationalError, first_line
from mirrorspark.jvm_bridge import SparkJvm, import_before_threads
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.pipeline.executors import check_executors, files_to_ship, is_local
from mirrorspark.pipeline.flow import ALONE_WAIT, Flow
from mirrorspark.pipeline.flow_assembly import FlowContext, Shared, assemble_heartbeats
from mirrorspark.pipeline.preflight import clusters_used, heartbeat_flows, preflight
from mirrorspark.pipeline.realtime import SlotBook
from mirrorspark.pipeline.rest_controller import ReplicatorController
from mirrorspark.pipeline.retriable import retriable
from mirrorspark.pipeline.spark_session import SPARK_DEFAULTS, build_session, check_master
from mirrorspark.pipeline.stop_deadline import StopDeadline
from mirrorspark.pipeline.transforms import transform_jars
from mirrorspark.policy import ReplicationPolicy, policy_for_flow
from mirrorspark.policy.loading import POLICY_KEY, check_cycle_policy
from mirrorspark.rest.server import RestServer, RestSettings
from mirrorspark.state import StateFiles, StateLocation
from mirrorspark.takeover.lost_state import StateLost, has_no_state

log = logging.getLogger(__name__)


STEER_WAIT_S = 2.0  # how long a steering round waits for the flows' rounds before it checks the rest
# How long a stop waits for the flows' last checkpoint rounds together: a source that does not answer leaves
# the checkpoints behind, as they were, and the rest of the stop keeps its share of the deadline.
LAST_CHECKPOINTS_S = 10.0


class SteeringLane:
    """One flow's steering rounds, each run in the same thread of its own for the process's life.

    Why one thread, not one per round: the loop steers twice a second, and a Python thread new to
    py4j opens a connection of its own to the JVM (a socket, a Java thread, a handshake), closed again
    when the thread ends; that churn was a visible part of an idle process's CPU (ADR 0027 section 15)."""

    def __init__(self, name: str, round_: Callable[[], None]) -> None:
        self._round = round_
        self._go = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"mirrorspark-steer-{name}",
                                        daemon=True)  # a takeover under way never holds the process's exit
        self._thread.start()

    def busy(self) -> bool:
        """A round is running (or asked for and not begun)."""
        return not self._idle.is_set()

    def begin(self) -> None:
        self._idle.clear()
        self._go.set()

    def wait(self, timeout: float) -> bool:
        """True once the round ended, False when ``timeout`` seconds passed first."""
        return self._idle.wait(timeout)

    def close(self) -> None:
        """The thread ends after the round it runs, if any."""
        self._closed = True
        self._go.set()

    def _run(self) -> None:
        while True:
            self._go.wait()
            self._go.clear()
            if self._closed:
                return
            try:
                self._round()
            finally:
                self._idle.set()


class FlowsFailed(OperationalError):
    """Flows failed for good (all of them, or some before a stop was asked): the process exits non-zero."""


class Replicator:
    """All flows of one mirrorspark process."""

    def __init__(self, config: MirrorConfig, state_dir: Path, *, fresh_copy: bool = False,
                 promotions: Callable[[str], dict[str, Any] | None] | None = None) -> None:
        """``promotions``: a flow's cutover under way (``mirrorspark promote``'s journals), shown by REST."""
        self.config = config
        self.promotions = promotions
        self.state_dir = state_dir
        self.fresh_copy = fresh_copy  # a flow without state may copy again next to its remote topics
        use_state_dir(state_dir)  # converted key material under <state-dir>/private/, not /tmp
        self.heartbeats: list[HeartbeatEmitter] = []
        self.clusters = Clusters()
        self.spark = None
        self._stop = threading.Event()
        self._stopping = "the flows' steering loop"  # the stop's current step, named if it overruns
        self.deadline = StopDeadline(seconds=config.driver.shutdown_timeout, step=lambda: self._stopping)
        self.scheduler = Scheduler()
        self.metrics = MirrorMetrics()
        self.rest: RestServer | None = None
        self.location = StateLocation.parse(config.driver.state_location, state_dir)
        self.state: StateFiles | None = None
        self.ship_files = False  # executors in other JVMs: client files shipped, executors checked
        self.shipped: list[Path] = []
        self._policies: dict[str, ReplicationPolicy] = {}
        # Every enabled flow by name, written here or by another instance; each owns its parts.
        self.flows: dict[str, Flow] = {}
        self._steering: dict[str, SteeringLane] = {}  # each flow's steering rounds (see ``steer``)
        self._steering_errors: dict[str, BaseException] = {}

    def writing(self) -> list[Flow]:
        """The flows this process writes now, in the configuration's order."""
        return [flow for flow in self.flows.values() if flow.parts is not None]

    def prepare(self) -> None:
        """Everything that can fail on bad input, done before any data moves, then the control plane
        and Spark: Spark first when the master is a cluster (its executors are checked before the
        target is touched) or the state location is a URI (read through the driver JVM); otherwise
        both at once."""
        self._check()
        if not self.config.enabled_flows:  # heartbeats only, as MM2 runs a file with no flow enabled
            log.warning("no flow is enabled: this process emits heartbeats only (%s), as MM2 does with such a file",
                        ", ".join(f.name for f in heartbeat_flows(self.config)))
            self._open()
            return
        if self._spark_first():
            self._start_spark()
            self._open()
        else:
            self._open_while_spark_starts()

    def _check(self) -> None:
        """What the file alone decides (as ``validate``), before a cluster or a JVM is touched: bad input
        fails here, before any data moves."""
        preflight(self.config)  # what validate checks too: nothing below may refuse the file for itself
        flows = self.config.enabled_flows
        # Custom policies are imported now (never by validate), before any cluster is touched.
        for flow in [*flows, *heartbeat_flows(self.config)]:
            self._policies.setdefault(flow.name, policy_for_flow(flow.settings, flow.source.alias,
                                                                 flow.where(POLICY_KEY)))
        for cycle in custom_policy_cycles(flows):
            for flow in cycle:
                if flow.name in self._policies and policy_kind(flow) == "custom":
                    check_cycle_policy(self._policies[flow.name], flow_name=flow.name, source_alias=flow.source.alias,
                                       cycle=", ".join(f.name for f in cycle), where=flow.where(POLICY_KEY))
        for flow in flows:
            chosen, why = flow.auto_choice
            if chosen:
                log.info("flow %s: %s = auto: %s (%s)", flow.name, flow.where("mirrorspark.trigger"),
                         "real-time mode" if chosen == "realtime" else "micro-batches", why)
        master = self.config.spark.get("spark.master", SPARK_DEFAULTS["spark.master"])
        self.ship_files = not is_local(master)
        if self.ship_files:
            check_master(master)
            self.shipped = files_to_ship(flows)

    def _spark_first(self) -> bool:
        """Spark must run before the state is opened (a URI is read through the JVM) or the target is
        touched (a cluster's executors are checked first)."""
        return self.location.needs_spark or self.ship_files

    def _open(self) -> None:
        """The control plane's part: state, leases, remote topics, offsets, heartbeats, REST."""
        flows = self.config.enabled_flows
        self.state = self.location.open(self.spark)
        slots = SlotBook(realtime_flows=sum(f.options.realtime for f in flows),
                         microbatch_flows=sum(not f.options.realtime for f in flows))
        shared = Shared(clusters=self.clusters, state=self.state, scheduler=self.scheduler, metrics=self.metrics,
                        remote_names=RemoteNames(), ship_files=self.ship_files,
                        lag_interval=self.config.driver.lag_interval, slots=slots, fresh_copy=self.fresh_copy)
        instance = instance_id(self.state)
        # Heartbeats topics first: a flow then creates their remote topics with its others. Created
        # later, one waited ~10 s behind a broker still creating thousands of remote partitions, and
        # held back the flow's start (beats begin with the scheduler, once the flows started).
        restart = any(not has_no_state(self.state.child(f.source.alias).child(f.target.alias)) for f in flows)
        self.heartbeats = assemble_heartbeats(self.config, self._policies, shared, self._writes, restart)
        for config in flows:
            self.flows[config.name] = Flow(context=FlowContext(config=config, policy=self._policies[config.name],
                                                               shared=shared, instance=instance))
        _warn_reverse_elsewhere(flows)
        for flow in self.flows.values():
            flow.join()
        for flow in self.flows.values():
            flow.wait(limit=flow.config.options.lease_timeout + 5, alone=ALONE_WAIT)
            if flow.may_write():
                self._take_at_start(flow)
            elif flow.unreached:  # restarted during the target's outage: taken once the target answers
                continue
            else:
                flow.publish_standby()
                log.warning("flow %s: standby: another instance writes it (lease group %s on cluster %r); this one "
                            "takes over when that one stops or stops answering", flow.name,
                            flow.lease.group if flow.lease else "", flow.config.target.alias)
        self._start_rest()

    def _take_at_start(self, flow: Flow) -> None:
        """Assemble a flow at start. A cluster out of reach at a first start is most likely a wrong
        address: refused, the process exits. A flow that has copied before (its state says where it
        stopped) is being restarted during an outage: it waits, ``degraded``, and is retried with the
        takeovers' backoff, as MM2's tasks retry until the cluster answers; the other flows start."""
        try:
            flow.assemble()
            self._link_reverse()
        except StateLost as exc:
            # Restarted holding the lease of a flow another instance wrote last: that one may resume it.
            # Alone in the lease group, nobody can: bad input, the process exits (restore the state).
            if not flow.another_member():
                raise
            flow.leave()
            flow.take_failed(exc)
            flow.hand_over()
            log.warning("flow %s: cannot resume here without state; handed to another instance of lease group %s",
                        flow.name, flow.lease.group if flow.lease else "")
        except ConfigError:
            raise
        except Exception as exc:
            if not (retriable(f"{type(exc).__name__}: {exc}") and flow.ran_before()):
                raise
            flow.take_failed(exc)
            log.warning("flow %s: it has copied before, so this process stays up and starts it when the cluster "
                        "answers (a restart during an outage, not a wrong address): %s", flow.name,
                        first_line(exc))

    def _writes(self, flow_name: str) -> bool:
        """This process writes the flow of that pair (or runs no flow of it: heartbeats only)."""
        flow = self.flows.get(flow_name)
        return flow is None or flow.writes()

    def _link_reverse(self) -> None:
        """A flow's offsets learn the reverse flow's, when this process writes both."""
        by_pair = {}
        for flow in list(self.flows.values()):  # another flow's steering may change its parts meanwhile
            parts = flow.parts
            if parts is not None:
                by_pair[(flow.config.source.alias, flow.config.target.alias)] = parts.offsets
        for (source, target), offsets in by_pair.items():
            if (target, source) in by_pair:
                offsets.link_reverse(by_pair[(target, source)])

    def steer(self) -> None:
        """Each flow follows its lease (stops writing when lost, is taken when given, is handed to a
        standby when it failed here) and its query is supervised, each flow in a thread of its own: a
        takeover that waits minutes on its clusters (a record-by-record comparison, a cluster that does
        not answer) held every other flow's supervision with it, a failed query unrestarted for 7.5
        minutes in the fifth soak hour. A round still running is not started again; what a round raised
        (bad input) is raised here, once it ends."""
        started = []
        for flow in self.flows.values():
            lane = self._steering.get(flow.name)
            if lane is None:
                lane = self._steering[flow.name] = SteeringLane(flow.name, functools.partial(self._steer_one, flow))
            elif lane.busy():
                continue
            self._raise_steering_error(flow.name)
            lane.begin()
            started.append(lane)
        until = time.monotonic() + STEER_WAIT_S
        for lane in started:
            lane.wait(max(0.0, until - time.monotonic()))
        for name, lane in self._steering.items():
            if not lane.busy():
                self._raise_steering_error(name)

    def _steer_one(self, flow: Flow) -> None:
        try:
            flow.steer(self.spark, assembled=self._link_reverse)
            flow.poll(self.spark)
        except BaseException as exc:  # noqa: BLE001 - raised in the steering loop's thread
            self._steering_errors[flow.name] = exc

    def _raise_steering_error(self, name: str) -> None:
        error = self._steering_errors.pop(name, None)
        if error is not None:
            raise error

    def _start_rest(self) -> None:
        settings = RestSettings.from_config(self.config.top_level)
        if not settings.enabled:
            return
        self.rest = RestServer(ReplicatorController(self, promotions=self.promotions), self.metrics.registry, settings,
                               self.state_dir)
        self.rest.start()

    def cluster_conf(self, alias: str) -> dict[str, str] | None:
        """librdkafka settings of a cluster this process talks to."""
        return self.clusters.conf(alias)

    def launch(self) -> None:
        """``prepare`` then ``start``; when either fails, what they began is undone before the error
        goes up: the REST server and its files, queries already running, offset-sync producers
        (flushed), Spark."""
        try:
            self.prepare()
            self.start()
        except BaseException:
            try:
                self.stop()
            except Exception as exc:  # noqa: BLE001 - the first error is the one to report
                log.warning("cleaning up after a failed start: %s", exc)
            raise

    def _open_while_spark_starts(self) -> None:
        """The control plane's part in a thread while this one starts the Spark JVM: the first waits on
        the brokers (remote topics, leases, offsets), the second on the JVM, 5 to 8 s each at thousands
        of partitions, which one after the other made the first copy wait for both."""
        failed: list[BaseException] = []

        def open_() -> None:
            try:
                self._open()
            except BaseException as exc:  # noqa: BLE001 - raised again in the launching thread
                failed.append(exc)

        import_before_threads()  # both threads import py4j and pyspark (the clients' JVM there, Spark's here)
        opening = threading.Thread(target=open_, name="mirrorspark-prepare", daemon=True)
        opening.start()
        try:
            self._start_spark()
        except BaseException:
            self.clusters.use_jvm(None)  # a group request of the opening thread fails now, not after a wait
            raise
        finally:
            opening.join()
        if failed:
            raise failed[0]

    def start(self) -> None:
        if self.spark is None and self.config.enabled_flows:
            self._start_spark()
        for flow in self.flows.values():
            flow.bind_fence(self.spark)  # a standby's too: its fence is ready when it takes over
            if flow.parts is not None:
                flow.start(self.spark)
                if not flow.failed:
                    log.info("flow %s started: topics matching %s", flow.name, flow.parts.query.subscribe_pattern())
        self.scheduler.start()

    def _start_spark(self) -> None:
        """The SparkSession; on a cluster, executors are checked before anything is written."""
        spark = dict(self.config.spark)
        # Custom transformations and the client classes the clusters' keys name (a SASL callback
        # handler such as MSK IAM's) run in Spark's JVMs too.
        jars = [*transform_jars(self.config.enabled_flows)]
        jars += [jar for jar in client_class_jars(clusters_used(self.config)) if jar not in jars]
        if jars:
            spark["spark.jars"] = ",".join([*filter(None, [spark.get("spark.jars", "").strip()]), *map(str, jars)])
        self.spark = session = build_session(spark, self.shipped)
        jvm = SparkJvm(session=session)
        self.clusters.use_jvm(jvm)
        self.metrics.jvm.attach(jvm.jvm_metrics, self.config.driver.lag_interval)
        if self.ship_files:
            executors = check_executors(self.spark, self.shipped)
            log.info("Spark executors ready: %s (master %s)", ", ".join(executors),
                     self.config.spark.get("spark.master"))

    def request_stop(self, *_: object) -> None:
        """A stop signal: the steering loop ends and the stop runs, bounded by the deadline. A second
        signal exits at once."""
        if self._stop.is_set():
            self.deadline.expire_now("a second stop signal came")
            return
        self._stop.set()
        self.deadline.arm()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGINT, self.request_stop)
        signal.signal(signal.SIGTERM, self.request_stop)

    def run(self, progress: Callable[[str], None] | None = None, progress_interval: float = 10.0,
            until: Callable[[], bool] | None = None) -> None:
        """Block until stop is requested (signal, ``until()`` true) or every flow failed; then stop all."""
        last_report = time.monotonic()
        try:
            while not self._stop.is_set():
                self.steer()
                every_failed = bool(self.flows) and all(flow.failed for flow in self.flows.values())  # not a standby
                if every_failed or (until is not None and until()):
                    break
                if progress is not None and time.monotonic() - last_report >= progress_interval:
                    last_report = time.monotonic()
                    for line in self.progress_lines():
                        progress(line)
                self._stop.wait(0.5)
        finally:
            self.stop()
        failed = [flow for flow in self.writing() if flow.failed]
        if failed:  # a stop asked while some flows had failed is no clean exit either
            written = len(self.writing())
            which = "every flow" if len(failed) == written else f"{len(failed)} of {written} flows"
            raise FlowsFailed(f"{which} failed: " + "; ".join(
                f"{flow.name}: {flow.parts.supervisor.last_error}" for flow in failed if flow.parts)) from None

    def progress_lines(self) -> list[str]:
        """One line per flow: records copied since start and the rate of the latest batches, or its role."""
        return [flow.progress_line() for flow in self.flows.values()]

    def stop(self) -> None:
        """Every flow's query first, then their last checkpoint rounds, offsets and leases, then Spark;
        within the deadline."""
        self.deadline.arm()
        try:
            self._stopping = "the scheduled tasks (heartbeats, checkpoints, syncs)"
            self.scheduler.stop()
            for lane in self._steering.values():
                lane.close()
            if self.rest is not None:
                self._stopping = "the REST server"
                self.rest.stop()
                self.rest = None
            for flow in self.flows.values():
                self._stopping = f"the running batch of flow {flow.name}"
                flow.stop_writing()
            self._stopping = "the last checkpoint round of the flows"
            rounds = [thread for flow in self.flows.values() if (thread := flow.last_checkpoints()) is not None]
            ends = time.monotonic() + LAST_CHECKPOINTS_S
            for thread in rounds:
                thread.join(max(0.0, ends - time.monotonic()))
            for flow in self.flows.values():
                self._stopping = f"the offset syncs and lease group of flow {flow.name}"
                flow.close()
            self.metrics.jvm.detach()
            self.clusters.close()
            if self.spark is not None:
                self._stopping = "Spark"
                self.spark.stop()
                self.spark = None
        finally:
            self.deadline.disarm()


def _warn_reverse_elsewhere(flows: list[FlowConfig]) -> None:
    """Checkpoints on a topic both clusters write need the reverse flow's runs (ADR 0014)."""
    names = {f.name for f in flows}
    for flow in flows:
        reverse = f"{flow.target.alias}->{flow.source.alias}"
        if flow.same_names and flow.options.emit_checkpoints and reverse not in names:
            log.warning("flow %s runs active/active on the same topic names, but flow %s does not run in this process "
                        "(--clusters): its checkpoints follow the records of %s only, so a failed-over group could "
                        "skip records of %s's own it had not read; run both flows in one process for checkpoints "
                        "that skip nothing", flow.name, reverse, flow.source.alias, flow.target.alias)
