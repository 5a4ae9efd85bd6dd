"""Remote topics are created and grown in requests a KRaft controller accepts."""
from __future__ import annotations

from confluent_kafka.admin import NewTopic

from mirrorspark.control.remote_topics import RECORDS_PER_REQUEST, creation_records, in_requests


def test_ten_thousand_partitions_go_in_requests_of_at_most_ten_thousand_metadata_records():
    # The bench's 10,000 partitions (1,000 topics of 10) and its one-partition pulse topic. One request
    # of 10,001 partitions was refused ("Excessively large number of partitions per request"); then
    # requests of 10,000 partitions, 11,000 records with their topic records ("Unable to perform
    # excessively large batch operation").
    topics = [NewTopic(f"q-{i:04d}", 10, 1) for i in range(1000)] + [NewTopic("q-pulse", 1, 1)]
    requests = in_requests(topics, creation_records)
    assert [sum(creation_records(t) for t in r) for r in requests] == [9999, 1003]
    assert all(sum(t.num_partitions for t in r) <= RECORDS_PER_REQUEST for r in requests)
    assert [t.topic for r in requests for t in r] == [t.topic for t in topics]  # all, in order, once


def test_a_topic_is_a_record_with_one_per_partition_and_one_per_config():
    assert creation_records(NewTopic("t", 10, 1)) == 11
    assert creation_records(NewTopic("t", 3, 1, config={"cleanup.policy": "compact", "retention.ms": "1"})) == 6


def test_an_item_larger_than_the_limit_goes_alone_and_small_ones_share():
    sizes = [3, RECORDS_PER_REQUEST + 5, 4, 6]
    assert in_requests(sizes, lambda n: n) == [[3], [RECORDS_PER_REQUEST + 5], [4, 6]]
    assert in_requests([], lambda n: n) == []
