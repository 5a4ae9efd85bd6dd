"""Remote topics are created and grown in requests a KRaft controller accepts."""
from __future__ import annotations

from confluent_kafka.admin import NewTopic

from mirrorspark.control.remote_topics import PARTITIONS_PER_REQUEST, in_requests


def test_ten_thousand_partitions_and_one_go_in_two_requests_none_over_the_limit():
    # The bench's 10,000 partitions (1,000 topics of 10) and its one-partition pulse topic: one
    # request of 10,001 partitions was refused ("Excessively large number of partitions per request").
    topics = [NewTopic(f"q-{i:04d}", 10, 1) for i in range(1000)] + [NewTopic("q-pulse", 1, 1)]
    requests = in_requests(topics, lambda t: t.num_partitions)
    assert [sum(t.num_partitions for t in r) for r in requests] == [PARTITIONS_PER_REQUEST, 1]
    assert [t.topic for r in requests for t in r] == [t.topic for t in topics]  # all, in order, once


def test_a_topic_larger_than_the_limit_goes_alone_and_small_ones_share():
    sizes = [3, PARTITIONS_PER_REQUEST + 5, 4, 6]
    assert in_requests(sizes, lambda n: n) == [[3], [PARTITIONS_PER_REQUEST + 5], [4, 6]]
    assert in_requests([], lambda n: n) == []
