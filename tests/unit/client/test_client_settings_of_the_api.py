"""The Python API asks a cluster with Kafka's Java clients, as MM2's MirrorClient does (issue 44)."""
from __future__ import annotations

import json

from mirrorspark.client import client_for, mirror_client
from mirrorspark.config import parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.control.java_clients import JAVA_PROPERTIES


def test_the_file_and_java_style_settings_reach_kafkas_java_clients_unchanged(monkeypatch):
    """``client_for`` (what ``failover`` uses) and ``MirrorClient`` with Java-style settings hand the keys
    to Kafka's Java clients as written: a GSSAPI cluster is asked as MM2 asks it, nothing translated."""
    made: list[dict] = []
    monkeypatch.setattr(mirror_client, "admin_client", lambda conf: made.append(conf) or object())
    config = parse_config(parse_properties(
        "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\n"
        "b.security.protocol = SASL_PLAINTEXT\nb.sasl.mechanism = SCRAM-SHA-512\n"
        'b.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username="u" '
        'password="p";\na->b.enabled = true\n'))
    client_for(config, "b", remote_alias="a")
    settings = json.loads(made[-1][JAVA_PROPERTIES])
    assert settings["sasl.mechanism"] == "SCRAM-SHA-512" and "ScramLoginModule" in settings["sasl.jaas.config"]
    mirror_client.MirrorClient({"bootstrap.servers": "c:9092", "security.protocol": "SASL_PLAINTEXT",
                                "sasl.mechanism": "GSSAPI", "sasl.kerberos.service.name": "kafka"})
    assert json.loads(made[-1][JAVA_PROPERTIES])["sasl.mechanism"] == "GSSAPI"  # librdkafka would refuse it
    mirror_client.MirrorClient({"bootstrap.servers": "c:9092"}, java_style=False)
    assert JAVA_PROPERTIES not in made[-1]
