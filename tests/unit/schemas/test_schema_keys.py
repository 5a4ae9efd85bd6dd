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
