"""The control plane on Kafka's Java clients: which clusters get them, what their settings become, and
the record batches and headers that cross py4j (the JVM side: RecordCodecTest, ClientErrorTest)."""
from __future__ import annotations

import json

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, KafkaError

from mirrorspark.config import parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.control.client_settings import admin_settings, java_only
from mirrorspark.control.java_clients import (
    _CONSUMER_KEYS,
    JAVA_CLASSPATH,
    JAVA_PROPERTIES,
    _split,
    decode_records,
    encode_headers,
    uses_java,
)
from mirrorspark.errors import ConfigError

KERBEROS = ('B.security.protocol = SASL_SSL\nB.sasl.kerberos.service.name = kafka\n'
            'B.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true '
            'keyTab="/etc/mm2.keytab" principal="mm2@EXAMPLE.COM";\n')
BASE = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9093\nA->B.enabled = true\n"


def cluster(text: str, alias: str = "B"):
    return parse_config(parse_properties(BASE + text)).clusters[alias]


@pytest.mark.parametrize(("props", "java"), [
    ({"security.protocol": "SASL_SSL"}, True),  # GSSAPI is the Java default mechanism
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}, True),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM",
      "sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler"}, True),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
      "sasl.login.callback.handler.class": "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler"}, True),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
      "sasl.login.callback.handler.class":
          "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
      "sasl.oauthbearer.token.endpoint.url": "https://idp/token"}, False),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
      "sasl.login.callback.handler.class":
          "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
      "sasl.oauthbearer.token.endpoint.url": "file:///run/token"}, True),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}, False),
    ({"security.protocol": "SSL", "ssl.engine.factory.class": "com.example.Engine"}, True),
    ({"security.protocol": "SSL", "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, True),
    ({"security.protocol": "SSL", "ssl.truststore.type": "BCFKS"}, True),
    ({"security.protocol": "SSL", "ssl.truststore.type": "PKCS12"}, False),
    ({"security.protocol": "PLAINTEXT", "ssl.engine.factory.class": "com.example.Engine"}, False),
])
def test_only_what_librdkafka_cannot_honour_goes_to_the_java_clients_under_auto(props, java):
    assert java_only(props) is java


def test_a_kerberos_cluster_gets_the_java_clients_with_its_settings_unchanged():
    conf = admin_settings(cluster(KERBEROS))
    assert uses_java(conf) and conf["bootstrap.servers"] == "b:9093"
    props = json.loads(conf[JAVA_PROPERTIES])
    assert props["sasl.jaas.config"].startswith("com.sun.security.auth.module.Krb5LoginModule required")
    assert props["sasl.kerberos.service.name"] == "kafka" and "sasl.mechanisms" not in props
    assert uses_java(admin_settings(cluster(KERBEROS, "A")))  # the default: one client stack for every cluster
    auto = KERBEROS + "mirrorspark.control.clients = auto\n"
    assert uses_java(admin_settings(cluster(auto))) and not uses_java(admin_settings(cluster(auto, "A")))


def test_java_clients_refuse_what_the_java_client_would_only_fail_on_at_connect(tmp_path):
    """Under the Java clients a PLAIN cluster without a JAAS entry, or with another mechanism's, is
    refused naming the key before a client is made, as under librdkafka."""
    with pytest.raises(ConfigError) as refused:
        admin_settings(cluster("B.security.protocol = SASL_PLAINTEXT\nB.sasl.mechanism = PLAIN\n"))
    assert refused.value.key == "B.sasl.jaas.config"
    with pytest.raises(ConfigError) as wrong:
        admin_settings(cluster("B.security.protocol = SASL_PLAINTEXT\nB.sasl.mechanism = SCRAM-SHA-512\n"
                               'B.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required '
                               'username="u" password="p";\n'))
    assert wrong.value.key == "B.sasl.jaas.config"
    missing = tmp_path / "no-such.jks"
    with pytest.raises(ConfigError) as store:
        admin_settings(cluster(f"B.security.protocol = SSL\nB.ssl.truststore.location = {missing}\n"))
    assert store.value.key == "B.ssl.truststore.location"


def test_the_choice_can_be_forced_either_way():
    java = admin_settings(cluster("mirrorspark.control.clients = java\n", "A"))
    assert uses_java(java) and json.loads(java[JAVA_PROPERTIES]) == {"bootstrap.servers": "a:9092"}
    with pytest.raises(ConfigError) as refused:  # librdkafka cannot speak Kerberos: said, naming the key
        admin_settings(cluster(KERBEROS + "mirrorspark.control.clients = librdkafka\n"))
    assert refused.value.key == "B.sasl.mechanism"
    with pytest.raises(ConfigError) as wrong:
        parse_config(parse_properties(BASE + "mirrorspark.control.clients = jvm\n"))
    assert wrong.value.key == "mirrorspark.control.clients"


