"""Key validation: typos in MM2's namespaces, bad values, cycles, deprecated keys, secrets."""
from __future__ import annotations

import pytest

from mirrorspark.cli.validate_command import describe
from mirrorspark.config import ConfigError, parse_config
from mirrorspark.config.docs import render
from mirrorspark.config.keys import KEYS
from mirrorspark.config.properties_file import parse_properties

BASE = "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n"


def config(extra: str):
    return parse_config(parse_properties(BASE + extra))


@pytest.mark.parametrize("extra, key, hint", [
    ("topics.exlude = x\n", "topics.exlude", "topics.exclude"),
    ("A->B.topic = orders\n", "A->B.topic", "topics"),
    ("A->B.enable = true\n", "A->B.enable", "enabled"),
    ("replication.policy.separater = _\n", "replication.policy.separater", "replication.policy.separator"),
    ("mirrorspark.batch.max.record = 5\n", "mirrorspark.batch.max.record", "mirrorspark.batch.max.records"),
])
def test_a_near_miss_of_a_key_that_selects_what_is_copied_is_refused(extra, key, hint):
    """MM2 would ignore these and copy other topics, or under other names, than the file asks for."""
    with pytest.raises(ConfigError) as err:
        config(extra)
    assert err.value.key == key and hint in str(err.value)


@pytest.mark.parametrize("extra, warned, hint", [
    ("emit.heartbeats = false\n", "emit.heartbeats", "emit.heartbeats.enabled"),
    ("A->B.emit.heartbeats = false\n", "A->B.emit.heartbeats", "emit.heartbeats.enabled"),
    ("sync.topic.config.enabled = false\n", "sync.topic.config.enabled", "sync.topic.configs.enabled"),
    # from the MM2 design document's table, never implemented by MM2
    ("heartbeats.topic.retention.ms = 1000\n", "heartbeats.topic.retention.ms", ""),
    ("checkpoints.topic.retention.ms = 1000\n", "checkpoints.topic.retention.ms", ""),
    ("offset.syncs.topic.retention.ms = 1000\n", "offset.syncs.topic.retention.ms", ""),
    ("readahead.queue.capacity = 500\n", "readahead.queue.capacity", ""),
    # made up, and misspelt
    ("emit.offset-syncs.interval.seconds = 5\n", "emit.offset-syncs.interval.seconds", ""),
    ("offset-syncs.topic.partitions = 1\n", "offset-syncs.topic.partitions", ""),
    ("offset.syncs.topic.replication.factor = 1\n", "offset.syncs.topic.replication.factor",
     "offset-syncs.topic.replication.factor"),
    # a flow key under a cluster prefix: MM2 hands it to no connector
    ("A.heartbeats.topic.replication.factor = 1\n", "A.heartbeats.topic.replication.factor", "A->TARGET"),
    ("A.emit.heartbeat.enabled = false\n", "A.emit.heartbeat.enabled", "emit.heartbeats.enabled"),
])
def test_keys_mm2_ignores_are_warnings_naming_the_near_miss(extra, warned, hint):
    """MM2 runs such a file, so mirrorspark does: one warning per key (``validate --strict`` refuses them)."""
    mirror = config(extra)
    found = [w for w in mirror.warnings if w.startswith(warned)]
    assert len(found) == 1, mirror.warnings
    assert "ignores it too" in found[0] and hint in found[0]


@pytest.mark.parametrize("extra, key", [
    ("refresh.topics.interval.seconds = soon\n", "refresh.topics.interval.seconds"),
    ("use.defaults.from = elsewhere\n", "use.defaults.from"),
    ("A.security.protocol = TLS\n", "A.security.protocol"),
    ("A->B.clusters = A\n", "A->B.clusters"),
    ("A.topics = x\n", "A.topics"),
    ("A->B.topic.map = orders\n", "A->B.topic.map"),
    ("A->B.topic.map = a:x, b:x\n", "A->B.topic.map"),
    ("A->B.emit.offset-syncs.enabled = false\noffset-syncs.topic.location = target\n",
     "offset-syncs.topic.location"),
    ("offset-syncs.topic.location = nowhere\n", "offset-syncs.topic.location"),
])
def test_bad_values_name_the_key(extra, key):
    with pytest.raises(ConfigError) as err:
        config(extra)
    assert err.value.key == key and key in str(err.value)


def test_an_identity_cycle_with_a_topic_map_is_refused_naming_the_map():
    with pytest.raises(ConfigError) as err:
        config("B->A.enabled = true\nB->A.topic.map = orders:orders-b\n"
               "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n")
    assert err.value.key == "B->A.topic.map" and "cycle" in str(err.value)


