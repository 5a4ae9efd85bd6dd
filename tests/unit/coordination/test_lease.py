"""A flow's lease without a broker: how long a confirmation lets the flow write, what the JVM's write
fence is told, and a refused confirmation (held again when the group kept the partition here)."""
from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from py4j.protocol import Py4JNetworkError

from mirrorspark.coordination.claims import LEASE_TOPIC
from mirrorspark.coordination.lease import FlowLease
from mirrorspark.jvm_bridge import JvmFences


class Member:
    """The lease group's consumer as FlowLease sees it: its assignment, and the coordinator's answer."""

    def __init__(self, assigned: bool, refuse: bool) -> None:
        self.assigned, self.refuse = assigned, refuse
        self.committed: list[TopicPartition] = []
        self.paused: list[TopicPartition] = []

    def assignment(self):
        return [TopicPartition(LEASE_TOPIC, 0)] if self.assigned else []

    def pause(self, partitions):
        if not self.assigned:
            raise KafkaException(KafkaError(KafkaError._STATE, "not assigned"))
        self.paused.extend(partitions)

    def commit(self, offsets, asynchronous):
        if self.refuse:
            raise KafkaException(KafkaError(KafkaError.ILLEGAL_GENERATION))
        self.committed.extend(offsets)


class Clock:
    """Monotonic and wall seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return 1_700_000_000.0 + self.now


class Fences:
    """``io.mirrorspark.sink.Fences`` as the bridge calls it over py4j: each renewal's deadline, 0 for a revoke."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def renew(self, flow: str, until_ms: int) -> None:
        self.calls.append((flow, until_ms))

    def revoke(self, flow: str) -> None:
        self.calls.append((flow, 0))


def _lease(clock: Clock | None = None, timeout: float = 10.0) -> FlowLease:
    clock = clock or Clock()
    return FlowLease(flow="a->b", group="g", target_conf={"bootstrap.servers": "unused:9092"}, timeout=timeout,
                     instance="instance", clock=clock.monotonic, wall=clock.wall)


def test_a_confirmation_lets_the_flow_write_for_half_a_session_timeout_and_the_fence_says_the_same():
    """The coordinator moves the partition a whole session timeout after the last heartbeat: a writer
    that stops at half of it (and its JVM with it) has stopped before any standby starts."""
    clock, fences = Clock(), Fences()
    lease = _lease(clock, timeout=10.0)
    lease.bind_jvm(JvmFences(java=fences))
    lease._assigned(None, [TopicPartition(LEASE_TOPIC, 0)])
    assert lease.held() and not lease.active(), "held but not confirmed: nothing is written yet"
    sent = clock.wall()
    member = Member(assigned=True, refuse=False)
    lease._confirm(member)
    assert fences.calls == [("a->b", int(sent * 1000 + 5_000))]
    # Executors in JVMs of their own read the same deadline from the confirmation (sink/LeaseWatch.java).
    assert [(c.topic, c.partition, c.metadata) for c in member.committed] == \
        [(LEASE_TOPIC, 0, f"{lease.writer} {int(sent * 1000 + 5_000)}")]
    assert lease.writer.startswith("instance-"), "the instance and this process's run"
    clock.now += 4.9
    assert lease.active()
    clock.now += 0.2
    assert not lease.active() and lease.held(), "unconfirmed for half the session timeout: the flow stops writing"
    lease._confirm(Member(assigned=True, refuse=False))
    assert lease.active()


def test_losing_the_lease_revokes_the_fence_at_once_and_counts_the_loss():
    clock, fences = Clock(), Fences()
    lease = _lease(clock)
    lease.bind_jvm(JvmFences(java=fences))
    lease._assigned(None, [TopicPartition(LEASE_TOPIC, 0)])
    lease._confirm(Member(assigned=True, refuse=False))
    lease._revoked(None, [TopicPartition(LEASE_TOPIC, 0)])
    assert fences.calls[-1] == ("a->b", 0) and lease.losses == 1
    assert not lease.confirmed(), "a lost lease is not waited for"


