"""Strimzi KafkaMirrorMaker2 resources (tests/data/strimzi, public examples: see SOURCES.md) read as the
mm2.properties they mean, without a cluster."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorspark.cli.app import app
from mirrorspark.config import load_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.config.strimzi import convert, is_strimzi, to_properties
from mirrorspark.errors import ConfigError

CORPUS = Path(__file__).parents[2] / "data" / "strimzi"
FILES = sorted(CORPUS.glob("*.yaml"))
# file -> the field its refusal names (a resource Strimzi runs whose meaning mirrorspark has no equivalent for)
REFUSED = {"10-strimzi-main-v1-security-tls-auth-mirror-maker-2.yaml": "spec.mirrors[0].sourceConnector"}


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    return result, result.output + (result.stderr if result.stderr_bytes is not None else "")


def test_the_corpus_holds_both_layouts_and_every_authentication():
    texts = [f.read_text() for f in FILES]
    assert len(FILES) >= 16 and all(is_strimzi(t) for t in texts)
    for needle in ("connectCluster", "target:", "type: tls", "type: scram-sha-512", "pattern:", "certificate:",
                   "heartbeatConnector", "kafka.strimzi.io/v1\n", "v1alpha1", "eventstreams.ibm.com"):
        assert any(needle in t for t in texts), needle


@pytest.mark.parametrize("file", FILES, ids=lambda f: f.stem)
def test_validate_offline_reads_each_public_resource(file: Path, tmp_path: Path):
    result, output = invoke("validate", "--offline", str(file), "--secrets-dir", str(tmp_path / "secrets"))
    assert "Traceback" not in output
    if file.name in REFUSED:
        assert result.exit_code == 2 and REFUSED[file.name] in output, output
        return
    assert result.exit_code == 0, output
    assert "->" in output and ": enabled, policy" in output


def test_the_scram_example_becomes_mm2s_keys_with_secrets_left_in_their_files(tmp_path):
    file = CORPUS / "04-strimzi-0.48-security-scram-sha-512-mirror-maker-2.yaml"
    conversion = convert(file.read_text(), file.name, tmp_path)
    props = conversion.properties
    assert props["clusters"] == "cluster-a, cluster-b"
    assert props["cluster-a.security.protocol"] == "SASL_SSL"
    assert props["cluster-a.sasl.mechanism"] == "SCRAM-SHA-512"
    assert f'password="${{mounted:{tmp_path}/cluster-a-user:password}}"' in props["cluster-a.sasl.jaas.config"]
    assert props["cluster-a->cluster-b.enabled"] == "true" and props["cluster-a->cluster-b.topics"] == ".*"
    assert props["emit.heartbeats.enabled"] == "false"  # no heartbeatConnector in the mirror
    assert props["config.providers.mounted.param.allowed.paths"] == str(tmp_path)
    assert parse_properties(to_properties(conversion, file.name)) == props  # migrate from-strimzi's text
    # Mounted as Kubernetes mounts them, the secrets resolve: the password reaches the JAAS entry.
    for secret, key, value in (("cluster-a-user", "password", "pa55-a"), ("cluster-b-user", "password", "pa55-b"),
                               ("cluster-a-cluster-ca-cert", "ca.crt", "CA-A"),
                               ("cluster-b-cluster-ca-cert", "ca.crt", "CA-B")):
        (tmp_path / secret).mkdir(exist_ok=True)
        (tmp_path / secret / key).write_text(value)
    mirror = load_config(file, secrets=tmp_path)
    source = mirror.clusters["cluster-a"].settings
    assert 'password="pa55-a"' in source["sasl.jaas.config"]
    assert source["ssl.truststore.certificates"] == "CA-A"  # the pattern *.crt, matched in the mounted folder


def test_the_v1_layout_and_mutual_tls(tmp_path):
    file = CORPUS / "09-strimzi-main-v1-kafka-mirror-maker-2-tls.yaml"
    props = convert(file.read_text(), file.name, tmp_path).properties
    assert props["cluster-a->cluster-b.enabled"] == "true"
    assert props["cluster-b.security.protocol"] == "SSL"
    mtls = CORPUS / "03-strimzi-0.48-security-tls-auth-mirror-maker-2.yaml"
    props = convert(mtls.read_text(), mtls.name, tmp_path).properties
    assert props["cluster-a.ssl.keystore.type"] == "PEM"
    assert props["cluster-a.ssl.keystore.key"] == f"${{mounted:{tmp_path}/cluster-a-user:user.key}}"


@pytest.mark.parametrize(("auth", "expected"), [
    ("{type: scram-sha-256, username: u, passwordSecret: {secretName: s, password: pw}}",
     {"sasl.mechanism": "SCRAM-SHA-256", "security.protocol": "SASL_SSL"}),
    ("{type: plain, username: u, passwordSecret: {secretName: s, password: pw}}",
     {"sasl.mechanism": "PLAIN", "security.protocol": "SASL_SSL"}),
    ("{type: oauth, clientId: c, clientSecret: {secretName: s, key: k}, tokenEndpointUri: 'https://idp/token', "
     "scope: kafka}",
     {"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
      "sasl.login.callback.handler.class":
          "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"}),
])
def test_each_sasl_authentication_becomes_mm2s_keys_and_loads(auth, expected, tmp_path):
    """Issue 44: scram-sha-256, plain and oauth (the corpus has scram-sha-512 and tls) convert to the keys an
    MM2 user writes, and the converted file loads with the mounted secret in the JAAS entry."""
    file = tmp_path / "kmm2.yaml"
    file.write_text("apiVersion: kafka.strimzi.io/v1beta2\nkind: KafkaMirrorMaker2\nmetadata:\n  name: x\nspec:\n"
                    "  connectCluster: b\n  clusters:\n  - {alias: a, bootstrapServers: 'a:9093', tls: "
                    f"{{trustedCertificates: []}}, authentication: {auth}}}\n"
                    "  - {alias: b, bootstrapServers: 'b:9092'}\n"
                    "  mirrors:\n  - {sourceCluster: a, targetCluster: b, sourceConnector: {}, "
                    "topicsPattern: 'orders.*'}\n")
    secrets = tmp_path / "secrets"
    (secrets / "s").mkdir(parents=True)
    (secrets / "s" / "pw").write_text("pa55")
    (secrets / "s" / "k").write_text("pa55")
    props = convert(file.read_text(), file.name, secrets).properties
    for key, value in expected.items():
        assert props[f"a.{key}"] == value, key
    mirror = load_config(file, secrets=secrets)
    source = mirror.clusters["a"].settings
    assert "pa55" in source["sasl.jaas.config"] and "${" not in source["sasl.jaas.config"]
    assert [f.name for f in mirror.enabled_flows] == ["a->b"]


def test_three_clusters_two_mirrors_into_one_target(tmp_path):
    file = CORPUS / "15-dalelane-eventstreams-aggregate-central-mm2.yaml"
    mirror = load_config(file, offline=True, secrets=tmp_path)
    assert sorted(f.name for f in mirror.enabled_flows) == ["northamerica->europe", "southamerica->europe"]


@pytest.mark.parametrize(("body", "field"), [
    ("spec:\n  connectCluster: b\n  clusters: []\n  mirrors: []\n  frobnicate: 1\n", "spec.frobnicate"),
    ("spec:\n  connectCluster: c\n  clusters:\n  - {alias: a, bootstrapServers: 'a:1'}\n"
     "  - {alias: b, bootstrapServers: 'b:1'}\n  mirrors: []\n", "spec.connectCluster"),
    ("spec:\n  connectCluster: b\n  clusters:\n  - {alias: a, bootstrapServers: 'a:1', authentication: "
     "{type: oauth, clientId: x, clientSecret: {secretName: s, key: k}, tokenEndpointUri: 'https://t', "
     "accessTokenIsJwt: false}}\n  - {alias: b, bootstrapServers: 'b:1'}\n  mirrors:\n"
     "  - {sourceCluster: a, targetCluster: b, sourceConnector: {}}\n",
     "spec.clusters[0].authentication.accessTokenIsJwt"),
    ("spec:\n  connectCluster: b\n  clusters:\n  - {alias: a, bootstrapServers: 'a:1'}\n"
     "  - {alias: b, bootstrapServers: 'b:1'}\n  mirrors:\n  - {sourceCluster: a, targetCluster: b, sourceConnector: "
     "{config: {replication.factor: 1}}, checkpointConnector: {config: {replication.factor: 2}}}\n",
     "spec.mirrors[0].checkpointConnector.config.replication.factor"),
    ("spec:\n  connectCluster: b\n  clusters:\n  - {alias: a, bootstrapServers: 'a:1'}\n"
     "  - {alias: b, bootstrapServers: 'b:1'}\n  mirrors:\n  - {sourceCluster: a, targetCluster: b, "
     "sourceConnector: {state: paused}}\n", "spec.mirrors[0].sourceConnector.state"),
])
def test_a_field_without_an_equivalent_is_refused_naming_it(body, field, tmp_path):
    file = tmp_path / "kmm2.yaml"
    file.write_text("apiVersion: kafka.strimzi.io/v1beta2\nkind: KafkaMirrorMaker2\nmetadata:\n  name: x\n" + body)
    with pytest.raises(ConfigError) as caught:
        load_config(file, secrets=tmp_path)
    assert caught.value.key == field, str(caught.value)
    result, output = invoke("validate", "--offline", str(file))
    assert result.exit_code == 2 and field in output and "Traceback" not in output


def test_not_yaml_and_two_resources_are_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: KafkaMirrorMaker2\nspec: [unclosed\n")
    result, output = invoke("validate", "--offline", str(bad))
    assert result.exit_code == 2 and "is not valid YAML" in output
    two = tmp_path / "two.yaml"
    one = (CORPUS / "01-strimzi-0.48-kafka-mirror-maker-2.yaml").read_text()
    two.write_text(one + "\n---\n" + one)
    result, output = invoke("migrate", "from-strimzi", str(two))
    assert result.exit_code == 2 and "holds 2 KafkaMirrorMaker2 resources" in output
