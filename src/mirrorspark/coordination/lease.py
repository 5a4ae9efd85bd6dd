"""A flow's lease: membership of a consumer group on the target whose single partition one member owns.

MM2's workers coordinate through Connect's group; here each flow has a group of its own over the
one-partition topic ``mirrorspark.leases.internal``. The member assigned its partition writes the
flow; the others are standbys. ``cooperative-sticky`` keeps the partition where it is when a
standby joins, so starting a standby never moves the flow.

Holding the partition is not enough to write: the group may have moved on while this process was
stopped. Every round (about twice a second) the lease is confirmed by a synchronous offset commit,
which the coordinator accepts only from a current member of the current generation, and it is
valid for half the session timeout after that commit was sent. The coordinator gives the partition
to another member only a whole session timeout after this member's last heartbeat, so a writer
stops (``active()`` false, its JVM fence expired) before any standby can start.

The same round renews the write fence of the JVM that writes the records (``io.mirrorspark.sink.
Fences``). That call is also the JVM's liveness check: while the JVM is stopped it blocks, the
round stops polling, and librdkafka leaves the group after ``max.poll.interval.ms``, so a frozen
JVM behind a live Python process loses the lease too. Executors in JVMs of their own (a Spark
cluster) read their fence from the commit itself, whose metadata names this instance and its
deadline (``sink/LeaseWatch.java``).
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mirrorspark.control.admin import consumer
from mirrorspark.coordination.claims import LEASE_TOPIC
from mirrorspark.jvm_bridge import JvmError, JvmFences

log = logging.getLogger(__name__)

ROUND = 0.5  # seconds between confirmations
# This process among the runs of one state location: the executors of an earlier run of the same
# instance (a restarted driver) must not take the new run's confirmations for their own.
PROCESS_RUN = uuid.uuid4().hex[:8]
_REFUSED = {KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED,
            KafkaError.SASL_AUTHENTICATION_FAILED}


def default_group(source: str, target: str) -> str:
    return f"mirrorspark.{source}->{target}"


class FlowLease:
    """Whether this process may write one flow now; run by a thread of its own."""

    def __init__(self, *, flow: str, group: str, target_conf: dict[str, Any], timeout: float, instance: str,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        """``clock`` (monotonic seconds) bounds the lease, ``wall`` (epoch seconds) the JVM's fence."""
        self.flow = flow
        self.instance = instance
        self.writer = f"{instance}-{PROCESS_RUN}"  # who the confirmations name (``sink/LeaseWatch.java``)
        self._clock, self._wall = clock, wall
        self.group = group
        self.timeout = timeout
        session_ms = int(timeout * 1000)
        self._conf = {**target_conf, "group.id": group, "client.id": f"mirrorspark-{instance[:8]}",
                      "session.timeout.ms": session_ms, "max.poll.interval.ms": session_ms,
                      "heartbeat.interval.ms": max(300, session_ms // 10),
                      "partition.assignment.strategy": "cooperative-sticky",
                      "enable.auto.commit": False, "enable.auto.offset.store": False, "auto.offset.reset": "latest"}
        self._held = False
        self._paused = False  # the lease partition's fetching paused (``_quiet``) since it was assigned
        self._valid_until = 0.0  # monotonic
        self._joined_at: float | None = None
        self.refused: str | None = None  # the broker refuses the group or topic (ACLs): said at start
        # Times the lease was lost, or went unconfirmed for a whole session timeout (the group may have
        # given it to another member meanwhile): a flow assembled before the last one must be taken again.
        self.losses = 0
        self._confirmed_at: float | None = None  # monotonic: when the last successful confirmation was sent
        self._fence: JvmFences | None = None  # the driver JVM's write fences, once Spark runs
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"mirrorspark-lease {flow}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Leave the group (a standby takes over at once, without waiting for the session timeout)."""
        self._stop.set()
        if self._thread.is_alive():  # a lease handed over and not joined again was never started
            self._thread.join(timeout=self.timeout + 5)

    def bind_jvm(self, fences: JvmFences) -> None:
        """From now on each confirmation renews the write fence of this JVM (local executors)."""
        self._fence = fences

    def late_writes(self, flush_ms: int = 10_000) -> str | None:
        """What this JVM's producers sent for the flow after its deadline (``Fences.lateWrites``' JSON),
        once they have sent what they held; None without a JVM fence."""
        fence = self._fence
        if fence is None:
            return None
        try:
            return fence.late_writes(self.flow, flush_ms)
        except JvmError as exc:  # the JVM is gone (stopping): it sends nothing more
            log.debug("flow %s: late writes not read: %s", self.flow, exc)
            return None

    def active(self) -> bool:
        """This process holds the lease, confirmed by the coordinator less than half a session ago."""
        return self._held and self._clock() < self._valid_until

    def held(self) -> bool:
        """Still a member owning the partition, confirmed or not (the coordinator may be unreachable):
        the flow stays assembled, but nothing is written until it is confirmed again."""
        return self._held

    def confirmed(self) -> bool:
        """For a batch about to write: true once the lease is confirmed. While it is held but not
        confirmed (the target's coordinator restarting, a slow round), wait for the next
        confirmation rather than fail the batch; false when it is lost. librdkafka gives the partition
        up by itself a session timeout after the coordinator last answered, so the wait is bounded;
        three session timeouts are the backstop."""
        deadline = self._clock() + 3 * self.timeout
        while not self.active() and self._held and self._clock() < deadline and not self._stop.is_set():
            time.sleep(0.1)
        return self.active()

    def decided(self, settle: float = 2.0) -> bool:
        """Joined for ``settle`` seconds (the assignment is known), holding, or refused."""
        return self.active() or self.refused is not None or \
            (self._joined_at is not None and self._clock() - self._joined_at >= settle)

    def wait_decided(self, limit: float) -> None:
        deadline = self._clock() + limit
        while not self.decided() and self._clock() < deadline:
            time.sleep(0.1)

    def _run(self) -> None:
        member = consumer(self._conf)
        member.subscribe([LEASE_TOPIC], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._revoked)
        try:
            while not self._stop.is_set():
                message = member.poll(ROUND)
                error = message.error() if message is not None else None
                if error is not None:
                    self._poll_error(error)
                if self._joined_at is None and member.memberid():
                    self._joined_at = self._clock()
                self._reclaim(member)
                if self._held:
                    self._quiet(member)
                    self._confirm(member)
        finally:
            if self._held:
                self._revoke_executors(member)
            self._drop("this process stops", stopping=True)
            member.close()  # leaves the group: a standby is assigned the partition now

    def _quiet(self, member) -> None:
        """Fetch nothing of the lease topic: its records (claims, older copies: one per remote topic) are
        not the member's to read, and a member reading them made a confirmation round per record, a
        synchronous commit each (300 rounds in a second when a flow of 300 topics noted where its copies
        begin). Paused once per assignment: a partition the group gives again is fetched until then."""
        if self._paused:
            return
        try:
            member.pause([TopicPartition(LEASE_TOPIC, 0)])
        except KafkaException as exc:  # not assigned any more: the group's next answer says so
            log.debug("flow %s: lease partition not paused: %s", self.flow, exc)
            return
        self._paused = True

    def _poll_error(self, error: KafkaError) -> None:
        if error.code() in _REFUSED:
            self.refused = error.str()
        elif error.code() == KafkaError._MAX_POLL_EXCEEDED:
            log.warning("flow %s: this process did not confirm its lease for %.0f s (stopped, paused, or the target's "
                        "group coordinator unreachable); it left "
                        "the lease group %s and writes nothing until it holds the lease again", self.flow,
                        self.timeout, self.group)
        elif error.code() != KafkaError._PARTITION_EOF:
            log.debug("flow %s: lease group %s: %s", self.flow, self.group, error.str())

    def _assigned(self, _member, partitions: list[TopicPartition]) -> None:
        if any(p.topic == LEASE_TOPIC and p.partition == 0 for p in partitions):
            self._held = True
            self._paused = False  # a partition newly assigned is fetched
            log.info("flow %s: this process holds the lease (group %s)", self.flow, self.group)

    def _reclaim(self, member) -> None:
        """A confirmation refused (a new generation: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID) drops the
        lease, but the cooperative-sticky rejoin may keep the partition here without calling
        ``on_assign`` again: the group then holds the flow for this member while this member believes
        it does not, and nobody writes the flow (found by the fault soak: 15 minutes, both instances
        standby). Held again when the group's assignment says so; the next confirmation decides."""
        if self._held:
            return
        try:
            assigned = member.assignment()
        except KafkaException:
            return
        if any(p.topic == LEASE_TOPIC and p.partition == 0 for p in assigned):
            self._held = True
            self._paused = False
            log.info("flow %s: this process holds the lease again (group %s): the group kept it assigned here",
                     self.flow, self.group)

    def _revoked(self, _member, partitions: list[TopicPartition]) -> None:
        if any(p.topic == LEASE_TOPIC and p.partition == 0 for p in partitions):
            self._drop("the lease group gave the flow to another member")

    def _drop(self, why: str, stopping: bool = False) -> None:
        was = self._held
        self._held = False
        self._valid_until = 0.0
        self._confirmed_at = None  # counted here, not again at the next confirmation
        if was and stopping:  # a clean stop hands the flow over: news, not a warning
            log.info("flow %s: lease given up: %s", self.flow, why)
        elif was:
            self.losses += 1
            log.warning("flow %s: lease lost: %s", self.flow, why)
        self._renew_fence(0)

    def _revoke_executors(self, member) -> None:
        """Before leaving the group: a last confirmation with deadline 0, so executors of their own stop
        at their next read instead of writing on until the last deadline, past the standby's start."""
        try:
            member.commit(offsets=[TopicPartition(LEASE_TOPIC, 0, 0, metadata=f"{self.writer} 0")], asynchronous=False)
        except KafkaException as exc:  # not the member any more: another one's confirmation fences them
            log.debug("flow %s: executors' lease not revoked: %s", self.flow, exc)

    def _confirm(self, member) -> None:
        sent, wall = self._clock(), self._wall()
        valid = self.timeout / 2
        until_ms = int(wall * 1000 + valid * 1000)
        # The commit's metadata is the fence of executors in JVMs of their own (sink/LeaseWatch.java):
        # which instance may write, until when. Only the group's current member can commit it.
        confirmation = TopicPartition(LEASE_TOPIC, 0, 0, metadata=f"{self.writer} {until_ms}")
        try:
            member.commit(offsets=[confirmation], asynchronous=False)
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() in (KafkaError.UNKNOWN_MEMBER_ID, KafkaError.ILLEGAL_GENERATION,
                                KafkaError.REBALANCE_IN_PROGRESS, KafkaError.FENCED_INSTANCE_ID):
                # Nothing is written until a confirmation succeeds; whether the partition stays here is
                # the group's to say (on_revoke / on_lost drop it), not this refusal's: a rebalance that
                # keeps it here (cooperative-sticky) calls no on_assign to give it back.
                if self._valid_until:
                    log.info("flow %s: the coordinator refused a confirmation (%s): nothing is written until "
                             "the next one succeeds", self.flow, error.name())
                self._valid_until = 0.0
                self._renew_fence(0)
            else:  # the coordinator unreachable: the lease runs out unless a later round confirms it
                log.debug("flow %s: lease confirmation failed: %s", self.flow, error.str())
            return
        if self._confirmed_at is not None and sent - self._confirmed_at >= self.timeout:
            self.losses += 1
            log.warning("flow %s: this process's lease went unconfirmed for %.0f s, a whole session timeout: the "
                        "group may have given the flow to another member meanwhile", self.flow,
                        sent - self._confirmed_at)
        self._confirmed_at = sent
        self._valid_until = sent + valid
        self._renew_fence(until_ms)

    def _renew_fence(self, until_ms: int) -> None:
        fence = self._fence
        if fence is None:
            return
        try:
            if until_ms:
                fence.renew(self.flow, until_ms)  # blocks while the JVM is stopped: see the module's doc
            else:
                fence.revoke(self.flow)
        except JvmError as exc:  # the JVM is gone (stopping): nothing left to fence
            log.debug("flow %s: write fence not updated: %s", self.flow, exc)
        except Exception as exc:  # noqa: BLE001 - the lease thread must go on confirming
            log.warning("flow %s: write fence not updated: %s", self.flow, exc)


