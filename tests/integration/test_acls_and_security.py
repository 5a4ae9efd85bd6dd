"""ACL sync rules (MM2's testSyncTopicACLs), SSL and SASL clusters (MM2's SSL variant), and the
mapping of MM2 users' Java security settings onto the control plane's client."""
from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)
from helpers.kafka import create_topic, produce, read_all, wait_for_count
from helpers.processes import run_cli, running_mirrorspark
from helpers.records import records
from helpers.waiting import wait_until

from mirrorspark.control.admin import admin_client
from mirrorspark.control.client_settings import librdkafka_admin
from mirrorspark.local import ClusterSpec, LocalClusters
from mirrorspark.local.security import SecurityOptions

TOPIC, ALLOW, DENY, LITERAL = ResourceType.TOPIC, AclPermissionType.ALLOW, AclPermissionType.DENY, \
    ResourcePatternType.LITERAL


def acl(name: str, principal: str, op: AclOperation, perm=ALLOW, pattern=LITERAL) -> AclBinding:
    return AclBinding(TOPIC, name, pattern, principal, "*", op, perm)


# -- ACL sync against brokers with StandardAuthorizer ---------------------------------------------
@pytest.mark.broker
def test_sync_topic_acls(clusters, tmp_path, unique):
    topic, other = f"acl-{unique}", f"skip-{unique}"
    for name in (topic, other):
        create_topic(clusters["primary"], name, 1)
    source, target = admin_client({"bootstrap.servers": clusters["primary"]}), \
        admin_client({"bootstrap.servers": clusters["backup"]})
    create_topic(clusters["third"], f"noauth-{unique}", 1)
    source_acls = [
        acl(topic, "User:reader", AclOperation.READ), acl(topic, "User:writer", AclOperation.WRITE),
        acl(topic, "User:admin", AclOperation.ALL), acl(topic, "User:blocked", AclOperation.DESCRIBE, DENY),
        acl("acl-", "User:prefixed", AclOperation.READ, pattern=ResourcePatternType.PREFIXED),
        acl(other, "User:reader", AclOperation.READ),
    ]
    for future in source.create_acls(source_acls).values():
        future.result(30)
    remote = f"primary.{topic}"
    create_topic(clusters["backup"], remote, 1)  # pre-existing remote topic with a target-only ACL
    for future in target.create_acls([acl(remote, "User:local", AclOperation.READ)]).values():
        future.result(30)
    config = tmp_path / "mm2.properties"
    config.write_text(
        "clusters = primary, backup, third\n"
        f"primary.bootstrap.servers = {clusters['primary']}\n"
        f"backup.bootstrap.servers = {clusters['backup']}\n"
        f"third.bootstrap.servers = {clusters['third']}\n"
        "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
        "offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n"
        "primary->backup.enabled = true\nthird->backup.enabled = true\n"
        f"primary->backup.topics = {topic}\nthird->backup.topics = noauth-{unique}\n"
        "sync.topic.acls.interval.seconds = 1\n")
    expected = {("User:reader", AclOperation.READ, ALLOW), ("User:admin", AclOperation.READ, ALLOW),
                ("User:blocked", AclOperation.DESCRIBE, DENY), ("User:local", AclOperation.READ, ALLOW)}

    def target_acls():
        found = target.describe_acls(AclBindingFilter(TOPIC, remote, LITERAL, None, None, AclOperation.ANY,
                                                      AclPermissionType.ANY)).result(30)
        return {(b.principal, b.operation, b.permission_type) for b in found}

    with running_mirrorspark(config, tmp_path / "state") as mirror:
        wait_until(lambda: target_acls() == expected, "the synced ACLs on the remote topic")
        time.sleep(3)  # several more sync rounds: nothing added, nothing removed, one info line
        assert target_acls() == expected
        everything = target.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None,
                                                           None, AclOperation.ANY, AclPermissionType.ANY)).result(30)
        assert not [b for b in everything if b.principal == "User:prefixed" or b.name == f"primary.{other}"]
        assert mirror.output().count("the source cluster has no authorizer") == 1


