"""Client security only Kafka's Java clients speak, end to end on both planes: Kerberos against a real
MIT KDC (Debian's krb5-kdc) and a SASL client callback handler compiled here and loaded from
plugin.path, the shape AWS MSK IAM has. The control plane asks through Kafka's Java clients for
these clusters (``control/java_clients.py``), Spark's clients take the same keys; a wrong keytab is
refused before data moves, naming the cluster and the key."""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from helpers.kafka import create_topic, produce, read_all, wait_for_count
from helpers.processes import MIRRORSPARK, run_cli, running_mirrorspark
from helpers.records import records

from mirrorspark import paths
from mirrorspark.control.admin import admin_client, consumer
from mirrorspark.control.client_settings import java_conf
from mirrorspark.control.groups import RdkafkaGroups
from mirrorspark.local import ClusterSpec, LocalClusters
from mirrorspark.local.security import SecurityOptions

pytestmark = pytest.mark.broker

BODY = ("replication.factor = 1\ncheckpoints.topic.replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n"
        "heartbeats.topic.replication.factor = 1\nemit.checkpoints.interval.seconds = 1\n"
        "sync.group.offsets.enabled = true\nsync.group.offsets.interval.seconds = 1\n")


@pytest.fixture
def secure_cluster(tmp_path) -> Iterator:
    local = LocalClusters(tmp_path / "secure")
    started: list[str] = []

    def start(name: str, options: SecurityOptions) -> tuple[dict[str, str], Path]:
        local.up([ClusterSpec(name, security=options)])
        started.append(name)
        return local.client_settings(name), local.folder(name)

    yield start
    local.down(started, purge=True)


def lines(alias: str, settings: dict[str, str]) -> str:
    return "".join(f"{alias}.{key} = {value}\n" for key, value in settings.items())


@pytest.mark.skipif(shutil.which("krb5kdc") is None and not Path("/usr/sbin/krb5kdc").exists(),
                    reason="no MIT KDC on this machine (make setup installs krb5-kdc when it runs as root)")