def test_a_handler_class_no_jar_holds_is_refused_naming_the_key(tmp_path):
    iam = ("B.security.protocol = SASL_SSL\nB.sasl.mechanism = AWS_MSK_IAM\n"
           "B.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required;\n"
           "B.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler\n")
    with pytest.raises(ConfigError) as missing:
        admin_settings(cluster(iam + f"plugin.path = {tmp_path}\n"))
    assert missing.value.key == "B.sasl.client.callback.handler.class" and "plugin.path" in str(missing.value)
    import zipfile
    with zipfile.ZipFile(tmp_path / "aws-msk-iam-auth.jar", "w") as jar:
        jar.writestr("software/amazon/msk/auth/iam/IAMClientCallbackHandler.class", b"\xca\xfe")
    conf = admin_settings(cluster(iam + f"plugin.path = {tmp_path}\n"))
    assert str(tmp_path / "aws-msk-iam-auth.jar") in conf[JAVA_CLASSPATH].split(":")


def test_settings_mirrorspark_adds_take_their_java_names():
    conf = {JAVA_PROPERTIES: json.dumps({"bootstrap.servers": "b:1"}), "group.id": "g", "enable.auto.commit": False,
            "auto.offset.reset": "error", "enable.partition.eof": True, "logger": object(), "error_cb": print,
            "isolation.level": "read_committed", "partition.assignment.strategy": "cooperative-sticky"}
    props, classpath = _split(conf, _CONSUMER_KEYS)
    assert props == {"bootstrap.servers": "b:1", "group.id": "g", "enable.auto.commit": "false",
                     "auto.offset.reset": "none", "isolation.level": "read_committed",
                     "partition.assignment.strategy": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}
    assert classpath == []


# The bytes RecordCodecTest.ONE_RECORD pins on the JVM side: topic "t", partition 2, offset 5, CreateTime 123,
# a null key, value "v1", one header "h" with a null value.
ONE_RECORD = bytes.fromhex("00000001" "00000001" "74" "00000002" "0000000000000005" "01" "000000000000007b"
                           "ffffffff" "00000002" "7631" "00000001" "00000001" "68" "ffffffff" "00000000")


def test_a_batch_from_the_jvm_becomes_messages():
    (message,) = decode_records(ONE_RECORD)
    assert (message.topic(), message.partition(), message.offset()) == ("t", 2, 5)
    assert message.timestamp() == (TIMESTAMP_CREATE_TIME, 123)
    assert message.key() is None and message.value() == b"v1" and message.headers() == [("h", None)]
    assert decode_records(bytes(8)) == []
    (end,) = decode_records(bytes.fromhex("00000000" "00000001" "00000001" "74" "00000003" "0000000000000009"))
    assert end.error().code() == KafkaError._PARTITION_EOF
    assert (end.topic(), end.partition(), end.offset()) == ("t", 3, 9)


def test_sends_are_packed_as_the_jvm_reads_them():
    """RecordCodecTest.ONE_SEND: the same bytes, read by the JVM."""
    import struct

    from mirrorspark.control.java_clients import encode_send

    packed = struct.pack(">i", 1) + encode_send(7, "t", 2, None, b"v", None, -1)
    assert packed.hex() == ("00000001" "0000000000000007" "00000001" "74" "00000002" "ffffffff" "00000001" "76"
                            "ffffffff" "ffffffffffffffff")


def test_headers_are_packed_as_the_jvm_reads_them():
    assert encode_headers([("seq", b"\x01\x02"), ("x", None)]) == bytes.fromhex(
        "00000002" "00000003" "736571" "00000002" "0102" "00000001" "78" "ffffffff")
    assert encode_headers({"k": "é"}) == bytes.fromhex("00000001" "00000001" "6b" "00000002" "c3a9")


def test_a_cluster_that_does_not_answer_fails_as_librdkafka_says_it_through_the_jvm():
    """No broker needed: Kafka's clients in the client JVM time out against a closed port, and the
    failure reaches Python as the KafkaException librdkafka raises (code ``_TIMED_OUT``, retriable), on
    the same calls the control plane makes."""
    from confluent_kafka import KafkaException, TopicPartition

    from mirrorspark.control.admin import admin_client, consumer, not_answering
    from mirrorspark.control.client_settings import java_conf

    conf = java_conf({"bootstrap.servers": "127.0.0.1:1", "request.timeout.ms": "500",
                      "default.api.timeout.ms": "800"}, [])
    admin = admin_client(conf)
    with pytest.raises(KafkaException) as caught:
        admin.list_topics(timeout=1)
    error = caught.value.args[0]
    assert error.code() == KafkaError._TIMED_OUT and error.retriable() and not_answering(caught.value)
    assert error.str().startswith("describing the cluster: org.apache.kafka.common.errors.TimeoutException")
    with pytest.raises(KafkaException):
        admin.describe_cluster(request_timeout=1).result()
    reader = consumer({**conf, "group.id": "never"})
    try:
        with pytest.raises(KafkaException) as watermarks:
            reader.get_watermark_offsets(TopicPartition("t", 0), timeout=1)
        assert watermarks.value.args[0].code() == KafkaError._TIMED_OUT
    finally:
        reader.close()
    admin.close()