# -- SSL and SASL listeners -----------------------------------------------------------------------
@pytest.fixture
def secure_cluster(tmp_path) -> Iterator:
    """Start one secured cluster per test, stopped (and removed) at its end."""
    local = LocalClusters(tmp_path / "secure")
    started: list[str] = []

    def start(name: str, options: SecurityOptions) -> dict[str, str]:
        local.up([ClusterSpec(name, security=options)])
        started.append(name)
        return local.client_settings(name)

    yield start
    local.down(started, purge=True)


def secured_lines(alias: str, settings: dict[str, str]) -> str:
    return "".join(f"{alias}.{key} = {value}\n" for key, value in settings.items())


@pytest.mark.broker
# The standalone-cluster case (about 2 minutes) runs with the drills: make test stays under 30 minutes.
@pytest.mark.parametrize("spark", ["local", pytest.param("standalone cluster", marks=pytest.mark.long)])
def test_replication_to_ssl_target(clusters, secure_cluster, tmp_path, unique, spark, request):
    """MM2's SSL variant: the target listens on TLS only; MM2 users' JKS truststore settings. On the
    standalone cluster the executors write through the truststore the driver shipped them."""
    tls = secure_cluster("tls", SecurityOptions("SSL"))
    master = f"spark.master = {request.getfixturevalue('spark_cluster')}\n" if spark != "local" else ""
    assert tls["ssl.truststore.type"] == "JKS"
    topic = f"tls-{unique}"
    create_topic(clusters["primary"], topic, 2)
    sent = records(40, 2, unique)
    produce(clusters["primary"], topic, sent)
    config = tmp_path / "mm2.properties"
    config.write_text("clusters = primary, tls\n"
                      f"primary.bootstrap.servers = {clusters['primary']}\n" + secured_lines("tls", tls) +
                      "replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n"
                      "offset-syncs.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n"
                      f"primary->tls.enabled = true\nprimary->tls.topics = {topic}\n" + master)
    target = librdkafka_admin(tls)
    with running_mirrorspark(config, tmp_path / "state") as mirror:
        wait_for_count(target, f"primary.{topic}", len(sent))
        if master:
            assert "Spark executors ready" in mirror.output()  # each checked for the shipped truststore
    got = read_all(target, f"primary.{topic}")
    assert sorted(r.content() for r in got) == sorted(r.content() for r in read_all(clusters["primary"], topic))


@pytest.mark.broker
def test_replication_from_sasl_scram_source(clusters, secure_cluster, tmp_path, unique):
    """SASL_PLAINTEXT with SCRAM-SHA-512 on the source, configured with sasl.jaas.config; a wrong
    password stops the run before any data moves, with a message naming the cluster."""
    sasl = secure_cluster("sasl", SecurityOptions("SASL_PLAINTEXT", "SCRAM-SHA-512"))
    source = librdkafka_admin(sasl)
    topic = f"sasl-{unique}"
    create_topic(source, topic, 1)
    sent = records(25, 1, unique)
    produce(source, topic, sent)
    config = tmp_path / "mm2.properties"
    body = (f"backup.bootstrap.servers = {clusters['backup']}\nreplication.factor = 1\n"
            "checkpoints.topic.replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n"
            "heartbeats.topic.replication.factor = 1\n"
            f"sasl->backup.enabled = true\nsasl->backup.topics = {topic}\n")
    config.write_text("clusters = sasl, backup\n" + secured_lines("sasl", sasl) + body)
    with running_mirrorspark(config, tmp_path / "state"):
        wait_for_count(clusters["backup"], f"sasl.{topic}", len(sent))
    assert [r.value for r in read_all(clusters["backup"], f"sasl.{topic}")] == [r["value"] for r in sent]

    wrong = dict(sasl, **{"sasl.jaas.config": sasl["sasl.jaas.config"].replace('password="', 'password="x')})
    config.write_text("clusters = sasl, backup\n" + secured_lines("sasl", wrong) + body)
    done = run_cli("run", str(config), "--state-dir", str(tmp_path / "state2"))
    assert done.returncode == 2  # a credential the cluster refuses: the file must change, no retry helps
    assert "cluster 'sasl' refused this client's credentials" in done.stderr
    assert "check sasl.sasl.jaas.config" in done.stderr
    assert wrong["sasl.jaas.config"].split('password="')[1].rstrip('";') not in done.stderr + done.stdout


