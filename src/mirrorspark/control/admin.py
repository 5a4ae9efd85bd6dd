"""Admin clients and the small admin calls the rest of mirrorspark builds on."""
from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

_QUIET = logging.getLogger("mirrorspark.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def admin_client(conf: dict[str, Any]) -> AdminClient:
    """An AdminClient whose librdkafka chatter goes to a silent logger, not stderr."""
    return AdminClient({**conf, "logger": _QUIET})


def broker_answers(bootstrap: str, timeout: float = 5.0) -> bool:
    """True when a broker at ``bootstrap`` answers a metadata request within ``timeout``."""
    try:
        admin_client({"bootstrap.servers": bootstrap}).list_topics(timeout=timeout)
    except KafkaException:
        return False
    return True


def broker_count(admin: AdminClient, timeout: float = 10.0) -> int:
    return len(admin.list_topics(timeout=timeout).brokers)


def topic_partitions(admin: AdminClient, timeout: float = 10.0) -> dict[str, int]:
    """Every topic on the cluster with its partition count (one metadata request)."""
    metadata = admin.list_topics(timeout=timeout)
    return {
        name: len(topic.partitions)
        for name, topic in metadata.topics.items()
        if topic.error is None
    }
