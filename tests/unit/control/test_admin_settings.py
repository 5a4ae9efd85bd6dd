"""control.client_settings.admin_properties / admin_settings: one cluster's admin client settings."""
from __future__ import annotations

import pytest

from mirrorspark.config import ConfigError, parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.control.client_settings import admin_properties, admin_settings

TEXT = """
clusters = primary, backup
primary.bootstrap.servers = p:9092
backup.bootstrap.servers = b:9092
security.protocol = PLAINTEXT
backup.admin.request.timeout.ms = 7000
backup.admin.client.id = backup-admin
backup.consumer.client.id = not-for-admin
primary->backup.enabled = true
"""


def cluster(alias: str, text: str = TEXT):
    return parse_config(parse_properties(text)).clusters[alias]


def test_connection_then_admin_overrides():
    props = admin_properties(cluster("backup"))
    assert props["bootstrap.servers"] == "b:9092" and props["security.protocol"] == "PLAINTEXT"
    assert props["request.timeout.ms"] == "7000" and props["client.id"] == "backup-admin"
    assert admin_properties(cluster("primary")) == {"bootstrap.servers": "p:9092", "security.protocol": "PLAINTEXT"}


def test_librdkafka_names_and_alias_in_errors():
    text = TEXT + "mirrorspark.control.clients = librdkafka\n"
    assert admin_settings(cluster("backup", text)) == {"bootstrap.servers": "b:9092", "client.id": "backup-admin",
                                                 "socket.timeout.ms": "7000", "security.protocol": "PLAINTEXT"}
    sasl = TEXT.replace("security.protocol = PLAINTEXT", "backup.security.protocol = SASL_PLAINTEXT\n"
                        "backup.sasl.mechanism = PLAIN")
    with pytest.raises(ConfigError, match=r"^backup\.sasl\.jaas\.config is required"):
        admin_settings(cluster("backup", sasl))
