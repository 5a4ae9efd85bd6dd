"""The process: every enabled flow of a configuration in one SparkSession, until asked to stop.

This module owns the lifecycle (prepare, start, run, stop, signals, progress); a flow's wiring is
``flow_assembly.py`` and cluster access ``control/clusters.py``.
"""
from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.control.client_settings import use_state_dir
from mirrorspark.control.clusters import Clusters
from mirrorspark.control.heartbeats import HeartbeatEmitter
from mirrorspark.control.remote_topics import RemoteNames
from mirrorspark.control.scheduler import Scheduler
from mirrorspark.coordination.claims import instance_id
from mirrorspark.errors import ConfigError, OperationalError
from mirrorspark.metrics.lag import LagProbe
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.offsets.flow_offsets import FlowOffsets
from mirrorspark.pipeline.executors import check_executors, files_to_ship, is_local
from mirrorspark.pipeline.flow_assembly import AssembledFlow, Shared, assemble_heartbeats
from mirrorspark.pipeline.flow_query import FlowQuery
from mirrorspark.pipeline.flow_seat import FlowSeat, Standby
from mirrorspark.pipeline.preflight import heartbeat_flows, preflight
from mirrorspark.pipeline.rest_controller import ReplicatorController
from mirrorspark.pipeline.retriable import retriable
from mirrorspark.pipeline.spark_session import SPARK_DEFAULTS, build_session, check_master
from mirrorspark.pipeline.supervision import FlowSupervisor
from mirrorspark.policy import ReplicationPolicy, policy_for_flow
from mirrorspark.policy.loading import POLICY_KEY
from mirrorspark.rest.server import RestServer, RestSettings
from mirrorspark.state import StateFiles, StateLocation
from mirrorspark.takeover.lost_state import StateLost, has_no_state

log = logging.getLogger(__name__)


class FlowsFailed(OperationalError):
    """Flows failed for good (all of them, or some before a stop was asked): the process exits non-zero."""


