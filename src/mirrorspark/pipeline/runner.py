"""Run every enabled flow of a configuration in one SparkSession until asked to stop."""
from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from mirrorspark.config.errors import ConfigError
from mirrorspark.config.model import ClusterConfig, FlowConfig, MirrorConfig, default
from mirrorspark.control.acl_sync import AclSync
from mirrorspark.control.admin import admin_client, broker_count, partition_offsets
from mirrorspark.control.client_settings import librdkafka_admin, use_state_dir
from mirrorspark.control.heartbeats import HeartbeatEmitter, emits_heartbeats
from mirrorspark.control.remote_topics import RemoteNames, RemoteTopics
from mirrorspark.control.scheduler import HEARTBEATS, Scheduler
from mirrorspark.control.topic_configs import TopicConfigs
from mirrorspark.integrity.batch_guard import BatchGuard
from mirrorspark.integrity.loss import LossLog
from mirrorspark.integrity.spark_offsets import SparkOffsetLog
from mirrorspark.integrity.topic_identity import TopicIdentity
from mirrorspark.integrity.write_marks import WriteMarks
from mirrorspark.metrics.flow_metrics import FlowMetrics
from mirrorspark.metrics.lag import LagProbe
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.offsets.flow_offsets import FlowOffsets
from mirrorspark.pipeline.flow_query import FlowQuery
from mirrorspark.pipeline.preflight import heartbeat_flows, preflight
from mirrorspark.pipeline.executors import check_executors, files_to_ship, is_local
from mirrorspark.pipeline.spark_session import SPARK_DEFAULTS, build_session, check_master
from mirrorspark.pipeline.state_identity import check_state_identity
from mirrorspark.pipeline.supervision import FlowSupervisor
from mirrorspark.takeover.plan import load_positions
from mirrorspark.policy.topic_selection import TopicSelection
from mirrorspark.policy import ReplicationPolicy, policy_for_flow
from mirrorspark.policy.loading import POLICY_KEY
from mirrorspark.rest.replicator_controller import ReplicatorController
from mirrorspark.rest.server import RestServer, RestSettings
from mirrorspark.state import StateFiles, StateLocation
from mirrorspark.state.location import KEY as STATE_KEY

log = logging.getLogger(__name__)


class ClusterUnreachable(RuntimeError):
    """A configured cluster did not answer; the message names the alias and the key to check."""


def reach(cluster: ClusterConfig, conf: dict[str, str], timeout: float = 15.0):
    """An admin client for ``cluster`` (librdkafka settings ``conf``) that has answered a metadata request."""
    admin = admin_client(conf)
    try:
        admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ClusterUnreachable(
            f"cannot reach cluster {cluster.alias!r} at {cluster.bootstrap_servers} "
            f"(check {cluster.alias}.bootstrap.servers, its security settings ({cluster.alias}.security.protocol, "
            f"{cluster.alias}.ssl.*, {cluster.alias}.sasl.*) and that the cluster is up): {exc.args[0].str()}"
        ) from None
    return admin


