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
