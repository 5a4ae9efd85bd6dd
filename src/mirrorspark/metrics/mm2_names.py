"""MM2's series under the names Strimzi's MirrorMaker 2 exporter gives them.

Strimzi exports MM2's MBeans through the JMX Prometheus exporter with the rules of its example
``kafka-mirror-maker-2-metrics.yaml``: ``kafka.connect.mirror<type=MirrorSourceConnector, source=A,
target=B, topic=T, partition=N><>record-count`` becomes
``kafka_connect_mirror_mirrorsourceconnector_record_count{source,target,topic,partition}``, every
such attribute typed gauge; Connect's worker and the Kafka clients' MBeans become
``kafka_connect_worker_*``, ``kafka_consumer_*``, ``kafka_producer_*``, with the client id as
``clientid`` (quoted as JMX quotes a value holding ``>``). Strimzi's Grafana dashboard and the alert
rules MM2 shops wrote on it select on these names and labels, so they are produced here from the
same figures as mirrorspark's own series, computed at scrape time (nothing runs per batch for them).

What each means here, where mirrorspark has no Connect worker, is in docs/operations.md.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from mirrorspark.metrics.window import Window


class Figures(Protocol):
    """What this collector reads of the process's ``MirrorMetrics`` (which registers it)."""

    status: Any
    lag_records: Any

    def flow_metrics(self) -> list: ...

    def checkpoint_windows(self) -> list[tuple[tuple[str, str, str, str, str], Window]]: ...

SOURCE = "kafka_connect_mirror_mirrorsourceconnector_"
CHECKPOINT = "kafka_connect_mirror_mirrorcheckpointconnector_"
PARTITION = ("source", "target", "topic", "partition")
CHECKPOINT_LABELS = ("source", "target", "group", "topic", "partition")
TASK = "0"  # mirrorspark runs one writer per flow (its Spark tasks are not Connect tasks)


def quoted(value: str) -> str:
    """A JMX ObjectName value as Kafka writes it (quoted when it holds a character JMX reserves or
    ``>``), which the exporter keeps in the label."""
    return f'"{value}"' if any(c in value for c in ',=:*?">|') else value


def source_connector(source: str, target: str) -> str:
    """The name Strimzi gives a mirror's source connector."""
    return f"{source}->{target}.MirrorSourceConnector"


def consumer_client_id(source: str, target: str) -> str:
    """MM2's replication consumer client id (3.5+): ``S->T|<connector>-<task>|replication-consumer``."""
    return quoted(f"{source}->{target}|{source_connector(source, target)}-{TASK}|replication-consumer")


def producer_client_id(source: str, target: str) -> str:
    """Connect's data producer of the source task: ``connector-producer-<connector>-<task>``."""
    return quoted(f"connector-producer-{source_connector(source, target)}-{TASK}")