@pytest.mark.broker
def test_a_strimzi_resource_runs_with_its_mounted_secrets(clusters, secure_cluster, tmp_path, unique):
    """A KafkaMirrorMaker2 resource (Strimzi's SCRAM-SHA-512 over TLS example's shape) runs as it is: the
    source's CA certificate and the user's password are read from Secret folders as Kubernetes mounts
    them, and no secret reaches the converted properties."""
    source = secure_cluster("scram", SecurityOptions("SASL_SSL", "SCRAM-SHA-512"))
    jaas = source["sasl.jaas.config"]
    user, password = re.search(r'username="([^"]+)"', jaas)[1], re.search(r'password="([^"]+)"', jaas)[1]
    secrets = tmp_path / "secrets"
    (secrets / "scram-cluster-ca-cert").mkdir(parents=True)
    (secrets / "scram-user").mkdir()
    ca = Path(source["ssl.truststore.location"]).with_name("ca.pem")  # the local cluster's CA, as PEM
    (secrets / "scram-cluster-ca-cert" / "ca.crt").write_bytes(ca.read_bytes())
    (secrets / "scram-user" / "password").write_text(password)
    topic = f"strimzi-{unique}"
    admin = librdkafka_admin(source)
    create_topic(admin, topic, 2)
    sent = records(30, 2, unique)
    produce(admin, topic, sent)
    resource = tmp_path / "kmm2.yaml"
    resource.write_text(f"""\
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaMirrorMaker2
metadata:
  name: my-mirror-maker-2
spec:
  version: 4.1.0
  replicas: 1
  connectCluster: "backup"
  clusters:
    - alias: "scram"
      bootstrapServers: {source['bootstrap.servers']}
      tls:
        trustedCertificates:
          - secretName: scram-cluster-ca-cert
            pattern: "*.crt"
      authentication:
        type: scram-sha-512
        username: {user}
        passwordSecret:
          secretName: scram-user
          password: password
    - alias: "backup"
      bootstrapServers: {clusters['backup']}
      config:
        config.storage.replication.factor: -1
  mirrors:
    - sourceCluster: "scram"
      targetCluster: "backup"
      sourceConnector:
        tasksMax: 1
        config:
          replication.factor: 1
          offset-syncs.topic.replication.factor: 1
          sync.topic.acls.enabled: "false"
      checkpointConnector:
        config:
          checkpoints.topic.replication.factor: 1
      topicsPattern: "{topic}"
      groupsPattern: ".*"
""")
    converted = run_cli("migrate", "from-strimzi", str(resource), "--secrets-dir", str(secrets))
    assert converted.returncode == 0, converted.stderr
    assert password not in converted.stdout and f"${{mounted:{secrets}/scram-user:password}}" in converted.stdout
    with running_mirrorspark(resource, tmp_path / "state", "--secrets-dir", str(secrets)) as mirror:
        wait_for_count(clusters["backup"], f"scram.{topic}", len(sent))
    assert sorted(r.content() for r in read_all(clusters["backup"], f"scram.{topic}")) == \
        sorted(r.content() for r in read_all(admin, topic))
    assert password not in mirror.output()


