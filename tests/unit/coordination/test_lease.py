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


def test_a_lease_dropped_on_a_new_generation_is_held_again_while_the_group_keeps_it_here():
    lease = _lease()
    lease._assigned(None, [TopicPartition(LEASE_TOPIC, 0)])
    lease._confirm(Member(assigned=True, refuse=True))  # ILLEGAL_GENERATION: dropped, nothing written
    assert not lease.held() and not lease.active()
    member = Member(assigned=True, refuse=False)  # the sticky rejoin kept the partition, no on_assign
    lease._reclaim(member)
    lease._confirm(member)
    assert lease.held() and lease.active()


def test_a_lease_the_group_gave_to_another_member_is_not_taken_back():
    lease = _lease()
    lease._assigned(None, [TopicPartition(LEASE_TOPIC, 0)])
    lease._confirm(Member(assigned=True, refuse=True))
    lease._reclaim(Member(assigned=False, refuse=False))
    assert not lease.held()
