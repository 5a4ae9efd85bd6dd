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


def test_java_client_keys_are_never_dropped_without_a_word():
    from mirrorspark.config import parse_config
    from mirrorspark.config.properties_file import parse_properties

    assert librdkafka_admin({"client.dns.lookup": "use_all_dns_ips"})["client.dns.lookup"] == "use_all_dns_ips"
    mirror = parse_config(parse_properties("clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\n"
                                           "A->B.enabled = true\nA.metric.reporters = com.example.Reporter\n"))
    assert any(w.startswith("A.metric.reporters: Spark's Java clients load these reporters") for w in mirror.warnings)