@pytest.mark.long  # minutes of one worker: in `make drills`, keeping `make test` under 30 minutes
@pytest.mark.broker
def test_replication_and_checkpoints_from_an_oauthbearer_source(clusters, secure_cluster, tmp_path, unique):
    """OAUTHBEARER with Kafka's client-credentials login against a real OIDC flow: the broker validates
    RS256 tokens against its JWKS, both planes (the JVM's login handler, librdkafka's OIDC method) get
    tokens from the token endpoint; records and a group's checkpoint cross, and the group's failover plan
    reads its offsets there. A wrong client secret, or an
    expired token, stops the run before any data moves (exit 2), naming the cluster (and the key), without
    echoing the secret."""
    from mirrorspark.control.groups import RdkafkaGroups
    from mirrorspark.local.security import Secrets

    source = secure_cluster("oauth", SecurityOptions("SASL_PLAINTEXT", "OAUTHBEARER"))  # its token endpoint too
    folder = next(p.parent for p in (tmp_path / "secure").rglob("oidc"))  # the cluster's folder
    secret = Secrets.load_or_create(folder).client_password

    def answers() -> list[str]:
        return (folder / "oidc" / "endpoint.log").read_text().splitlines()

    admin = librdkafka_admin(source)
    topic, group = f"oauth-{unique}", f"oauth-group-{unique}"
    create_topic(admin, topic, 2)
    sent = records(40, 2, unique)
    produce(admin, topic, sent)
    RdkafkaGroups(admin=admin_client(admin), cluster="oauth").commit(group, {(topic, 0): (10, ""),
                                                                             (topic, 1): (10, "")})
    config = tmp_path / "mm2.properties"
    body = (f"backup.bootstrap.servers = {clusters['backup']}\nreplication.factor = 1\n"
            "checkpoints.topic.replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n"
            "heartbeats.topic.replication.factor = 1\nemit.checkpoints.interval.seconds = 1\n"
            f"oauth->backup.enabled = true\noauth->backup.topics = {topic}\noauth->backup.groups = {group}\n")
    config.write_text("clusters = oauth, backup\n" + secured_lines("oauth", source) + body)
    with running_mirrorspark(config, tmp_path / "state"):
        wait_for_count(clusters["backup"], f"oauth.{topic}", len(sent))
        wait_for_count(clusters["backup"], "oauth.checkpoints.internal", 1)
    assert sorted(r.content() for r in read_all(clusters["backup"], f"oauth.{topic}")) == \
        sorted(r.content() for r in read_all(admin, topic))
    assert answers().count("granted mirrorspark") >= 2  # the control plane's and the JVM's logins
    # Issue 44: the group's failover plan reads its committed offsets on the OAuth cluster.
    plan = run_cli("failover", "--config", str(config), "--group", group, "--from", "oauth", "--to", "backup",
                   "--state-dir", str(tmp_path / "state"), "--json")
    assert plan.returncode == 0, plan.stderr[-3000:]
    rows = __import__("json").loads(plan.stdout)["partitions"]
    assert {(row["partition"], row["source_committed"]) for row in rows} == {(0, 10), (1, 10)}

    wrong = dict(source, **{"sasl.jaas.config": source["sasl.jaas.config"].replace(secret, "not-" + secret[4:])})
    config.write_text("clusters = oauth, backup\n" + secured_lines("oauth", wrong) + body)
    done = run_cli("run", str(config), "--state-dir", str(tmp_path / "state2"))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "cluster 'oauth' refused this client's credentials (check oauth.sasl.jaas.config" in done.stderr
    assert "refused" in answers() and "not-" + secret[4:] not in done.stderr + done.stdout

    # Issue 44: an expired token (a file token, Kafka's file: endpoint) fails as fast, naming the cluster.
    from mirrorspark.local.oidc import sign

    token = tmp_path / "expired.jwt"
    token.write_text(sign(folder, "mirrorspark", seconds=-120))
    expired = dict(source, **{"sasl.oauthbearer.token.endpoint.url": token.as_uri(),
                              "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                                                  "required;"})
    config.write_text("clusters = oauth, backup\n" + secured_lines("oauth", expired) + body)
    done = run_cli("run", str(config), "--state-dir", str(tmp_path / "state3"))
    output = done.stderr + done.stdout
    assert done.returncode == 2 and "cluster 'oauth'" in output and "Traceback" not in output, output[-3000:]
    assert not (tmp_path / "state3" / "flows").exists() or not any((tmp_path / "state3" / "flows").rglob("checkpoint"))
