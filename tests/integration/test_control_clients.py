"""The control plane's two admin clients against a real broker: Kafka's Java Admin answers topic ids,
leaders and partition counts alone (asked every few seconds, or of every partition at each topic
refresh), and must answer what librdkafka's whole descriptions say."""
from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient
from helpers.kafka import create_topic
from helpers.waiting import wait_until

from mirrorspark.control.admin import topic_ids, topic_layout, topic_partitions
from mirrorspark.control.java_clients import JAVA_PROPERTIES, JavaAdminClient

pytestmark = pytest.mark.broker


def test_java_topic_ids_match_librdkafkas_and_follow_a_recreated_topic(clusters, unique):
    bootstrap = clusters["primary"]
    kept, recreated, missing = f"ids-kept-{unique}", f"ids-recreated-{unique}", f"ids-missing-{unique}"
    create_topic(bootstrap, kept, 3)
    create_topic(bootstrap, recreated, 2)
    java = JavaAdminClient({JAVA_PROPERTIES: json.dumps({"bootstrap.servers": bootstrap})})
    librdkafka = AdminClient({"bootstrap.servers": bootstrap})
    wanted = [kept, recreated, missing]

    before = topic_ids(java, wanted)
    assert set(before) == {kept, recreated}  # a topic that does not exist is left out, not an error
    # The same ids as librdkafka's whole description, which writes Kafka's base64 with + and / for - and _
    assert before == {t: i.replace("+", "-").replace("/", "_") for t, i in topic_ids(librdkafka, wanted).items()}
    assert all(len(topic_id) > 10 for topic_id in before.values())
    layout = topic_layout(java, wanted)  # ids and each partition's leader, without the replicas' nodes
    assert {t: i for t, (i, _) in layout.items()} == before and sorted(layout[kept][1]) == [0, 1, 2]
    assert all(leader >= 0 for leader in layout[kept][1].values())
    assert layout == topic_layout(librdkafka, wanted)  # as librdkafka's whole description says

    for future in librdkafka.delete_topics([recreated], operation_timeout=30).values():
        future.result(60)
    wait_until(lambda: recreated not in topic_ids(java, wanted), "the deleted topic to be gone", timeout=60)
    create_topic(bootstrap, recreated, 2)
    wait_until(lambda: recreated in topic_ids(java, wanted), "the re-created topic to be listed", timeout=60)
    after = topic_ids(java, wanted)
    assert after[kept] == before[kept] and after[recreated] != before[recreated]
    assert topic_ids(java, []) == {}


def test_java_partition_counts_match_librdkafkas_metadata(clusters, unique):
    bootstrap = clusters["primary"]
    create_topic(bootstrap, f"counts-a-{unique}", 1)
    create_topic(bootstrap, f"counts-b-{unique}", 7)
    java = topic_partitions(JavaAdminClient({JAVA_PROPERTIES: json.dumps({"bootstrap.servers": bootstrap})}))
    librdkafka = topic_partitions(AdminClient({"bootstrap.servers": bootstrap}))
    assert java[f"counts-a-{unique}"] == 1 and java[f"counts-b-{unique}"] == 7
    assert "__consumer_offsets" in java  # internal topics are listed, as librdkafka's metadata lists them
    ours = {t for t in java if t.endswith(unique)}
    assert {t: java[t] for t in ours} == {t: librdkafka[t] for t in ours}
