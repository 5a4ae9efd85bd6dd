"""The options of a flow's query, resolved from its settings: mirrorspark's Kafka source (each task a
group of partitions read by one consumer) and the MirrorSink (the target producer's settings).
Also the preflight's check: a contradiction is refused here, before any executor sees it."""
from __future__ import annotations

from mirrorspark.config.model import FlowConfig
from mirrorspark.errors import ConfigError
from mirrorspark.pipeline.executors import through_provider

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
    reset = consumer.get("auto.offset.reset", "earliest").strip().lower()
    if reset not in ("earliest", "latest"):
        raise ConfigError(f"{flow.source.alias}.consumer.auto.offset.reset must be earliest or latest, "
                          f"got {reset!r}", f"{flow.source.alias}.consumer.auto.offset.reset")
    options = {
        "kafka.bootstrap.servers": flow.source.bootstrap_servers,
        "subscribePattern": pattern,
        "includeHeaders": "true",
        "startingOffsets": reset,
        # A deleted source topic or retention must not stop the other topics (MM2 keeps going); with
        # mirrorspark.data.loss = fail records removed between the guard's check and the read fail the
        # task instead, and the restarted batch's check stops the flow naming the gap.
        "failOnDataLoss": "true" if flow.options.fail_on_data_loss else "false",
    }
    if flow.options.batch_max_records > 0:
        options["maxOffsetsPerTrigger"] = str(flow.options.batch_max_records)
    if ship_files:
        consumer = through_provider(consumer)
    options.update({f"kafka.{k}": v for k, v in consumer.items() if k not in _SOURCE_MANAGED})
    return options


def sink_options(flow: FlowConfig, report_offsets: bool, ship_files: bool = False) -> dict[str, str]:
    """MirrorSink options: the target producer's settings as ``kafka.*`` and the flow's name. With
    ``report_offsets`` the producer must be idempotent: exact runs need each partition's records
    written in send order (a retried batch must not overtake an earlier one)."""
    producer = flow.target_producer()
    sent = through_provider(producer) if ship_files else producer
    options = {f"kafka.{k}": v for k, v in sent.items() if k not in _SINK_MANAGED}
    options["kafka.bootstrap.servers"] = flow.target.bootstrap_servers
    if report_offsets:
        if producer.get("enable.idempotence", "true").strip().lower() == "false":
            where = (f"{flow.name}.producer.override.enable.idempotence"
                     if "producer.override.enable.idempotence" in flow.flow_settings
                     else f"{flow.target.alias}.producer.enable.idempotence")
            raise ConfigError(
                f"{where}=false contradicts offset syncs, which need each partition written in send order; remove "
                f"it or set {flow.where('emit.offset-syncs.enabled')} = false", where)
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
    return options