class Replicator:
    """All flows of one mirrorspark process."""

    def __init__(self, config: MirrorConfig, state_dir: Path) -> None:
        self.config = config
        self.state_dir = state_dir
        use_state_dir(state_dir)  # converted key material under <state-dir>/private/, not /tmp
        self.flows: list[FlowQuery] = []
        self.supervisors: dict[str, FlowSupervisor] = {}
        self.offsets: list[FlowOffsets] = []
        self.heartbeats: list[HeartbeatEmitter] = []
        self._clusters: dict[str, tuple[AdminClient, dict[str, str]]] = {}
        self.spark = None
        self._stop = threading.Event()
        self.scheduler = Scheduler()
        self.metrics = MirrorMetrics()
        self.lag_probes: dict[str, LagProbe] = {}
        self.rest: RestServer | None = None
        self.location = StateLocation.parse(config.top_level.get(STATE_KEY), state_dir)
        self.state: StateFiles | None = None
        self.ship_files = False  # executors in other JVMs: client files shipped, executors checked
        self.shipped: list[Path] = []
        self.remote_names = RemoteNames()  # one source per remote topic, across every flow of this process
        self._policies: dict[str, ReplicationPolicy] = {}

    def prepare(self) -> None:
        """Everything that can fail on bad input, done before any data moves. Spark starts here when
        the master is a cluster (its executors are checked before the target is touched) or the
        state location is a URI (read through the driver JVM); otherwise in ``start``."""
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
        if self.location.needs_spark or self.ship_files:
            self._start_spark()
        self.state = self.location.open(self.spark)
        for flow in flows:
            self._prepare_flow(flow)
        by_pair = {(o.flow.source.alias, o.flow.target.alias): o for o in self.offsets}
        for (source, target), offsets in by_pair.items():
            if (target, source) in by_pair:
                offsets.link_reverse(by_pair[(target, source)])
        self._prepare_heartbeats()
        self._start_rest()

    def _start_rest(self) -> None:
        settings = RestSettings.from_config(self.config.top_level)
        if not settings.enabled:
            return
        self.rest = RestServer(ReplicatorController(self), self.metrics.registry, settings, self.state_dir)
        self.rest.start()

    def cluster_conf(self, alias: str) -> dict[str, str] | None:
        """librdkafka settings of a cluster this process talks to."""
        found = self._clusters.get(alias)
        return dict(found[1]) if found is not None else None

    def _cluster(self, cluster: ClusterConfig) -> tuple[AdminClient, dict[str, str]]:
        """An answering admin client and the librdkafka settings of ``cluster`` (one per alias)."""
        if cluster.alias not in self._clusters:
            java = {**cluster.connection(), **cluster.role_overrides("admin")}
            conf = librdkafka_admin(java, f"{cluster.alias}.")
            self._clusters[cluster.alias] = (reach(cluster, conf), conf)
        return self._clusters[cluster.alias]

    def _prepare_flow(self, flow: FlowConfig) -> None:
        policy = self._policies[flow.name]
        selection = TopicSelection(flow, policy)
        (source, source_conf), (target, target_conf) = self._cluster(flow.source), self._cluster(flow.target)
        configs = TopicConfigs(flow, source, target)
        refresh_interval = flow.interval("refresh.topics")
        remote = RemoteTopics(flow, selection, source, target, refresh_interval, configs, self.remote_names)
        remote.check_replication_factor()
        assert self.state is not None
        folder = self.state.child(flow.source.alias).child(flow.target.alias)
        check_state_identity(folder, flow.name, flow.source.alias, flow.target.alias, source, target)
        offsets = FlowOffsets(flow, selection, source, target, source_conf, target_conf, folder)
        offsets.check_replication_factors()
        offsets.source_of = remote.source_of
        if flow.flag("refresh.topics.enabled"):
            remote.refresh(force_target_check=True)
        else:
            remote.freeze_topics()
        checkpoint = folder.child("checkpoint")
        marks, loss = WriteMarks(folder), LossLog(folder, flow.name)
        identity = TopicIdentity(folder, flow.name, source, target, loss, marks, SparkOffsetLog(checkpoint), offsets)
        supervisor: list[FlowSupervisor] = []  # filled below, once the query exists
        figures = FlowMetrics(self.metrics, flow.source.alias, flow.target.alias)

        def check_identity() -> dict[str, str]:
            """The identity check; returns the remote topics' ids it read (the checkpoint round uses them)."""
            if identity.check(remote.plan.remote, remote.plan.partitions) and supervisor:
                supervisor[0].restart_requested = "a source topic was re-created"
            return dict(identity.remote_ids)

        def refresh_topics() -> None:
            plan = remote.refresh(force_target_check=True)
            check_identity()
            figures.forget_topics(set(plan.remote.values()), set(plan.remote))
        identity.check(remote.plan.remote, remote.plan.partitions)  # before the query reads anything
        self.scheduler.every(f"flow {flow.name}: topic refresh", refresh_interval, refresh_topics,
                             initial_delay=refresh_interval)
        self.scheduler.every(f"flow {flow.name}: topic config sync",
                             flow.interval("sync.topic.configs"),
                             lambda: configs.sync(remote.plan.remote))
        acls = AclSync(flow.name, source, target)
        self.scheduler.every(f"flow {flow.name}: ACL sync",
                             flow.interval("sync.topic.acls"),
                             lambda: acls.sync(remote.plan.remote))
        if offsets.checkpoints is not None:
            offsets.checkpoints.metrics = self.metrics
        offsets.start()
        offsets.schedule(self.scheduler, check_identity)
        self.offsets.append(offsets)
        loss.listeners.append(lambda report: figures.records_lost(report.topic, report.partition, report.records))
        guard = BatchGuard(flow.name, marks, loss, lambda parts: partition_offsets(source, parts, earliest=True),
                           lambda parts: partition_offsets(target, parts), flow.fail_on_data_loss)

        def before_start() -> None:
            plan = remote.refresh(force_target_check=True)  # a remote topic deleted meanwhile is re-created
            identity.check(plan.remote, plan.partitions)  # ... and its offset mapping bound to the new one
            identity.apply_rewinds()
        query = FlowQuery(flow, selection, remote, checkpoint, guard,
                          offsets.on_written if offsets.enabled else None, figures, self.ship_files, before_start,
                          load_positions(folder))  # where MM2 stopped, after `migrate from-mm2 --execute`
        self.flows.append(query)
        supervisor.append(FlowSupervisor(query, loss, self.metrics))
        self.supervisors[flow.name] = supervisor[0]
        read_committed = flow.source_consumer().get("isolation.level", "").strip().lower() == "read_committed"
        probe = LagProbe(self.metrics, flow.name, flow.source.alias, flow.target.alias, source, source_conf,
                         read_committed, lambda: list(remote.plan.remote), query.committed_positions)
        self.lag_probes[flow.name] = probe

        def measure() -> None:
            probe.safe_run()
            figures.update_rates()
        lag_key = "mirrorspark.metrics.lag.interval.seconds"
        self.scheduler.every(f"flow {flow.name}: lag and rates",
                             float(self.config.top_level.get(lag_key, default(lag_key))), measure)

    def _prepare_heartbeats(self) -> None:
        """MM2's herder pairs: every pair with its flow or its heartbeats enabled beats into its target."""
        for flow in self.config.flows:
            if not (emits_heartbeats(flow) and flow.flag("emit.heartbeats.enabled")):
                continue
            if not (flow.source.settings.get("bootstrap.servers") and flow.target.settings.get("bootstrap.servers")):
                log.warning("pair %s: no heartbeats, a cluster of the pair has no bootstrap.servers", flow.name)
                continue
            target, target_conf = self._cluster(flow.target)
            rf_key = "heartbeats.topic.replication.factor"
            rf, brokers = int(flow.get(rf_key, default(rf_key)) or default(rf_key)), broker_count(target)
            if rf > brokers:
                raise ConfigError(f"{flow.where(rf_key)}={rf} but cluster {flow.target.alias!r} has only {brokers} "
                                  f"broker(s); set {flow.where(rf_key)} to at most {brokers}", flow.where(rf_key))
            emitter = HeartbeatEmitter(flow, self._policies[flow.name], target, target_conf, rf)
            emitter.start()
            self.heartbeats.append(emitter)
            self.scheduler.every(f"pair {flow.name}: heartbeats", flow.interval("emit.heartbeats"), emitter.beat,
                                 lane=HEARTBEATS)  # a thread of their own: slow admin tasks never delay them

    def start(self) -> None:
        if self.spark is None:
            self._start_spark()
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
                for supervisor in self.supervisors.values():
                    supervisor.poll(self.spark)
                if all(s.failed for s in self.supervisors.values()) or (until is not None and until()):
                    break
                if progress is not None and time.monotonic() - last_report >= progress_interval:
                    last_report = time.monotonic()
                    for line in self.progress_lines():
                        progress(line)
                self._stop.wait(0.5)
        finally:
            self.stop()
        failed = [s for s in self.supervisors.values() if s.failed]
        if failed and len(failed) == len(self.supervisors):
            raise RuntimeError("every flow failed: " + "; ".join(
                f"{s.query.flow.name}: {s.last_error}" for s in failed)) from None

    def progress_lines(self) -> list[str]:
        """One line per flow: records copied since start and the rate of the latest batches."""
        lines = []
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
            except Exception as exc:  # a query that already failed may refuse to stop
                log.debug("stopping flow %s: %s", flow.flow.name, exc)
        for offsets in self.offsets:
            offsets.close()
        if self.spark is not None:
            self.spark.stop()
            self.spark = None