class Replicator:
    """All flows of one mirrorspark process."""

    def __init__(self, config: MirrorConfig, state_dir: Path, fresh_copy: bool = False) -> None:
        self.config = config
        self.state_dir = state_dir
        self.fresh_copy = fresh_copy  # a flow without state may copy again next to its remote topics
        use_state_dir(state_dir)  # converted key material under <state-dir>/private/, not /tmp
        self.heartbeats: list[HeartbeatEmitter] = []
        self.clusters = Clusters()
        self.spark = None
        self._stop = threading.Event()
        self.scheduler = Scheduler()
        self.metrics = MirrorMetrics()
        self.rest: RestServer | None = None
        self.location = StateLocation.parse(config.driver.state_location, state_dir)
        self.state: StateFiles | None = None
        self.ship_files = False  # executors in other JVMs: client files shipped, executors checked
        self.shipped: list[Path] = []
        self._policies: dict[str, ReplicationPolicy] = {}
        # Every enabled flow, written here or by another instance. A seat owns its flow's parts while
        # this process writes it (``seat.assembled``); the views below are read from the seats, never
        # kept beside them, so a flow taken or left cannot leave a part behind.
        self.seats: dict[str, FlowSeat] = {}

    @property
    def running(self) -> list[AssembledFlow]:
        """The flows this process writes now, in the configuration's order."""
        return [seat.assembled for seat in self.seats.values() if seat.assembled is not None]

    @property
    def flows(self) -> list[FlowQuery]:
        return [flow.query for flow in self.running]

    @property
    def supervisors(self) -> dict[str, FlowSupervisor]:
        return {flow.query.flow.name: flow.supervisor for flow in self.running}

    @property
    def offsets(self) -> list[FlowOffsets]:
        return [flow.offsets for flow in self.running]

    @property
    def lag_probes(self) -> dict[str, LagProbe]:
        return {flow.query.flow.name: flow.probe for flow in self.running}

    def prepare(self) -> None:
        """Everything that can fail on bad input, done before any data moves, then the control plane
        and Spark: Spark first when the master is a cluster (its executors are checked before the
        target is touched) or the state location is a URI (read through the driver JVM); otherwise
        both at once."""
        self._check()
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
        shared = Shared(self.clusters, self.state, self.scheduler, self.metrics, RemoteNames(), self.ship_files,
                        self.config.driver.lag_interval, self.fresh_copy)
        instance = instance_id(self.state)
        # Heartbeats topics first: a flow then creates their remote topics with its others. Created
        # later, one waited ~10 s behind a broker still creating thousands of remote partitions, and
        # held back the flow's start (beats begin with the scheduler, once the flows started).
        restart = any(not has_no_state(self.state.child(f.source.alias).child(f.target.alias)) for f in flows)
        self.heartbeats = assemble_heartbeats(self.config, self._policies, shared, self._writes, restart)
        for flow in flows:
            self.seats[flow.name] = FlowSeat(flow, self._policies[flow.name], shared, instance)
        _warn_reverse_elsewhere(flows)
        for seat in self.seats.values():
            seat.join()
        for seat in self.seats.values():
            seat.wait(limit=seat.flow.options.lease_timeout + 5)
            if seat.may_write():
                self._take_at_start(seat)
            else:
                seat.publish_standby()
                log.warning("flow %s: standby: another instance writes it (lease group %s on cluster %r); this one "
                            "takes over when that one stops or stops answering", seat.flow.name,
                            seat.lease.group if seat.lease else "", seat.flow.target.alias)
        self._start_rest()

    def _take_at_start(self, seat: FlowSeat) -> None:
        """Assemble a flow at start. A cluster out of reach at a first start is most likely a wrong
        address: refused, the process exits. A flow that has copied before (its state says where it
        stopped) is being restarted during an outage: it waits, ``degraded``, and is retried with the
        takeovers' backoff, as MM2's tasks retry until the cluster answers; the other flows start."""
        try:
            self._take(seat)
        except ConfigError:
            raise
        except Exception as exc:
            if not (retriable(f"{type(exc).__name__}: {exc}") and seat.ran_before()):
                raise
            seat.take_failed(exc)
            log.warning("flow %s: it has copied before, so this process stays up and starts it when the cluster "
                        "answers (a restart during an outage, not a wrong address): %s", seat.flow.name,
                        str(exc).splitlines()[0][:300])

    def _writes(self, flow_name: str) -> bool:
        """This process writes the flow of that pair (or runs no flow of it: heartbeats only)."""
        seat = self.seats.get(flow_name)
        return seat is None or (seat.assembled is not None and seat.may_write())

    def _take(self, seat: FlowSeat) -> AssembledFlow:
        """Assemble a flow this process now writes; its offsets learn the reverse flow's."""
        assembled = seat.activate()
        self._link_reverse()
        return assembled

    def _link_reverse(self) -> None:
        by_pair = {(o.flow.source.alias, o.flow.target.alias): o for o in self.offsets}
        for (source, target), offsets in by_pair.items():
            if (target, source) in by_pair:
                offsets.link_reverse(by_pair[(target, source)])


    @staticmethod
    def _leave(seat: FlowSeat) -> None:
        seat.deactivate()

    def steer(self) -> None:
        """Follow each flow's lease: stop writing a flow this process lost, take one it was given, hand
        a flow that failed here to a standby."""
        for seat in self.seats.values():
            supervisor = seat.assembled.supervisor if seat.assembled is not None else None
            if seat.rejoin_due():
                seat.rejoin()
            elif supervisor is not None and supervisor.failed and supervisor.query.loss_stop is None \
                    and seat.another_member():  # data.loss = fail: the gap needs a person, not another instance
                log.warning("flow %s: failed here (%s); another instance waits in lease group %s: the flow is handed "
                            "to it, this one joins again as a standby later", seat.flow.name, supervisor.last_error,
                            seat.lease.group if seat.lease else "")
                self._leave(seat)
                seat.hand_over()
            elif seat.should_leave():
                log.warning("flow %s: fenced: this process no longer holds the flow's lease (another instance took "
                            "it over, or this one was stopped or cut off too long); it stops writing and waits as a "
                            "standby", seat.flow.name)
                self._leave(seat)
            elif seat.should_take() and self.spark is not None:
                self._take_over(seat)

    def _take_over(self, seat: FlowSeat) -> None:
        """A standby given the flow: assemble and start it. Bad input stops the process as at start; a
        failure that may pass (a cluster unreachable), or a state this instance cannot resume from
        (``StateLost``: the other flows must not stop for it), is undone and retried with backoff."""
        waited = time.time() - seat.standby_since
        try:
            assembled = self._take(seat)
            self._bind_fence(seat)
            assembled.query.start(self.spark)
        except StateLost as exc:  # this flow cannot resume here; the process's other flows go on
            self._leave(seat)
            seat.take_failed(exc)
            if seat.another_member():  # another instance may hold the state this one lacks
                log.warning("flow %s: cannot resume here without state; handed to another instance of lease group "
                            "%s", seat.flow.name, seat.lease.group if seat.lease else "")
                seat.hand_over()
            return
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - any other failure of the takeover is retried
            self._leave(seat)
            seat.take_failed(exc)
            return
        if assembled.query.metrics is not None:
            assembled.query.metrics.set_running(True)
        log.warning("flow %s: took over after %.1f s as a standby: this process writes it now", seat.flow.name, waited)

    def standbys(self) -> list[Standby]:
        return [s for seat in self.seats.values() if (s := seat.standby()) is not None]

    def _bind_fence(self, seat: FlowSeat) -> None:
        if seat.lease is not None and self.spark is not None:
            seat.lease.bind_jvm(self.spark._jvm.io.mirrorspark.sink.Fences)

    def _start_rest(self) -> None:
        settings = RestSettings.from_config(self.config.top_level)
        if not settings.enabled:
            return
        self.rest = RestServer(ReplicatorController(self), self.metrics.registry, settings, self.state_dir)
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
        of partitions, which one after the other made the first copy wait for both. The JVM starts
        from this thread, which alone can keep SIGTERM from it (``spark_session``)."""
        failed: list[BaseException] = []

        def open_() -> None:
            try:
                self._open()
            except BaseException as exc:  # noqa: BLE001 - raised again in the launching thread
                failed.append(exc)

        opening = threading.Thread(target=open_, name="mirrorspark-prepare", daemon=True)
        opening.start()
        try:
            self._start_spark()
        finally:
            opening.join()
        if failed:
            raise failed[0]

    def start(self) -> None:
        if self.spark is None:
            self._start_spark()
        for seat in self.seats.values():
            self._bind_fence(seat)
        for flow in self.flows:
            flow.start(self.spark)
            if flow.metrics is not None:
                flow.metrics.set_running(True)
            log.info("flow %s started: topics matching %s", flow.flow.name, flow.subscribe_pattern())
        self.scheduler.start()

    def _start_spark(self) -> None:
        """The SparkSession; on a cluster, executors are checked before anything is written."""
        self.spark = build_session(self.config.spark, self.shipped)
        if self.ship_files:
            executors = check_executors(self.spark, self.shipped)
            log.info("Spark executors ready: %s (master %s)", ", ".join(executors),
                     self.config.spark.get("spark.master"))

    def request_stop(self, *_: object) -> None:
        self._stop.set()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGINT, self.request_stop)
        signal.signal(signal.SIGTERM, self.request_stop)

    def run(self, progress: Callable[[str], None] | None = None, progress_interval: float = 10.0,
            until: Callable[[], bool] | None = None) -> None:
        """Block until stop is requested (signal, ``until()`` true) or a query fails; then stop all."""
        last_report = time.monotonic()
        try:
            while not self._stop.is_set():
                self.steer()
                for supervisor in list(self.supervisors.values()):
                    supervisor.poll(self.spark)
                standing_by = any(seat.assembled is None for seat in self.seats.values())
                if (not standing_by and all(s.failed for s in self.supervisors.values())) \
                        or (until is not None and until()):
                    break
                if progress is not None and time.monotonic() - last_report >= progress_interval:
                    last_report = time.monotonic()
                    for line in self.progress_lines():
                        progress(line)
                self._stop.wait(0.5)
        finally:
            self.stop()
        failed = [s for s in self.supervisors.values() if s.failed]
        if failed:  # a stop asked while some flows had failed is no clean exit either
            which = "every flow" if len(failed) == len(self.supervisors) else \
                f"{len(failed)} of {len(self.supervisors)} flows"
            raise FlowsFailed(f"{which} failed: " + "; ".join(
                f"{s.query.flow.name}: {s.last_error}" for s in failed)) from None

    def progress_lines(self) -> list[str]:
        """One line per flow: records copied since start and the rate of the latest batches."""
        lines = [f"{s.flow.name}: standby (waiting for the flow's lease: another instance writes it, or the target's "
                 "group coordinator is out of reach)" for s in self.standbys()]
        for flow in self.flows:
            flow.collect_progress()
            supervisor = self.supervisors.get(flow.flow.name)
            if supervisor is not None and supervisor.state() in ("failed", "restarting", "degraded"):
                lines.append(f"{flow.flow.name}: {supervisor.state()}: {supervisor.reason()}")
                continue
            if flow.paused:
                lines.append(f"{flow.flow.name}: paused")
                continue
            if flow.last_batch_id is None:
                lines.append(f"{flow.flow.name}: waiting for the first batch")
                continue
            lines.append(
                f"{flow.flow.name}: {flow.records_read} records replicated in {flow.data_batches} "
                f"batches since start, latest {flow.last_rate:.0f} records/s"
            )
        return lines

    def stop(self) -> None:
        self.scheduler.stop()
        if self.rest is not None:
            self.rest.stop()
            self.rest = None
        for probe in self.lag_probes.values():
            probe.close()
        for flow in self.flows:
            try:
                flow.stop()
            except Exception as exc:  # noqa: BLE001 - a query that already failed may refuse to stop
                log.debug("stopping flow %s: %s", flow.flow.name, exc)
        for offsets in self.offsets:
            offsets.close()
        for seat in self.seats.values():
            seat.close()  # leaves the lease groups: a standby takes over at once
        if self.spark is not None:
            self.spark.stop()
            self.spark = None


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