def test_a_refused_confirmation_revokes_the_fence_until_the_next_one_succeeds():
    fences = Fences()
    lease = _lease()
    lease.bind_jvm(JvmFences(java=fences))
    lease._assigned(None, [TopicPartition(LEASE_TOPIC, 0)])
    lease._confirm(Member(assigned=True, refuse=False))
    lease._confirm(Member(assigned=True, refuse=True))
    assert fences.calls[-1] == ("a->b", 0) and lease.losses == 0, "refused, not lost: the group decides"


def test_other_partitions_of_an_assignment_are_not_the_lease():
    lease = _lease()
    lease._assigned(None, [TopicPartition(LEASE_TOPIC, 1), TopicPartition("other", 0)])
    assert not lease.held()


def test_a_member_joined_long_enough_has_decided_even_without_the_lease():
    clock = Clock()
    lease = _lease(clock)
    lease._joined_at = clock.now
    assert not lease.decided(settle=2.0)
    clock.now += 2.0
    assert lease.decided(settle=2.0) and not lease.active()


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


def test_a_driver_jvm_that_is_gone_neither_stops_the_lease_nor_reports_late_writes():
    """While the process stops, the gateway closes before the lease leaves its group."""
    class Gone:
        def __getattr__(self, name: str):
            def call(*args):
                raise Py4JNetworkError("Error while sending or receiving")
            return call

    lease = _lease()
    lease.bind_jvm(JvmFences(java=Gone()))
    lease._assigned(None, [TopicPartition(LEASE_TOPIC, 0)])
    lease._confirm(Member(assigned=True, refuse=False))
    assert lease.active() and lease.late_writes() is None
    lease._revoked(None, [TopicPartition(LEASE_TOPIC, 0)])
    assert not lease.held()


def test_a_lease_unconfirmed_for_a_whole_session_timeout_counts_as_lost_once_confirmed_again():
    """The coordinator may give the partition to another member a session timeout after this one last
    answered; if that member wrote the flow and stopped, this one is assigned again and held all along
    as far as it knows. The flow must know: its state may be older than the target's."""
    clock = Clock()
    lease = _lease(clock, timeout=10.0)
    lease._assigned(None, [TopicPartition(LEASE_TOPIC, 0)])
    lease._confirm(Member(assigned=True, refuse=False))
    clock.now += 9.5
    lease._confirm(Member(assigned=True, refuse=False))
    assert lease.losses == 0, "a gap shorter than the session timeout: nobody else can have been given it"
    clock.now += 10.0
    lease._confirm(Member(assigned=True, refuse=False))
    assert lease.losses == 1 and lease.active()


def test_a_lease_lost_and_held_again_counts_one_loss():
    clock = Clock()
    lease = _lease(clock, timeout=10.0)
    lease._assigned(None, [TopicPartition(LEASE_TOPIC, 0)])
    lease._confirm(Member(assigned=True, refuse=False))
    lease._revoked(None, [TopicPartition(LEASE_TOPIC, 0)])  # on_lost: the session timed out
    lease._reclaim(Member(assigned=True, refuse=False))  # the rejoin kept the partition here
    clock.now += 30.0
    lease._confirm(Member(assigned=True, refuse=False))
    assert lease.held() and lease.active() and lease.losses == 1


def test_the_lease_partition_is_paused_once_per_assignment_and_again_after_a_refusal():
    """The member reads nothing of the lease topic: a record it read made a confirmation round."""
    lease = _lease()
    lease._assigned(None, [TopicPartition(LEASE_TOPIC, 0)])
    gone = Member(assigned=False, refuse=False)
    lease._quiet(gone)  # revoked meanwhile: the consumer refuses; the next round tries again
    member = Member(assigned=True, refuse=False)
    lease._quiet(member)
    lease._quiet(member)
    assert [(p.topic, p.partition) for p in member.paused] == [(LEASE_TOPIC, 0)]
    lease._revoked(None, [TopicPartition(LEASE_TOPIC, 0)])
    lease._assigned(None, [TopicPartition(LEASE_TOPIC, 0)])  # given again: fetched until paused again
    lease._quiet(member)
    assert len(member.paused) == 2
