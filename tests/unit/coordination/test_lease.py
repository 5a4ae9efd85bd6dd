"""A flow's lease after a refused confirmation: held again when the group kept the partition here."""
from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirrorspark.coordination.claims import LEASE_TOPIC
from mirrorspark.coordination.lease import FlowLease


class Member:
    """The lease group's consumer as FlowLease sees it: its assignment, and the coordinator's answer."""

    def __init__(self, assigned: bool, refuse: bool) -> None:
        self.assigned, self.refuse = assigned, refuse

    def assignment(self):
        return [TopicPartition(LEASE_TOPIC, 0)] if self.assigned else []

    def commit(self, offsets, asynchronous):
        if self.refuse:
            raise KafkaException(KafkaError(KafkaError.ILLEGAL_GENERATION))


def _lease() -> FlowLease:
    return FlowLease("a->b", "g", {"bootstrap.servers": "unused:9092"}, 10.0, "instance")


def test_a_refused_confirmation_stops_writes_but_the_group_decides_whether_the_lease_stays():
    """A rebalance that keeps the partition here (cooperative-sticky) calls no on_assign: dropping the
    lease on the refusal left a flow nobody wrote (found by the fault soak)."""
    lease = _lease()
    lease._assigned(None, [TopicPartition(LEASE_TOPIC, 0)])
    lease._confirm(Member(assigned=True, refuse=False))
    assert lease.active()
    lease._confirm(Member(assigned=True, refuse=True))  # ILLEGAL_GENERATION: nothing written until confirmed
    assert lease.held() and not lease.active()
    lease._confirm(Member(assigned=True, refuse=False))  # the next confirmation in the new generation
    assert lease.held() and lease.active()


def test_a_lease_the_group_takes_away_is_dropped():
    lease = _lease()
    lease._assigned(None, [TopicPartition(LEASE_TOPIC, 0)])
    lease._confirm(Member(assigned=True, refuse=True))
    lease._revoked(None, [TopicPartition(LEASE_TOPIC, 0)])
    lease._reclaim(Member(assigned=False, refuse=False))
    assert not lease.held() and not lease.active()


def test_a_lease_never_started_stops_without_error():
    """A flow handed over leaves its lease unstarted until it joins again; a stop meanwhile must not raise."""
    _lease().stop()