def test_a_flush_sends_waits_and_delivers_in_one_call_into_the_jvm(monkeypatch):
    """A heartbeat a second per cluster pair, each a produce and a flush: three calls into the client JVM
    each were most of an idle flow's calls there. The flush now sends what is left, waits, and hands
    each outcome to its callback in one."""
    from mirrorspark.control import java_clients
    from mirrorspark.control.admin import producer
    from mirrorspark.control.client_settings import java_conf

    conf = java_conf({"bootstrap.servers": "127.0.0.1:1", "request.timeout.ms": "500", "max.block.ms": "300"}, [])
    sender = producer({**conf, "linger.ms": 0})
    sender.flush(5)  # the client JVM and its producer made before counting
    calls: list[str] = []
    real = java_clients._call
    monkeypatch.setattr(java_clients, "_call", lambda what, thunk: (calls.append(what), real(what, thunk))[1])
    said = []
    sender.produce("t", b"v", on_delivery=lambda error, message: said.append((error, message.topic())))
    assert sender.flush(10) == 0
    assert calls == ["flushing"]
    assert len(said) == 1 and said[0][0].code() == KafkaError._TIMED_OUT and said[0][1] == "t"
    assert sender.flush(1) == 0 and len(said) == 1  # nothing unsent: a flush alone, each outcome said once
    sender.close()


def test_clients_outlive_their_jvm(caplog):
    """The client JVM killed (kill -9, as the OOM killer does): the call in flight fails as a broken
    connection does (retriable), the next one is answered by Kafka's client in a new JVM; a reader goes
    on from where it was, a send not yet handed over goes to the new JVM (one whose outcome died with
    the old one is reported failed, retriable)."""
    import os
    import signal

    from confluent_kafka import KafkaException, TopicPartition

    from mirrorspark.control.admin import admin_client, consumer, producer
    from mirrorspark.control.client_settings import java_conf

    conf = java_conf({"bootstrap.servers": "127.0.0.1:1", "request.timeout.ms": "500",
                      "default.api.timeout.ms": "800"}, [])
    admin = admin_client(conf)
    reader = consumer({**conf, "group.id": "never"})
    reader.assign([TopicPartition("t", 0, 5)])
    sender = producer({**conf, "linger.ms": 0})
    said = []
    sender.produce("t", b"v", on_delivery=lambda error, message: said.append(error))
    first = admin._home
    os.kill(first.proc.pid, signal.SIGKILL)
    first.proc.wait(10)
    with pytest.raises(KafkaException) as caught:
        admin.list_topics(timeout=1)
    assert caught.value.args[0].code() == KafkaError._TIMED_OUT  # asked, in a new JVM
    assert admin._home is not first and admin._home.alive()
    assert "exited with code" in caplog.text
    assert [(tp.topic, tp.partition) for tp in reader.assignment()] == [("t", 0)]  # assigned again, in the new JVM
    assert reader._home is admin._home and reader._next == {("t", 0): 5}
    sender.poll(0)  # the send not yet handed to the dead JVM goes to the new one, whose client answers
    assert len(said) == 1 and said[0].code() == KafkaError._TIMED_OUT and "not present in metadata" in said[0].str()
    for client in (reader, sender, admin):
        client.close()


def test_pysparks_exception_hook_does_not_take_the_client_jvms_errors(monkeypatch):
    """pyspark replaces py4j's answer reader for every gateway (and asks Spark's JVM about the
    exception): a Java client's failure still comes back as the KafkaException librdkafka raises."""
    import py4j.java_gateway
    from confluent_kafka import KafkaException
    from pyspark.errors.exceptions.captured import install_exception_handler

    from mirrorspark.control.admin import admin_client
    from mirrorspark.control.client_settings import java_conf

    monkeypatch.setattr(py4j.java_gateway, "get_return_value", py4j.java_gateway.get_return_value)
    admin = admin_client(java_conf({"bootstrap.servers": "127.0.0.1:1", "request.timeout.ms": "500",
                                    "default.api.timeout.ms": "800"}, []))
    install_exception_handler()  # as a Spark session's start does, after the client JVM started
    with pytest.raises(KafkaException) as caught:
        admin.list_topics(timeout=1)
    assert caught.value.args[0].code() == KafkaError._TIMED_OUT
    admin.close()


def test_a_per_item_answer_settles_each_item_as_a_future_does():
    from concurrent.futures import Future

    from mirrorspark.control.java_clients import _each

    found = _each({"t:0": {"ok": [5, -1, 0]}, "t:1": {"error": [KafkaError.NOT_LEADER_FOR_PARTITION, True, "moving"]}},
                  lambda _, row: row[0])
    ok, failed = found["t:0"], found["t:1"]
    assert isinstance(ok, Future) and ok.done() and not ok.cancelled() and not ok.running()
    assert ok.result() == 5 and ok.exception() is None
    with pytest.raises(Exception) as raised:
        failed.result(timeout=1)
    assert raised.value.args[0].code() == KafkaError.NOT_LEADER_FOR_PARTITION
    assert failed.exception() is raised.value
    seen = []
    ok.add_done_callback(seen.append)
    assert seen == [ok]  # called at once: the answer is there
    with pytest.raises(RuntimeError):
        ok.set_result(6)
