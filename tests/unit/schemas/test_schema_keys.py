"""The schema sync's keys: read once, refused naming the key when a registry is missing."""
from pathlib import Path

import pytest

from mirrorspark.config.loader import load_config
from mirrorspark.errors import ConfigError

BASE = ("clusters = primary, backup\nprimary.bootstrap.servers = p:9092\nbackup.bootstrap.servers = b:9092\n"
        "primary->backup.enabled = true\nprimary->backup.mirrorspark.schemas.sync.enabled = true\n")


def load_config_text(text: str, folder: Path):
    (folder / "mm2.properties").write_text(text)
    return load_config(folder / "mm2.properties")


def test_a_flow_syncing_schemas_needs_both_registries(tmp_path):
    with pytest.raises(ConfigError) as refused:
        load_config_text(BASE + "primary.schema.registry.url = http://p:8080/apis/ccompat/v7\n", tmp_path)
    assert refused.value.key == "backup.schema.registry.url"


def test_the_keys_are_read_with_their_defaults(tmp_path):
    config = load_config_text(BASE + "primary.schema.registry.url = http://p:1\nbackup.schema.registry.url = http://b:1\n"
                              "backup.schema.registry.basic.auth.user.info = me:secret\n", tmp_path)
    options = config.enabled_flows[0].options
    assert options.schemas and options.schemas_interval == 30 and options.schemas_fail_unresolved
    assert not options.schemas_keep_ids, "ids are rewritten unless keep is asked for"
    assert options.schema_subjects == (".*",)
    assert not [w for w in config.warnings if "schema.registry" in w], config.warnings


def test_keeping_ids_is_a_choice_and_a_wrong_one_is_refused_naming_the_key(tmp_path):
    registries = "primary.schema.registry.url = http://p:1\nbackup.schema.registry.url = http://b:1\n"
    kept = load_config_text(BASE + registries + "mirrorspark.schemas.ids = keep\n", tmp_path)
    assert kept.enabled_flows[0].options.schemas_keep_ids
    with pytest.raises(ConfigError) as refused:
        load_config_text(BASE + registries + "mirrorspark.schemas.ids = same\n", tmp_path)
    assert refused.value.key == "mirrorspark.schemas.ids"


def test_a_registry_behind_tls_is_trusted_through_pem_files_and_a_bad_one_is_refused_naming_its_key(tmp_path):
    import subprocess

    from mirrorspark.schemas.registry import tls_context

    cert, key = tmp_path / "ca.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=r",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    assert tls_context(alias="b", settings={}) is None, "the system's trust"
    context = tls_context(alias="b", settings={"schema.registry.ssl.ca.location": str(cert),
                                                "schema.registry.ssl.certificate.location": str(cert),
                                                "schema.registry.ssl.key.location": str(key)})
    assert context is not None and ((("commonName", "r"),),) in [ca["subject"] for ca in context.get_ca_certs()]
    with pytest.raises(ConfigError) as refused:
        tls_context(alias="b", settings={"schema.registry.ssl.ca.location": str(tmp_path / "none.pem")})
    assert refused.value.key == "b.schema.registry.ssl.ca.location"
    with pytest.raises(ConfigError) as refused:
        tls_context(alias="b", settings={"schema.registry.ssl.certificate.location": str(cert)})
    assert refused.value.key == "b.schema.registry.ssl.key.location"


def test_a_registry_key_schema_sync_does_not_read_is_refused_naming_it(tmp_path):
    with pytest.raises(ConfigError) as refused:
        load_config_text(BASE + "primary.schema.registry.url = http://p:1\nbackup.schema.registry.url = https://b:1\n"
                         "backup.schema.registry.ssl.truststore.location = /etc/registry.jks\n", tmp_path)
    assert refused.value.key == "backup.schema.registry.ssl.truststore.location"
    assert "ssl.ca.location" in str(refused.value)


def test_credentials_in_a_registry_url_go_in_the_header_never_in_a_message():
    from mirrorspark.schemas.registry import Registry, RegistryError

    registry = Registry(name="backup", url="http://me:s%40cret@127.0.0.1:9/apis/ccompat/v7/", timeout=0.5)
    assert registry.url == "http://127.0.0.1:9/apis/ccompat/v7"
    assert registry._auth == "Basic " + __import__("base64").b64encode(b"me:s@cret").decode()
    with pytest.raises(RegistryError) as unreachable:  # nothing listens on port 9
        registry.subjects()
    assert "cret" not in str(unreachable.value) and "schema registry of backup" in str(unreachable.value)
