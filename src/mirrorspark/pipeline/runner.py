"""Run every enabled flow of a configuration in one SparkSession until asked to stop."""
from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import KafkaException

from mirrorspark.config.errors import ConfigError
from mirrorspark.config.model import ClusterConfig, FlowConfig, MirrorConfig
from mirrorspark.control.acl_sync import AclSync
from mirrorspark.control.admin import admin_client
from mirrorspark.control.client_settings import librdkafka_admin
from mirrorspark.control.remote_topics import RemoteTopics
from mirrorspark.control.scheduler import Scheduler
from mirrorspark.control.topic_configs import TopicConfigs
from mirrorspark.offsets.flow_offsets import FlowOffsets
from mirrorspark.pipeline.flow_query import FlowQuery
from mirrorspark.pipeline.spark_session import build_session
from mirrorspark.pipeline.topic_selection import TopicSelection
from mirrorspark.policy import policy_for_flow

log = logging.getLogger(__name__)


class ClusterUnreachable(RuntimeError):
    """A configured cluster did not answer; the message names the alias and the key to check."""


def reach(cluster: ClusterConfig, props: dict[str, str], timeout: float = 15.0):
    """An admin client for ``cluster`` that has answered a metadata request."""
    admin = admin_client(librdkafka_admin(props, f"{cluster.alias}."))
    try:
        admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ClusterUnreachable(
            f"cannot reach cluster {cluster.alias!r} at {cluster.bootstrap_servers} "
            f"(check {cluster.alias}.bootstrap.servers, its security settings ({cluster.alias}.security.protocol, "
            f"{cluster.alias}.ssl.*, {cluster.alias}.sasl.*) and that the cluster is up): {exc.args[0].str()}"
        ) from None
    return admin


def interval_seconds(flow: FlowConfig, prefix: str, default: str) -> float:
    """MM2's ``<prefix>.enabled`` / ``<prefix>.interval.seconds`` pair; disabled -> infinity."""
    if not flow.flag(f"{prefix}.enabled"):
        return float("inf")
    key = f"{prefix}.interval.seconds"
    raw = flow.get(key, default) or default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{flow.where(key)} must be a number, got {raw!r}", flow.where(key)) from None


def flow_dir(state_dir: Path, flow: FlowConfig) -> Path:
    return state_dir / "flows" / flow.source.alias / flow.target.alias


def checkpoint_dir(state_dir: Path, flow: FlowConfig) -> Path:
    return flow_dir(state_dir, flow) / "checkpoint"


class Replicator:
    """All flows of one mirrorspark process."""

    def __init__(self, config: MirrorConfig, state_dir: Path) -> None:
        self.config = config
        self.state_dir = state_dir
        self.flows: list[FlowQuery] = []
        self.offsets: list[FlowOffsets] = []
        self.spark = None
        self._stop = threading.Event()
        self.scheduler = Scheduler()

    def prepare(self) -> None:
        """Everything that can fail on bad input, done before Spark starts or any data moves."""
        flows = self.config.enabled_flows
        if not flows:
            raise ConfigError("No source->target replication flows: enable one with e.g. 'A->B.enabled = true'"
                              " (and check --clusters)", "enabled")
        master = self.config.spark.get("spark.master", "local[*]")
        syncing = [f.name for f in flows if f.flag("emit.offset-syncs.enabled")]
        if syncing and not master.startswith("local"):
            raise ConfigError(
                f"spark.master={master}: exact offset syncs are drained from the driver's JVM and need Spark's "
                f"local mode today (docs/adr/0002-offset-translation.md); use a local master or set "
                f"emit.offset-syncs.enabled = false for {', '.join(syncing)}", "spark.master")
        for flow in flows:
            policy = policy_for_flow(flow.settings, flow.source.alias)
            selection = TopicSelection(flow, policy)
            source_props, target_props = flow.admin("source"), flow.admin("target")
            source = reach(flow.source, source_props)
            target = reach(flow.target, target_props)
            configs = TopicConfigs(flow, source, target)
            remote = RemoteTopics(flow, selection, source, target,
                                  interval_seconds(flow, "refresh.topics", "600"), configs)
            remote.check_replication_factor()
            folder = flow_dir(self.state_dir, flow)
            folder.mkdir(parents=True, exist_ok=True)
            offsets = FlowOffsets(flow, selection, source, target,
                                  librdkafka_admin(source_props, f"{flow.source.alias}."),
                                  librdkafka_admin(target_props, f"{flow.target.alias}."), folder)
            offsets.check_replication_factors()
            offsets.source_of = remote.source_of
            if flow.flag("refresh.topics.enabled"):
                remote.refresh(force_target_check=True)
            else:
                remote.freeze_topics()
            refresh_interval = interval_seconds(flow, "refresh.topics", "600")
            self.scheduler.every(f"flow {flow.name}: topic refresh", refresh_interval,
                                 lambda r=remote: r.refresh(force_target_check=True), initial_delay=refresh_interval)
            self.scheduler.every(f"flow {flow.name}: topic config sync",
                                 interval_seconds(flow, "sync.topic.configs", "600"),
                                 lambda r=remote, c=configs: c.sync(r.plan.remote))
            acls = AclSync(flow.name, source, target)
            self.scheduler.every(f"flow {flow.name}: ACL sync", interval_seconds(flow, "sync.topic.acls", "600"),
                                 lambda r=remote, a=acls: a.sync(r.plan.remote))
            offsets.start()
            offsets.schedule(self.scheduler)
            self.offsets.append(offsets)
            self.flows.append(FlowQuery(flow, selection, remote, checkpoint_dir(self.state_dir, flow),
                                        offsets.on_written if offsets.enabled else None))

        by_pair = {(o.flow.source.alias, o.flow.target.alias): o for o in self.offsets}
        for (source, target), offsets in by_pair.items():
            if (target, source) in by_pair:
                offsets.link_reverse(by_pair[(target, source)])

    def start(self) -> None:
        self.spark = build_session(self.config.spark)
        for flow in self.flows:
            flow.start(self.spark)
            log.info("flow %s started: topics matching %s", flow.flow.name, flow.subscribe_pattern())
        self.scheduler.start()

    def request_stop(self, *_: object) -> None:
        self._stop.set()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGINT, self.request_stop)
        signal.signal(signal.SIGTERM, self.request_stop)

    def run(self, progress: Callable[[str], None] | None = None, progress_interval: float = 10.0,
            until: Callable[[], bool] | None = None) -> None:
        """Block until stop is requested (signal, ``until()`` true) or a query fails; then stop all."""
        last_report = time.monotonic()
        failure: BaseException | None = None
        try:
            while not self._stop.is_set():
                for flow in self.flows:
                    if flow.query is not None and not flow.query.isActive:
                        failure = flow.query.exception() or RuntimeError(f"flow {flow.flow.name} stopped")
                        break
                if failure is not None or (until is not None and until()):
                    break
                if progress is not None and time.monotonic() - last_report >= progress_interval:
                    last_report = time.monotonic()
                    for line in self.progress_lines():
                        progress(line)
                self._stop.wait(0.5)
        finally:
            self.stop()
        if failure is not None:
            raise RuntimeError(f"replication failed: {failure}") from None

    def progress_lines(self) -> list[str]:
        """One line per flow: records copied since start and the rate of the latest batches."""
        lines = []
        for flow in self.flows:
            flow.collect_progress()
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
