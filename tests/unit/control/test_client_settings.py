"""Mapping MM2 users' Java security settings onto the control plane's client."""
from __future__ import annotations

import pytest

from mirrorspark.control.client_settings import librdkafka_admin, parse_jaas
from mirrorspark.errors import ConfigError


def test_jaas_and_truststore_mapping_errors(tmp_path):
    module, options = parse_jaas('org.apache.kafka.common.security.scram.ScramLoginModule required '
                                 'username="u" password="p\\"q";', "k")
    assert module.endswith("ScramLoginModule") and options == {"username": "u", "password": 'p"q'}
    base = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}
    with pytest.raises(ConfigError) as err:
        librdkafka_admin({**base, "sasl.jaas.config": "nonsense"}, "A.")
    assert err.value.key == "A.sasl.jaas.config" and "nonsense" not in str(err.value)
    with pytest.raises(ConfigError) as err:
        librdkafka_admin({**base, "sasl.mechanism": "GSSAPI"}, "A.")
    assert err.value.key == "A.sasl.mechanism"
    with pytest.raises(ConfigError) as err:
        librdkafka_admin({**base, "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule '
                                                      'required username="u" password="p";'}, "A.")
    assert "PlainLoginModule" in str(err.value)
    with pytest.raises(ConfigError) as err:
        librdkafka_admin({"security.protocol": "SSL", "ssl.truststore.location": str(tmp_path / "none.jks")}, "B.")
    assert err.value.key == "B.ssl.truststore.location" and "does not exist" in str(err.value)


OIDC = {"bootstrap.servers": "b:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/oauth2/token",
        "sasl.jaas.config": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                            'clientId="mm2" clientSecret="s3cr3t" scope="kafka" extension_logicalCluster="lkc-1";'}


def test_oauthbearer_client_credentials_mean_the_same_to_the_control_plane():
    conf = librdkafka_admin(OIDC, "A.")
    assert conf["sasl.mechanisms"] == "OAUTHBEARER" and conf["sasl.oauthbearer.method"] == "oidc"
    assert conf["sasl.oauthbearer.client.id"] == "mm2" and conf["sasl.oauthbearer.client.secret"] == "s3cr3t"
    assert conf["sasl.oauthbearer.token.endpoint.url"] == "https://idp.example.com/oauth2/token"
    assert conf["sasl.oauthbearer.scope"] == "kafka"
    assert conf["sasl.oauthbearer.extensions"] == "logicalCluster=lkc-1"
    kip1139 = {**OIDC, "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
               "required;", "sasl.oauthbearer.client.credentials.client.id": "mm2",
               "sasl.oauthbearer.client.credentials.client.secret": "s3cr3t"}
    assert librdkafka_admin(kip1139, "A.")["sasl.oauthbearer.client.id"] == "mm2"


@pytest.mark.parametrize(("change", "key"), [
    ({"sasl.login.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler"},
     "A.sasl.login.callback.handler.class"),
    ({"sasl.login.callback.handler.class": ""}, "A.sasl.login.callback.handler.class"),
    ({"sasl.oauthbearer.token.endpoint.url": "file:///var/run/token.jwt"}, "A.sasl.oauthbearer.token.endpoint.url"),
    ({"sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"},
     "A.sasl.jaas.config"),
])
def test_an_oauthbearer_login_the_control_plane_cannot_run_is_refused_naming_the_key(change, key):
    with pytest.raises(ConfigError) as caught:
        librdkafka_admin({**OIDC, **change}, "A.")
    assert caught.value.key == key and "s3cr3t" not in str(caught.value)


def test_java_client_keys_are_never_dropped_without_a_word(tmp_path):
    """Issue 44: ``metric.reporters`` reaches every client of the cluster, the control plane's included,
    as MM2 gives its cluster settings to each client; a reporter no jar holds is refused naming the key."""
    from mirrorspark.config import parse_config
    from mirrorspark.config.properties_file import parse_properties
    from mirrorspark.control.client_settings import admin_settings, java_only
    from mirrorspark.control.java_clients import JAVA_PROPERTIES

    assert librdkafka_admin({"client.dns.lookup": "use_all_dns_ips"})["client.dns.lookup"] == "use_all_dns_ips"
    text = ("clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n"
            "metric.reporters = org.apache.kafka.common.metrics.JmxReporter\n")
    mirror = parse_config(parse_properties(text))
    flow = mirror.flows[0]
    for props in (flow.source_consumer(), flow.target_producer()):
        assert props["metric.reporters"] == "org.apache.kafka.common.metrics.JmxReporter"
    import json
    assert json.loads(admin_settings(mirror.clusters["A"])[JAVA_PROPERTIES])["metric.reporters"] == \
        "org.apache.kafka.common.metrics.JmxReporter"
    assert not java_only({"metric.reporters": "org.apache.kafka.common.metrics.JmxReporter"})
    assert java_only({"metric.reporters": "com.example.Reporter"})  # auto: only Kafka's Java clients load it
    mine = parse_config(parse_properties(text + "A.metric.reporters = com.example.Reporter\n"
                                         f"plugin.path = {tmp_path}\n"))
    with pytest.raises(ConfigError) as caught:
        admin_settings(mine.clusters["A"])
    assert caught.value.key == "A.metric.reporters"