def test_identity_policy_one_way_is_fine():
    config("replication.policy.class = IdentityReplicationPolicy\n")


def test_topic_map_loop_is_refused():
    with pytest.raises(ConfigError, match="loop"):
        config("B->A.enabled = true\nA->B.topic.map = orders:orders-a\nB->A.topic.map = orders-a:orders\n")


def test_deprecated_and_connect_keys_warn():
    warnings = config("topics.blacklist = x\ntasks.max = 3\nkey.converter = whatever\nmy.custom = 1\n").warnings
    assert any("topics.blacklist is deprecated" in w for w in warnings)
    assert any("my.custom" in w and "ignored" in w for w in warnings)
    # MM2 would convert every record with it; mirrorspark copies bytes: said, not hidden
    assert any(w.startswith("key.converter = whatever: mirrorspark copies each record's bytes") for w in warnings)


def test_validate_output_hides_secrets():
    mirror = config("A.sasl.jaas.config = org.x.PlainLoginModule required password=\"s3cret\";\n"
                    "A.ssl.truststore.password = hunter2\n")
    lines: list[str] = []
    describe(mirror, lines.append, probe=False)
    text = "\n".join(lines)
    assert "s3cret" not in text and "hunter2" not in text and "[hidden]" in text


def test_configuration_doc_is_generated_and_current():
    from pathlib import Path
    doc = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
    assert doc.read_text() == render(), "run: python -m mirrorspark.config.docs"
    for key in KEYS:
        assert f"`{key.name}`" in doc.read_text()


def test_validate_offline_checks_the_file_not_the_machine(tmp_path, monkeypatch):
    """A CI machine has none of production's secrets: what it lacks is listed, errors of the file are all
    reported in one run, and a misspelt secret key is hidden like a well-spelt one."""
    from typer.testing import CliRunner

    from mirrorspark.cli.app import app

    monkeypatch.delenv("TRUSTSTORE_PASSWORD", raising=False)
    good = tmp_path / "ci.properties"
    good.write_text(
        "clusters = primary, backup\nprimary.bootstrap.servers = p:9093\nbackup.bootstrap.servers = b:9093\n"
        "config.providers = env, file\n"
        "config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n"
        "config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n"
        "primary.security.protocol = SSL\nprimary.ssl.truststore.location = /etc/kafka/secrets/truststore.jks\n"
        "primary.ssl.truststore.password = ${env:TRUSTSTORE_PASSWORD}\nprimary.ssl.truststore.pasword = typo-s3cr3t\n"
        f"backup.sasl.jaas.config = ${{file:{tmp_path}/absent.properties:jaas}}\n"
        "backup.security.protocol = SASL_SSL\nbackup.sasl.mechanism = SCRAM-SHA-512\n"
        "primary->backup.enabled = true\nprimary->backup.topics = orders-\\\\p{Digit}+, (?<region>eu|us)\\\\..*\n")
    done = CliRunner().invoke(app, ["validate", "--offline", "--show", str(good)])
    assert done.exit_code == 0, done.output
    needed = [line for line in done.output.splitlines() if line.startswith("needed at run time: ")]
    assert any("TRUSTSTORE_PASSWORD" in line for line in needed)
    assert any("primary.ssl.truststore.location" in line for line in needed)
    assert any("backup.sasl.jaas.config" in line and "absent.properties" in line for line in needed)
    assert "typo-s3cr3t" not in done.output and "ssl.truststore.pasword=[hidden]" in done.output
    assert "topics = orders-\\p{Digit}+, (?<region>eu|us)\\..*  (flow)" in done.output
    assert "emit.checkpoints.interval.seconds = 60  (default)" in done.output
    strict = CliRunner().invoke(app, ["validate", "--offline", "--strict", str(good)])
    assert strict.exit_code == 2 and "3 item(s) needed at run time" in strict.output + (strict.stderr or "")

    bad = tmp_path / "bad.properties"
    bad.write_text("clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"
                   "A->B.topics = orders-[a-z\nA->B.replication.factor = zero\n"
                   "A->B.sync.topic.configs.interval.seconds = -5\nmirrorspark.flow.restart.atempts = 3\n")
    refused = CliRunner().invoke(app, ["validate", "--offline", str(bad)])
    text = refused.output + (refused.stderr or "")
    assert refused.exit_code == 2 and "4 errors in the configuration" in text, text
    for key in ("mirrorspark.flow.restart.atempts", "A->B.topics", "A->B.replication.factor",
                "A->B.sync.topic.configs.interval.seconds"):
        assert key in text
    assert "Unclosed character class near index 10 of 'orders-[a-z'" in text
