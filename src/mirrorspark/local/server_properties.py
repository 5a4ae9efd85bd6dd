"""The broker configuration of a local cluster: one KRaft node sized for a 2-core machine."""
from __future__ import annotations

from pathlib import Path

# Knobs that keep a broker small: few threads, a small cleaner buffer, RF 1 internal topics.
SMALL_FOOTPRINT: dict[str, str] = {
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",  # one coordinator load covers every group (see group_coordinator_ready)
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
    "log.cleaner.threads": "1",
    "auto.create.topics.enable": "false",
}


def render(port: int, controller_port: int, data_dir: Path, extra: dict[str, str] | None = None) -> str:
    """server.properties text for a combined broker+controller listening on 127.0.0.1:port."""
    props: dict[str, str] = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(data_dir),
        **SMALL_FOOTPRINT,
        **(extra or {}),
    }
    return "".join(f"{k}={v}\n" for k, v in props.items())


LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = OUT
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = INFO
"""