class Mm2Collector(Collector):
    """Reads the flows' figures and windows at each scrape."""

    def __init__(self, metrics: Figures) -> None:
        self.metrics = metrics

    def describe(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        return iter(())  # families vary with the flows; nothing to check at registration

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        yield from self._source_connector()
        yield from self._checkpoint_connector()
        yield from self._worker_and_clients()

    def _source_connector(self) -> Iterator[GaugeMetricFamily]:
        def family(attribute: str, what: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(SOURCE + attribute, f"MM2 MirrorSourceConnector {what}", labels=PARTITION)
        count, size = family("record_count", "record-count"), family("byte_count", "byte-count")
        rate, byte_rate = family("record_rate", "record-rate"), family("byte_rate", "byte-rate")
        age = {s: family("record_age_ms" + s, "record-age-ms" + s.replace("_", "-"))
               for s in ("", "_min", "_max", "_avg")}
        latency = {s: family("replication_latency_ms" + s, "replication-latency-ms" + s.replace("_", "-"))
                   for s in ("", "_min", "_max", "_avg")}
        for flow in self.metrics.flow_metrics():
            for (topic, partition), fig in flow.partitions():
                labels = [flow.source, flow.target, topic, str(partition)]
                count.add_metric(labels, fig.records)
                size.add_metric(labels, fig.bytes)
                records_per_s, bytes_per_s = fig.traffic.rates()
                rate.add_metric(labels, records_per_s)
                byte_rate.add_metric(labels, bytes_per_s)
                for stats, window in ((age, fig.age), (latency, fig.traffic)):
                    low, high, mean = window.stats()
                    for suffix, value in (("", window.last), ("_min", low), ("_max", high), ("_avg", mean)):
                        stats[suffix].add_metric(labels, value)
        yield from (count, rate, size, byte_rate, *age.values(), *latency.values())

    def _checkpoint_connector(self) -> Iterator[GaugeMetricFamily]:
        families = {s: GaugeMetricFamily(CHECKPOINT + "checkpoint_latency_ms" + s, "MM2 MirrorCheckpointConnector "
                                         "checkpoint-latency-ms" + s.replace("_", "-"), labels=CHECKPOINT_LABELS)
                    for s in ("", "_min", "_max", "_avg")}
        for key, window in self.metrics.checkpoint_windows():
            low, high, mean = window.stats()
            for suffix, value in (("", window.last), ("_min", low), ("_max", high), ("_avg", mean)):
                families[suffix].add_metric(list(key), value)
        yield from families.values()

    def _worker_and_clients(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        status = self.metrics.status.snapshot()
        flows = [f for f in self.metrics.flow_metrics()
                 if (s := status.get((f.source, f.target))) is not None and s.running and s.role == "writer"]
        connectors = sum(len(f.connectors) for f in flows)
        starting = any(s.state in ("starting", "restarting") for s in status.values())
        for name, value, what in (("connector_count", connectors, "connectors whose work this instance does"),
                                  ("task_count", connectors, "tasks (one per connector here)")):
            yield GaugeMetricFamily("kafka_connect_worker_" + name, f"Connect worker {what}", value=value)
        for name in ("assigned_connectors", "assigned_tasks"):
            family = GaugeMetricFamily("kafka_connect_coordinator_" + name, f"Connect coordinator {name}",
                                       labels=("clientid",))
            family.add_metric(["connect-1"], connectors)
            yield family
        yield GaugeMetricFamily("kafka_connect_worker_rebalance_rebalancing", "1 while a flow of this instance "
                                "starts or restarts (MM2: a rebalance in progress)", value=1 if starting else 0)
        lag = GaugeMetricFamily("kafka_consumer_fetch_manager_records_lag", "Source records not yet replicated, per "
                                "source partition (MM2: the replication consumer's records-lag)",
                                labels=("clientid", "topic", "partition"))
        incoming = CounterMetricFamily("kafka_consumer_incoming_byte", "Key and value bytes read from the source "
                                       "and replicated (MM2: the consumer's network bytes)", labels=("clientid",))
        outgoing = CounterMetricFamily("kafka_producer_outgoing_byte", "Key and value bytes written to the target "
                                       "(MM2: the producer's network bytes)", labels=("clientid",))
        commit = GaugeMetricFamily("kafka_connect_connector_task_offset_commit_avg_time_ms", "Average time a batch's "
                                   "offsets took to hand over, over MM2's window (Connect: offset commit)",
                                   labels=("connector", "task"))
        active = GaugeMetricFamily("kafka_connect_source_task_source_record_active_count", "Records of the batch "
                                   "being written, not yet acknowledged; 0 between batches (Connect: polled, not yet "
                                   "written)", labels=("connector", "task"))
        yield from self._task_status(status)
        for flow in flows:
            client = consumer_client_id(flow.source, flow.target)
            active.add_metric([quoted(source_connector(flow.source, flow.target)), TASK], flow.figures.in_flight)
            written = sum(fig.bytes for _, fig in flow.partitions())
            incoming.add_metric([client], written)
            outgoing.add_metric([producer_client_id(flow.source, flow.target)], written)
            commit.add_metric([quoted(source_connector(flow.source, flow.target)), TASK],
                              flow.figures.commits.stats()[2])
            for sample in _samples(self.metrics.lag_records, source=flow.source, target=flow.target):
                lag.add_metric([client, sample.labels["source_topic"], sample.labels["partition"]], sample.value)
        yield from (lag, incoming, outgoing, commit, active)


    def _task_status(self, status: dict) -> Iterator[GaugeMetricFamily]:
        """Connect's task status and the worker's per-connector task counts, which Strimzi's Connect
        alert rules (failed connector, failed task) read: one source task per flow this instance writes."""
        task = GaugeMetricFamily("kafka_connect_connector_status", "1 for the flow's source task status "
                                 "(running, paused, failed, unassigned while it starts)",
                                 labels=("connector", "task", "status"))
        counts = {kind: GaugeMetricFamily(f"kafka_connect_worker_connector_{kind}_task_count", f"Tasks of the "
                                          f"connector that are {kind}", labels=("connector",))
                  for kind in ("running", "paused", "failed")}
        for (source, target), s in sorted(status.items()):
            if s.role != "writer":
                continue  # a worker without the task has no such MBean
            connector = quoted(source_connector(source, target))
            now = CONNECT_STATUS.get(s.state, "unassigned")
            task.add_metric([connector, TASK, now], 1)
            for kind, family in counts.items():
                family.add_metric([connector], 1 if now == kind else 0)
        yield task
        yield from counts.values()


# A flow's state as Connect would report its source task: retrying a cluster that does not answer
# is running (MM2's task keeps retrying); starting and restarting are unassigned.
CONNECT_STATUS = {"running": "running", "degraded": "running", "paused": "paused", "failed": "failed"}


def _samples(gauge, **match: str) -> list:
    return [sample for family in gauge.collect() for sample in family.samples
            if all(sample.labels.get(k) == v for k, v in match.items())]
