"""The options of a flow's query, resolved from its settings: mirrorspark's Kafka source (each task a
group of partitions read by one consumer) and the MirrorSink (the target producer's settings).
Also the preflight's check: a contradiction is refused here, before any executor sees it."""
from __future__ import annotations

from collections.abc import Mapping

from mirrorspark.config.model import FlowConfig
from mirrorspark.errors import ConfigError
from mirrorspark.partition import Partition
from mirrorspark.pipeline.executors import through_provider
from mirrorspark.pipeline.transforms import transforms_option

# Settings the source and sink manage themselves (Spark's Kafka source refuses them as kafka.* options too).
_SOURCE_MANAGED = {"group.id", "auto.offset.reset", "key.deserializer", "value.deserializer",
                   "enable.auto.commit", "interceptor.classes", "bootstrap.servers"}
_SINK_MANAGED = {"key.serializer", "value.serializer", "bootstrap.servers"}
# mirrorspark's Kafka source: tasks that each read a group of partitions with one consumer.
SOURCE_FORMAT = "io.mirrorspark.source.MirrorSource"


def source_options(flow: FlowConfig, pattern: str, ship_files: bool = False) -> dict[str, str]:
    """The source's options (Spark's Kafka reader takes the same ones, for `audit`); with ``ship_files``
    client files resolve on every executor."""
    consumer = flow.source_consumer()
    reset, where = flow.source_reset()
    if reset not in ("earliest", "latest", "none"):
        raise ConfigError(f"{where} must be earliest, latest or none, got {reset!r}", where)
    options = {
        "kafka.bootstrap.servers": flow.source.bootstrap_servers,
        "subscribePattern": pattern,
        "includeHeaders": "true",
        # none: the first start needs a saved position for every partition (FlowQuery checks it); a
        # partition created later starts at its earliest record, which skips nothing.
        "startingOffsets": "earliest" if reset == "none" else reset,
        # A deleted source topic or retention must not stop the other topics (MM2 keeps going); with
        # mirrorspark.data.loss = fail (or auto.offset.reset = none) records removed between the guard's
        # check and the read fail the task instead, and the restarted batch's check stops the flow naming
        # the gap.
        "failOnDataLoss": "true" if flow.fails_on_data_loss else "false",
        # A task fails (and the flow retries) when due records do not come for this long: never skipped.
        "pollTimeoutMs": str(flow.options.source_stall_timeout),
    }
    if flow.options.batch_max_records > 0:
        options["maxOffsetsPerTrigger"] = str(flow.options.batch_max_records)
    if ship_files:
        consumer = through_provider(consumer)
    options.update({f"kafka.{k}": v for k, v in consumer.items() if k not in _SOURCE_MANAGED})
    return options


def sink_options(flow: FlowConfig, report_offsets: bool, ship_files: bool = False,
                 lease: tuple[str, str] | None = None) -> dict[str, str]:
    """MirrorSink options: the target producer's settings as ``kafka.*`` and the flow's name. With
    ``report_offsets`` the producer must be idempotent: exact runs need each partition's records
    written in send order (a retried batch must not overtake an earlier one). ``lease``: the flow's
    lease group and this instance; an executor in a JVM of its own reads the lease by them and stops
    sending once another instance holds it (``sink/LeaseWatch.java``)."""
    producer = flow.target_producer()
    sent = through_provider(producer) if ship_files else producer
    options = {f"kafka.{k}": v for k, v in sent.items() if k not in _SINK_MANAGED}
    options["kafka.bootstrap.servers"] = flow.target.bootstrap_servers
    if not flow.idempotent:
        # MM2 runs it (older brokers, no IdempotentWrite ACL): send order is kept with one request in
        # flight per connection, so offset pairs stay exact; the cost is in the load-time warning.
        key = f"{flow.target.alias}.producer.max.in.flight.requests.per.connection"
        in_flight = producer.get("max.in.flight.requests.per.connection", "1").strip()
        if in_flight != "1":
            where = flow.idempotence_key
            raise ConfigError(f"{key}={in_flight} contradicts {where}=false: without idempotence only one request "
                              "in flight keeps each partition's records in source order; remove it", key)
        options["kafka.max.in.flight.requests.per.connection"] = "1"
    elif report_offsets:
        options["kafka.enable.idempotence"] = "true"
        # What idempotence needs, checked here: a conflict would otherwise fail every executor task.
        key = f"{flow.target.alias}.producer"
        if producer.get("acks", "all").strip().lower() not in ("all", "-1"):
            raise ConfigError(f"{key}.acks={producer['acks']} contradicts offset syncs (an idempotent producer needs "
                              "acks=all); remove it", f"{key}.acks")
        in_flight = producer.get("max.in.flight.requests.per.connection", "5").strip()
        if not in_flight.isdigit() or not 1 <= int(in_flight) <= 5:
            raise ConfigError(f"{key}.max.in.flight.requests.per.connection={in_flight} contradicts offset syncs (an "
                              "idempotent producer allows 1 to 5)", f"{key}.max.in.flight.requests.per.connection")
    options["flow"] = flow.name  # the runs and figures the driver drains are per flow
    if lease is not None:
        options["leaseGroup"], options["leaseInstance"] = lease
    if flow.exactly_once:  # a transactional producer per task, progress committed with the records
        options["exactlyOnce"] = "true"
        options["transactionalIdPrefix"] = flow.task_transactional_id_prefix
        options["progressGroup"] = flow.progress_group
    if flow.same_names:  # active/active on the same names: mark each copy, skip what the target has seen
        options["provenanceSource"] = flow.source.alias
        options["provenanceTarget"] = flow.target.alias
    transforms = transforms_option(flow)
    if transforms is not None:  # MM2's SMTs, applied by the sink to each record (sink/Transforms.java)
        options["transforms"] = transforms
    return options


def check_saved_positions(flow: str, where: str, partitions: Mapping[str, int],
                          saved: Mapping[Partition, int]) -> None:
    """``auto.offset.reset = none`` at a flow's first start: every source partition needs a saved
    position (MM2's, or what the target already holds), as MM2's consumer would fail without one."""
    missing = [f"{topic}-{p}" for topic, count in sorted(partitions.items()) for p in range(count)
               if (topic, p) not in saved]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ConfigError(
            f"flow {flow}: {where} = none, and {len(missing)} source partition(s) have no saved position ({shown}); "
            f"MM2 would not copy them either. Bring MM2's positions with `mirrorspark migrate from-mm2`, or set "
            f"{where} = earliest (copy from the first record) or latest (only records produced from now on)", where)