# SASL_PLAINTEXT is a drill (`make drills`), keeping `make test` under 30 minutes; SASL_SSL runs in both
@pytest.mark.parametrize("protocol", [pytest.param("SASL_PLAINTEXT", marks=pytest.mark.long), "SASL_SSL"])
def test_kerberos_source_replicates_checkpoints_and_syncs_groups(clusters, secure_cluster, tmp_path, unique,
                                                                  monkeypatch, protocol):
    """GSSAPI with a keytab, as MM2 users configure it (Krb5LoginModule in sasl.jaas.config, the realm
    from KRB5_CONFIG): records, a group's checkpoint, its synced offset and the topic's ACL cross, and the
    group's failover plan reads its offsets on the Kerberos cluster; the control plane's
    requests and Spark's consumers log in to the KDC; the plain target is asked through Kafka's Java
    clients too (``mirrorspark.control.clients = java``: the lease, checkpoints, group sync). A keytab
    that does not hold the principal stops the run before any data moves (exit 2) naming the cluster
    and the key."""
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    from mirrorspark.local import kerberos

    # over TLS too, and with an authorizer whose topic ACLs are synced (issue 44)
    kerb, folder = secure_cluster("kerb", SecurityOptions(protocol, "GSSAPI", authorizer=True))
    monkeypatch.setenv("KRB5_CONFIG", str(kerberos.krb5_conf(folder)))  # for every JVM started from here
    source = java_conf(kerb, [])
    topic, group = f"krb-{unique}", f"krb-group-{unique}"
    create_topic(source, topic, 2)
    sent = records(40, 2, unique)
    produce(source, topic, sent)
    RdkafkaGroups(admin=admin_client(source), cluster="kerb").commit(group, {(topic, 0): (10, ""), (topic, 1): (8, "")})
    reader_acl = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, f"User:reader-{unique}", "*",
                            AclOperation.READ, AclPermissionType.ALLOW)
    for future in admin_client(source).create_acls([reader_acl]).values():
        future.result(30)
    target_admin = admin_client({"bootstrap.servers": clusters["backup"]})

    def synced_acls() -> set[tuple[str, AclOperation]]:
        found = target_admin.describe_acls(AclBindingFilter(
            ResourceType.TOPIC, f"kerb.{topic}", ResourcePatternType.LITERAL, None, None, AclOperation.ANY,
            AclPermissionType.ANY)).result(30)
        return {(b.principal, b.operation) for b in found}
    issued_before = (folder / "kerberos" / "kdc.log").read_text().count("ISSUE:")
    config = tmp_path / "mm2.properties"
    # The target's control plane too on Kafka's Java clients: the lease, checkpoints and group sync.
    body = (f"backup.bootstrap.servers = {clusters['backup']}\n" + BODY + "mirrorspark.control.clients = java\n"
            f"kerb->backup.enabled = true\nkerb->backup.topics = {topic}\nkerb->backup.groups = {group}\n"
            "sync.topic.acls.interval.seconds = 1\n")
    config.write_text("clusters = kerb, backup\n" + lines("kerb", kerb) + body)
    with running_mirrorspark(config, tmp_path / "state"):
        wait_for_count(clusters["backup"], f"kerb.{topic}", len(sent))
        wait_for_count(clusters["backup"], "kerb.checkpoints.internal", 1)
        reader = consumer({"bootstrap.servers": clusters["backup"], "group.id": group})
        try:
            from helpers.waiting import wait_until

            def synced() -> bool:
                found = reader.committed([TopicPartition(f"kerb.{topic}", 0), TopicPartition(f"kerb.{topic}", 1)],
                                         timeout=10)
                return [tp.offset for tp in found] == [10, 8]

            wait_until(synced, timeout=90, what="the group's offsets synced to the target")
            wait_until(lambda: (f"User:reader-{unique}", AclOperation.READ) in synced_acls(), timeout=60,
                       what="the source topic's ACL synced over Kerberos")
        finally:
            reader.close()
    assert sorted(r.content() for r in read_all(clusters["backup"], f"kerb.{topic}")) == \
        sorted(r.content() for r in read_all(source, topic))
    issued = (folder / "kerberos" / "kdc.log").read_text().count("ISSUE:")
    assert issued - issued_before >= 2  # the control plane's login and Spark's consumers' (tickets from the KDC)
    # Issue 44: failing the group over reads its committed offsets on the Kerberos cluster (the failover
    # command asks clusters as the control plane does: Kafka's Java clients), as MM2's tooling would.
    plan = run_cli("failover", "--config", str(config), "--group", group, "--from", "kerb", "--to", "backup",
                   "--state-dir", str(tmp_path / "state"), "--json")
    assert plan.returncode == 0, plan.stderr[-3000:]
    body_json = __import__("json").loads(plan.stdout)
    assert body_json["from_reachable"] is True
    assert {(row["partition"], row["source_committed"], row["translated"]) for row in body_json["partitions"]} == {
        (0, 10, 10), (1, 8, 8)}

    wrong = dict(kerb, **{"sasl.jaas.config": kerb["sasl.jaas.config"].replace("client.keytab", "broker.keytab")})
    config.write_text("clusters = kerb, backup\n" + lines("kerb", wrong) + body)
    done = run_cli("run", str(config), "--state-dir", str(tmp_path / "state2"))
    assert done.returncode == 2, done.stderr[-3000:]
    assert "cluster 'kerb' refused this client's credentials (check kerb.sasl.jaas.config" in done.stderr
    assert "Traceback" not in done.stderr


HANDLER = """
package test.iamshape;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.PasswordCallback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.scram.ScramExtensionsCallback;

/** Credentials made by code at login time, from a file the JAAS entry names (as MSK IAM signs them). */
public class FileCredentialsHandler implements AuthenticateCallbackHandler {
    private String user;
    private String password;

    @Override
    public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> entries) {
        try {
            String file = (String) entries.get(0).getOptions().get("credentialsFile");
            List<String> lines = Files.readAllLines(Path.of(file));
            user = lines.get(0);
            password = lines.get(1);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
        for (Callback c : callbacks) {
            if (c instanceof NameCallback) {
                ((NameCallback) c).setName(user);
            } else if (c instanceof PasswordCallback) {
                ((PasswordCallback) c).setPassword(password.toCharArray());
            } else if (!(c instanceof ScramExtensionsCallback)) {
                throw new UnsupportedCallbackException(c);
            }
        }
    }

    @Override
    public void close() {
    }
}
"""


