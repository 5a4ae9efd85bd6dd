"""Translate MM2's Java-style client settings into librdkafka settings for the control plane."""
from __future__ import annotations

from collections.abc import Mapping

# Keys whose name and meaning are the same in the Java client and librdkafka.
_SAME = {"bootstrap.servers", "security.protocol", "client.id", "sasl.username", "sasl.password",
         "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.key.password"}
_RENAMED = {"sasl.mechanism": "sasl.mechanisms", "request.timeout.ms": "socket.timeout.ms"}


def librdkafka_admin(java_props: Mapping[str, str]) -> dict[str, str]:
    """Admin settings librdkafka understands, from Java-style ``bootstrap.servers``/security keys."""
    conf: dict[str, str] = {}
    for key, value in java_props.items():
        if key in _SAME:
            conf[key] = value
        elif key in _RENAMED:
            conf[_RENAMED[key]] = value
    return conf