def test_a_client_callback_handler_from_plugin_path_authenticates_both_planes(clusters, secure_cluster, tmp_path,
                                                                               unique):
    """MSK IAM's shape: a login module without credentials and a sasl.client.callback.handler.class that
    makes them; the class is compiled here into a jar under plugin.path, and both planes log in with
    it (mirrorspark's control plane in its client JVM, Spark's consumers through spark.jars)."""
    scram, _ = secure_cluster("handled", SecurityOptions("SASL_PLAINTEXT", "SCRAM-SHA-512"))
    plugins = tmp_path / "plugins"
    (plugins / "src" / "test" / "iamshape").mkdir(parents=True)
    (plugins / "src" / "test" / "iamshape" / "FileCredentialsHandler.java").write_text(HANDLER)
    clients_jar = next(paths.kafka_libs().glob("kafka-clients-*.jar"))
    subprocess.run(["javac", "-d", str(plugins / "classes"), "-cp", str(clients_jar),
                    str(plugins / "src" / "test" / "iamshape" / "FileCredentialsHandler.java")], check=True)
    subprocess.run(["jar", "cf", str(plugins / "iam-shape.jar"), "-C", str(plugins / "classes"), "."], check=True)
    shutil.rmtree(plugins / "src")
    shutil.rmtree(plugins / "classes")
    password = scram["sasl.jaas.config"].split('password="')[1].split('"')[0]
    credentials = tmp_path / "credentials"
    credentials.write_text(f"mirrorspark\n{password}\n")
    credentials.chmod(0o600)
    handled = {"bootstrap.servers": scram["bootstrap.servers"], "security.protocol": "SASL_PLAINTEXT",
               "sasl.mechanism": "SCRAM-SHA-512",
               "sasl.jaas.config": f'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                   f'credentialsFile="{credentials}";',
               "sasl.client.callback.handler.class": "test.iamshape.FileCredentialsHandler"}
    source = {k: v for k, v in scram.items()}
    from mirrorspark.control.client_settings import librdkafka_admin

    topic = f"handled-{unique}"
    create_topic(librdkafka_admin(source), topic, 2)
    sent = records(30, 2, unique)
    produce(librdkafka_admin(source), topic, sent)
    config = tmp_path / "mm2.properties"
    config.write_text("clusters = handled, backup\n" + lines("handled", handled) +
                      f"plugin.path = {plugins}\nbackup.bootstrap.servers = {clusters['backup']}\n" + BODY +
                      f"handled->backup.enabled = true\nhandled->backup.topics = {topic}\n")
    done = run_cli("validate", str(config), "--offline")
    assert done.returncode == 0, done.stderr
    assert password not in done.stdout + done.stderr
    with running_mirrorspark(config, tmp_path / "state"):
        wait_for_count(clusters["backup"], f"handled.{topic}", len(sent))
    assert sorted(r.content() for r in read_all(clusters["backup"], f"handled.{topic}")) == \
        sorted(r.content() for r in read_all(librdkafka_admin(source), topic))

    (plugins / "iam-shape.jar").unlink()  # the class is nowhere: refused naming the key, before anything runs
    done = run_cli("run", str(config), "--state-dir", str(tmp_path / "state2"))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "handled.sasl.client.callback.handler.class = 'test.iamshape.FileCredentialsHandler': no jar of " \
           "plugin.path or spark.jars holds this class" in done.stderr

    # AWS's own handler, from Maven Central with its dependencies, as MSK users put it on plugin.path: it
    # loads, configures and signs; this broker has no AWS_MSK_IAM (no MSK endpoint is reachable here), and
    # says so to the handler's login, which the start reports naming the cluster.
    iam = tmp_path / "iam"
    iam.mkdir()
    (iam / "pom.xml").write_text(IAM_POM)
    subprocess.run(["mvn", "-B", "-q", "-Dstyle.color=never", "-f", str(iam / "pom.xml"),
                    "dependency:copy-dependencies", f"-DoutputDirectory={iam / 'lib'}",
                    "-DexcludeArtifactIds=kafka-clients"], check=True, timeout=600)
    msk = {"bootstrap.servers": scram["bootstrap.servers"], "security.protocol": "SASL_PLAINTEXT",
           "sasl.mechanism": "AWS_MSK_IAM", "sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
           "sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler"}
    config.write_text("clusters = msk, backup\n" + lines("msk", msk) + f"plugin.path = {iam / 'lib'}\n"
                      f"backup.bootstrap.servers = {clusters['backup']}\n" + BODY +
                      f"msk->backup.enabled = true\nmsk->backup.topics = {topic}\n")
    done = subprocess.run([*MIRRORSPARK, "validate", str(config)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
                               "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                               "AWS_REGION": "eu-west-1"})
    assert done.returncode == 2, done.stderr[-2000:]
    assert "cluster 'msk' refused this client's credentials" in done.stderr
    assert "Client SASL mechanism 'AWS_MSK_IAM' not enabled in the server" in done.stderr


IAM_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>test</groupId><artifactId>msk-iam</artifactId><version>1</version><packaging>pom</packaging>
<dependencies><dependency><groupId>software.amazon.msk</groupId><artifactId>aws-msk-iam-auth</artifactId>
<version>2.3.2</version></dependency></dependencies></project>
"""
