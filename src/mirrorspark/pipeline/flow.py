"""One flow of this process: its parts, its lease and its lifecycle (start, pause, stop, take over, leave).

A ``Flow`` is built from one ``FlowContext`` and owns everything of its flow: the parts assembled
while this process writes it (``flow_assembly``: query, supervisor, offsets, lag probe), its lease
and claims, and the steps between writer and standby. The runner holds flows by name and asks them;
REST, status and progress read a flow, never a collection kept beside it.

Instances that run the same flow share a lease group on the flow's target (``coordination.lease``).
The one holding it assembles the flow (``flow_assembly``) and runs its query; the others wait. When
the writer stops, is killed or stops answering, the group gives the lease to a standby, which
first compares the group's previous claim of the flow with itself (``coordination.claims``): if
another instance of the group wrote the flow since this state folder was saved, the folder's Spark
checkpoint and write marks are set aside, and the flow resumes after the last record the target
holds (``takeover.lost_state``), copying nothing twice. A writer that loses the lease stops its
query, its control tasks and its offset syncs at once and becomes a standby itself.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mirrorspark.config.model import FlowConfig
from mirrorspark.control.clusters import ClusterUnreachable
from mirrorspark.coordination import stale_writes
from mirrorspark.coordination.claims import Claim, Claims
from mirrorspark.coordination.lease import FlowLease, default_group
from mirrorspark.errors import ConfigError, Conflict, OperationalError, first_line
from mirrorspark.integrity.batch_guard import DataLossStop
from mirrorspark.integrity.topic_identity import FILE as IDENTITY_FILE
from mirrorspark.integrity.write_marks import WriteMarks
from mirrorspark.jvm_bridge import SparkJvm
from mirrorspark.partition import OffsetRun, Partition
from mirrorspark.pipeline.flow_assembly import AssembledFlow, FlowContext, assemble_flow
from mirrorspark.pipeline.supervision import publish_state
from mirrorspark.state.files import StateFiles
from mirrorspark.takeover.lost_state import StateLost, has_no_state
from mirrorspark.takeover.mm2_state import read_offset_syncs
from mirrorspark.takeover.plan import FILE as TAKEOVER_FILE

log = logging.getLogger(__name__)

LEASE_KEY = "mirrorspark.flow.lease.enabled"
# What another writer made out of date. The topic ids and source ends too: compared with the topics as
# they are now, an old view reports the re-creations the other writer saw (and counted) again, from
# positions set aside here, so records that writer copied would be counted lost.
STALE = ("checkpoint", WriteMarks.FILE, TAKEOVER_FILE, IDENTITY_FILE)


def set_aside_if_stale(folder: StateFiles, flow: str, previous: Claim | None, instance: str) -> bool:
    """When another instance claimed ``flow`` last, this folder's copy position is older than the
    target's: move it aside (kept for inspection) so the start resumes from the target."""
    if previous is None or previous.instance == instance or has_no_state(folder):
        return False
    suffix = time.strftime(".stale-%Y%m%d-%H%M%S")
    moved = [name for name in STALE if folder.set_aside(name, name + suffix)]
    log.warning("flow %s: %s wrote this flow after the state in %s was saved; that state is out of date (%s set aside "
                "as *%s): the flow resumes after the last record the target holds", flow, previous.describe(),
                folder.uri(), ", ".join(moved), suffix)
    return True


@dataclass
class Standby:
    """What REST and ``status`` show for a flow this process does not write now: another instance
    writes it, or (``failure`` set) starting it here failed for a reason that may pass, retried."""

    flow: FlowConfig
    group: str
    since: float
    failure: str | None = None
    failing_since: float | None = None
    attempts: int = 0


HAND_OVER_CHECK = 30.0  # seconds between looks for a standby to hand a failed flow to
ALONE_RECHECK = 1.0  # seconds between looks at a lease group this process is alone in without the lease
# How long a first start alone in its lease group waits for the lease before standing by: a broker still
# applying 10,000 remote partitions showed a just-created lease topic 11-25 s later (ADR 0027 sections 16-17).
ALONE_WAIT = 120.0
HAND_OVER_REJOIN = 60.0  # seconds out of the lease group after handing a failed flow over


class Flow:
    """One enabled flow of the process, written here or by another instance of its lease group."""

    def __init__(self, *, context: FlowContext) -> None:
        self.context = context
        self.config = context.config
        self.name = context.config.name
        self.parts: AssembledFlow | None = None  # while this process writes the flow
        self.lease: FlowLease | None = None
        self.claims: Claims | None = None
        self._target_conf: dict = {}
        self.standby_since = time.time()
        self.takeovers = 0
        self.failed_takes = 0  # in a row
        self.last_failure: str | None = None  # why the last attempt to take the flow failed
        self.failing_since: float | None = None  # epoch seconds of the first failed attempt in a row
        self.retry_at = 0.0  # monotonic: no new attempt to take the flow before
        self.rejoin_at: float | None = None  # monotonic: a flow handed over after failing here joins again then
        self.hand_over_checked = 0.0  # monotonic: when the lease group was last asked for another member
        self.unreached = False  # restarted while the target was out of reach: the lease group not joined yet
        self._losses_seen = 0  # the lease's losses when the flow was assembled (``_lease_unbroken``)
        self._late: stale_writes.LateWatch | None = None  # the search for copies made twice after leaving
        # Steering (take over, leave) and REST's controls (pause, resume, restart) one at a time: a
        # resume must not start the query of a flow that is being left.
        self._lock = threading.RLock()
        options = self.config.options
        if options.lease_enabled:
            # The lease's consumer reaches the target by itself, whenever it answers; the claims need an
            # answering admin client, made when the flow is joined or taken (``_claims``).
            self._target_conf = context.shared.clusters.settings(self.config.target)
            group = options.lease_group or default_group(self.config.source.alias, self.config.target.alias)
            self.lease = self._new_lease(group)

    # -- the lease: writer or standby ------------------------------------------------------------

    def _new_lease(self, group: str) -> FlowLease:
        return FlowLease(flow=self.name, group=group, target_conf=self._target_conf,
                         timeout=self.config.options.lease_timeout, instance=self.context.instance)

    def _claims(self) -> Claims:
        """The flow's claims, their topic created if needed; raises ClusterUnreachable."""
        if self.claims is None:
            target, target_conf = self.context.shared.clusters.admin(self.config.target)
            claims = Claims(target, target_conf)
            claims.ensure_topic()
            self.claims = claims
        return self.claims

    def _reached(self) -> None:
        """The target answers again after a restart during its outage: the lease group decides now. A
        group the broker refuses stops the process, as at a start; the claims' topic is made if the
        target lost it meanwhile (the lease's consumer is assigned once it exists)."""
        try:
            self._claims()
        except ClusterUnreachable:
            return  # out of reach again: the next look tries again
        self.unreached = False
        self._refuse_if_refused()
        if not self.may_write():  # another instance writes it: this one is a standby, not degraded
            self.last_failure = self.failing_since = None
            self.publish_standby()
        log.info("flow %s: cluster %r answers: this process joined the flow's lease group", self.name,
                 self.config.target.alias)

    def join(self) -> None:
        """Join the lease group (the claims topic is created first if needed). A target out of reach at
        a first start is most likely a wrong address: refused, the process exits. A flow that has copied
        before is being restarted during the target's outage: the lease's consumer joins when the
        target answers, the flow is ``degraded`` until then, and the process stays up (as MM2's worker
        retries its internal topics' cluster)."""
        if self.lease is None:
            return
        try:
            self._claims()
        except ClusterUnreachable as exc:
            if not self.ran_before():
                raise
            self._target_unreached(exc)
        self.lease.start()

    def _target_unreached(self, error: BaseException) -> None:
        self.unreached = True
        self.last_failure = first_line(error)
        if self.failing_since is None:
            self.failing_since = time.time()
        publish_state(self.context.shared.metrics, self.config.source.alias, self.config.target.alias, "degraded")
        log.warning("flow %s: it has copied before, so this process stays up and joins the flow's lease group when "
                    "cluster %r answers (a restart during an outage, not a wrong address): %s", self.name,
                    self.config.target.alias, self.last_failure)

    def wait(self, limit: float, alone: float = 0.0) -> None:
        """Until it is known whether this process writes the flow (``limit``; a member alone in its lease
        group without the lease waits for it ``alone`` seconds in all, at least ``limit``); refused
        when the group cannot be used.

        Joined without the lease makes a standby only beside another member. A member alone was given
        nothing because the group's leader assigned before the lease topic was in its metadata (a topic
        just created, a broker still loading thousands of partitions): it is assigned the partition at
        its next rebalance, and taking that for another writer logged a standby that was not and made
        a first start wait for a takeover (ADR 0027 section 16)."""
        if self.lease is None or self.unreached:
            return
        started = time.monotonic()
        deadline, alone_deadline = started + limit, started + max(limit, alone)
        while True:
            self.lease.wait_decided(max(0.0, deadline - time.monotonic()))
            self._refuse_if_refused()
            if self.lease.active() or time.monotonic() >= alone_deadline or not self._alone_in_group():
                return
            time.sleep(ALONE_RECHECK)

    def _alone_in_group(self) -> bool:
        """No other member in the lease group; a group the target does not describe counts as not alone
        (the standby the lease decided, as before)."""
        if self.lease is None:
            return False
        try:
            group = self.context.shared.clusters.groups(self.config.target).describe(self.lease.group)
        except OperationalError as exc:
            log.debug("flow %s: lease group not described: %s", self.name, exc)
            return False
        return group.members <= 1

    def _refuse_if_refused(self) -> None:
        if self.lease is not None and self.lease.refused is not None:
            raise ConfigError(
                f"flow {self.name}: the lease group {self.lease.group} on cluster {self.config.target.alias!r} "
                f"cannot be used: {self.lease.refused}. Grant the replicator's principal READ on that group and "
                f"READ, WRITE and DESCRIBE on topic mirrorspark.leases.internal, or set {self.config.where(LEASE_KEY)} "
                "= false (then nothing keeps a second instance from copying the flow again)", LEASE_KEY)

    def may_write(self) -> bool:
        return self.lease is None or self.lease.active()

    def should_take(self) -> bool:
        return self.parts is None and self.may_write() and time.monotonic() >= self.retry_at

    def should_leave(self) -> bool:
        """Membership is lost (another member owns the flow, or this one was expelled), or was lost and
        given back since the flow was assembled (see ``_lease_unbroken``). A lease held but not
        confirmed (the target unreachable) keeps the flow: its batches wait for confirmation."""
        return self.parts is not None and self.lease is not None and \
            (not self.lease.held() or not self._lease_unbroken())

    def _lease_unbroken(self) -> bool:
        """The lease has not been lost since this flow was assembled. Lost and held again (its
        coordinator out of reach, this process stopped, for a session timeout), another instance may
        have written the flow meanwhile: this state's positions may be older than the target's, and a
        re-created topic counted from them would report the other writer's copies as lost (the fault
        soak's third hour: 49,146 records). The flow is left and taken again, where the claims decide
        whether the state is still this writer's (``set_aside_if_stale``)."""
        return self.lease is None or self.lease.losses == self._losses_seen

    def _writing_allowed(self) -> bool:
        """For batches and control tasks: the lease is confirmed and unbroken since the flow was assembled."""
        return self._lease_unbroken() and self.lease is not None and self.lease.confirmed() and self._lease_unbroken()

    def writes(self) -> bool:
        """This process writes the flow now (its heartbeats beat here too)."""
        return self.parts is not None and self.may_write()

    def another_member(self) -> bool:
        """Another instance waits in this flow's lease group (asked at most every half minute)."""
        if self.lease is None or time.monotonic() - self.hand_over_checked < HAND_OVER_CHECK:
            return False
        self.hand_over_checked = time.monotonic()
        try:
            group = self.context.shared.clusters.groups(self.config.target).describe(self.lease.group)
        except OperationalError as exc:  # the target out of reach: nobody to hand over to now
            log.debug("flow %s: lease group not described: %s", self.name, exc)
            return False
        return group.members > 1

    def hand_over(self) -> None:
        """The flow failed here for a reason a retry cannot fix: leave its lease group so a standby
        takes it (another host, another state, another chance), and join again later as a standby."""
        if self.lease is None:
            return
        group = self.lease.group
        self.lease.stop()
        self.lease = self._new_lease(group)
        self.rejoin_at = time.monotonic() + max(HAND_OVER_REJOIN, 3 * self.config.options.lease_timeout)

    def rejoin_due(self) -> bool:
        return self.rejoin_at is not None and time.monotonic() >= self.rejoin_at

    def rejoin(self) -> None:
        self.rejoin_at = None
        if self.lease is not None:
            self.lease.start()

    @property
    def folder(self) -> StateFiles:
        return self.context.folder

    def ran_before(self) -> bool:
        """This state folder says where the flow stopped: it has copied before, from these clusters."""
        return not has_no_state(self.folder)

    # -- lifecycle ----------------------------------------------------------------------------------

    def assemble(self) -> AssembledFlow:
        """Claim the flow, set stale state aside, and assemble it (raises on bad input, as at start)."""
        if self.lease is not None:
            claims = self._claims()
            group = self.lease.group  # the deployment: its members' claims, not another group's, date this state
            previous = claims.last(flow=self.name, group=group)
            set_aside_if_stale(self.folder, self.name, previous, self.context.instance)
            claims.write(Claim.mine(flow=self.name, group=group, instance=self.context.instance,
                                         state=self.folder))
        self._losses_seen = self.lease.losses if self.lease is not None else 0
        self.parts = assemble_flow(self.context, writing=self._writing_allowed if self.lease is not None else None,
                                   unbroken=self._lease_unbroken if self.lease is not None else None,
                                   lease=(self.lease.group, self.lease.writer) if self.lease is not None else None)
        self.takeovers += 1
        self.failed_takes = 0
        self.last_failure = self.failing_since = None
        return self.parts

    def bind_fence(self, spark: Any) -> None:
        """The lease's deadline reaches the executors' writers through the driver JVM (``sink/Fences``)."""
        if self.lease is not None and spark is not None:
            self.lease.bind_jvm(SparkJvm(session=spark).fences())

    def start(self, spark: Any) -> None:
        """Start the assembled flow's query (at process start, or once taken over)."""
        if self.parts is None:
            return
        self.bind_fence(spark)
        self.parts.supervisor.requests.take()  # asked before the start, which plans afresh anyway
        query = self.parts.query
        try:
            query.start(spark)
        except DataLossStop as exc:  # a real-time start met a gap: the flow fails as at a batch, the others go on
            self.parts.supervisor.stopped_for_loss(str(exc))
            return
        if query.metrics is not None:
            query.metrics.set_running(True)

    def take_failed(self, error: BaseException) -> None:
        """Taking the flow over failed for a reason that may pass (a cluster unreachable): undo, retry later."""
        self.context.shared.scheduler.cancel(self.context.lanes)
        self.failed_takes += 1
        self.last_failure = first_line(error)
        if self.failing_since is None:
            self.failing_since = time.time()
        publish_state(self.context.shared.metrics, self.config.source.alias, self.config.target.alias, "degraded")
        delay = min(60.0, 5.0 * 2 ** (self.failed_takes - 1))
        self.retry_at = time.monotonic() + delay
        log.warning("flow %s: taking the flow over failed (attempt %d), retried in %.0f s: %s", self.name,
                    self.failed_takes, delay, first_line(error))

    def take_over(self, spark: Any, *, assembled: Callable[[], None]) -> None:
        """A standby given the flow: assemble and start it (``assembled`` runs in between: the process
        links the reverse flow's offsets). Bad input stops the process as at start; a failure that may
        pass (a cluster unreachable), or a state this instance cannot resume from (``StateLost``: the
        other flows must not stop for it), is undone and retried with backoff."""
        waited = time.time() - self.standby_since
        try:
            self.assemble()
            assembled()
            self.start(spark)
        except StateLost as exc:  # this flow cannot resume here; the process's other flows go on
            self.leave()
            self.take_failed(exc)
            if self.another_member():  # another instance may hold the state this one lacks
                log.warning("flow %s: cannot resume here without state; handed to another instance of lease group "
                            "%s", self.name, self.lease.group if self.lease else "")
                self.hand_over()
            return
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - any other failure of the takeover is retried
            self.leave()
            self.take_failed(exc)
            return
        log.warning("flow %s: took over after %.1f s as a standby: this process writes it now", self.name, waited)

    def steer(self, spark: Any, *, assembled: Callable[[], None]) -> None:
        """Follow the lease: stop writing when it is lost, take the flow when given it, hand it to a
        standby when it failed here."""
        with self._lock:
            self._steer(spark, assembled)

    def _steer(self, spark: Any, assembled: Callable[[], None]) -> None:
        supervisor = self.parts.supervisor if self.parts is not None else None
        if self.unreached and self.lease is not None and self.lease.decided():
            self._reached()
        if self.rejoin_due():
            self.rejoin()
        elif supervisor is not None and supervisor.failed and supervisor.query.loss_stop is None \
                and self.another_member():  # data.loss = fail: the gap needs a person, not another instance
            log.warning("flow %s: failed here (%s); another instance waits in lease group %s: the flow is handed "
                        "to it, this one joins again as a standby later", self.name, supervisor.last_error,
                        self.lease.group if self.lease else "")
            self.leave()
            self.hand_over()
        elif self.should_leave() and self.lease is not None and self.lease.held():
            log.warning("flow %s: the lease was lost and is held again since this process took the flow (stopped, "
                        "or its coordinator out of reach, for a session timeout): another instance may have written "
                        "it meanwhile, so the flow is taken again, its state compared with the flow's claims first",
                        self.name)
            self.leave()
        elif self.should_leave():
            log.warning("flow %s: fenced: this process no longer holds the flow's lease (another instance took "
                        "it over, or this one was stopped or cut off too long); it stops writing and waits as a "
                        "standby", self.name)
            self.leave()
        elif self.should_take() and spark is not None:
            self.take_over(spark, assembled=assembled)

    def poll(self, spark: Any) -> None:
        """One look at the query (restarts, failures), about twice a second."""
        if self.parts is not None:
            self.parts.supervisor.poll(spark)

    def pause(self) -> None:
        with self._lock:
            self._writing().query.pause()

    def copied_ends(self) -> list[dict[str, Any]]:
        """Per source partition, where the copy ends (source and target offset after its last record)
        and where records moved aside after it end: what ``reconcile`` starts from."""
        with self._lock:
            offsets = self._writing().offsets
            rows = []
            for topic, partition in offsets.ranges.partitions():
                found = offsets.copied_end(topic, partition)
                if found is not None:
                    rows.append({"topic": topic, "partition": partition, "upstream_end": found[0],
                                 "downstream_end": found[1], "moved_aside_to": found[2]})
            return rows

    def translate_positions(self, positions: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
        """Each (source topic, partition, offset of the next record to read) with the target offset of
        the same record from the offset mapping (None: the mapping has no answer), as checkpoints
        translate a committed offset; for the groups that have no checkpoints (share groups)."""
        with self._lock:
            offsets = self._writing().offsets
            return [{"topic": topic, "partition": partition, "offset": offset,
                     "target_offset": offsets.translate(topic, partition, offset)}
                    for topic, partition, offset in positions]

    def move_aside(self, moves: list[tuple[str, int, list[OffsetRun], int]]) -> list[dict[str, Any]]:
        """``reconcile``: each (source topic, partition, runs copied past the mapping, end): the source
        records from the copy's end to ``end`` were copied aside and are never copied into the remote
        topic; Spark's positions move past them and the offset mapping marks them. Only while the
        user paused the flow (its query stopped), so nothing reads or writes meanwhile."""
        with self._lock:
            parts = self._writing()
            if not parts.query.paused:
                raise Conflict(f"flow {self.name!r} is {parts.query.state()}, not paused: pause it first "
                               f"(POST /flows/{self.name}/pause), so that it copies nothing while records are "
                               "moved aside")
            moved = parts.query.spark_log.advance({(topic, partition): end for topic, partition, _, end in moves})
            out = []
            for topic, partition, copied, end in moves:
                marked = parts.offsets.move_aside(topic, partition, copied, end)
                before, after = moved.get((topic, partition), (None, None))
                out.append({"topic": topic, "partition": partition, "end": end, "position_before": before,
                            "position_after": after, "mapping_marked": marked})
            log.warning("flow %s: source records moved aside by reconcile in %d partition(s); the flow resumes "
                        "after them: %s", self.name, len(moves),
                        ", ".join(f"{t}[{p}] up to {end}" for t, p, _, end in moves))
            return out

    def resume(self, spark: Any) -> None:
        with self._lock:
            self._writing().query.resume(spark)  # Conflict when it is not paused

    def restart(self, spark: Any) -> None:
        with self._lock:
            self._writing().supervisor.manual_restart(spark)

    def _writing(self) -> AssembledFlow:
        parts = self.parts
        if parts is None:
            raise Conflict(f"flow {self.name!r} is not written by this process now")
        return parts

    def leave(self) -> None:
        """Stop writing: the query (its batch in flight is refused), control tasks and offset syncs."""
        if self.parts is None:
            return
        self.standby_since = time.time()
        self.publish_standby()  # before the role changes: /metrics never lags what REST shows
        parts, self.parts = self.parts, None
        self.context.shared.scheduler.cancel(self.context.lanes)
        parts.probe.close()
        try:
            parts.query.stop(commit_timeout=5.0)
        except Exception as exc:  # noqa: BLE001 - a fenced query has usually failed already
            log.debug("flow %s: stopping the fenced query: %s", self.name, exc)
        parts.offsets.close()
        metrics = parts.query.metrics
        if metrics is not None:
            metrics.set_running(False)
        if self.lease is not None:
            self._watch_late_writes(self.lease, metrics.count_recopied if metrics is not None else None)

    def stop_writing(self) -> None:
        """At process stop, first step: the lag probe and the query (every flow's queries stop before
        any flow's offsets close: a reverse flow's batches read this one's offset runs)."""
        if self.parts is None:
            return
        self.parts.probe.close()
        try:
            self.parts.query.stop()
        except Exception as exc:  # noqa: BLE001 - a query that already failed may refuse to stop
            log.debug("stopping flow %s: %s", self.name, exc)

    def last_checkpoints(self) -> threading.Thread | None:
        """At process stop, after every flow's query stopped: the checkpoint round that follows the last
        recorded batch (``FlowOffsets.last_checkpoints``), by the writer only, and not after a failure."""
        if self.parts is None or self.failed or not self.may_write():
            return None
        return self.parts.offsets.last_checkpoints()

    def close(self) -> None:
        """At process stop, last step: offset syncs flushed, the lease group left (a standby takes over at once)."""
        if self.parts is not None:
            self.parts.offsets.close()
        if self._late is not None:
            self._late.stop()
        if self.lease is not None:
            self.lease.stop()

    def _watch_late_writes(self, lease: FlowLease, count_recopied: Callable[[Mapping[Partition, int]], None]
                           | None) -> None:
        """Count what this instance sent after it lost the flow and the new writer copied too: searched
        now and again for a while in a thread of its own (``stale_writes.LateWatch``), not blocking steering."""
        text = lease.late_writes()
        if self._late is not None and self._late.running() and self._late.add(text, left_again=True):
            return
        if not text:
            return
        watch = stale_writes.LateWatch(
            flow=self.name, conf=self._target_conf, collect=lease.late_writes,
            window=stale_writes.window(lease_timeout=self.config.options.lease_timeout,
                                       producer=self.config.target_producer()),
            count_recopied=count_recopied or (lambda _counts: None), copied_past=self._copied_past())
        watch.add(text)
        if watch.pending():
            self._late = watch
            watch.start()

    def _copied_past(self) -> Callable[[list[stale_writes.LateWrites]], bool] | None:
        """Whether a writer has copied past each partition's late records, as the flow's newest offset
        syncs say (written after the batch's records are on the target); None without offset syncs."""
        options = self.config.options
        if not options.emit_offset_syncs:
            return None
        on_target = options.offset_syncs_on_target
        conf = self.context.shared.clusters.settings(self.config.target if on_target else self.config.source)
        topic = self.context.policy.offset_syncs_topic(self.config.source.alias if on_target
                                                        else self.config.target.alias)
        policy, same_names = self.context.policy, self.config.same_names

        def past(items: list[stale_writes.LateWrites]) -> bool:
            newest = {where: syncs[-1][0] for where, syncs in read_offset_syncs(conf, topic).items() if syncs}
            for item in items:
                source = item.topic if same_names else policy.upstream_topic(item.topic)
                if newest.get((source or item.topic, item.partition), -1) < item.upstream - 1:
                    return False
            return True
        return past

    # -- what REST, status and progress read ------------------------------------------------------

    @property
    def failed(self) -> bool:
        """Written here, and its query failed for good."""
        return self.parts is not None and self.parts.supervisor.failed

    def publish_standby(self) -> None:
        publish_state(self.context.shared.metrics, self.config.source.alias, self.config.target.alias, "standby")

    def standby(self) -> Standby | None:
        if self.parts is not None or (self.lease is None and self.last_failure is None):
            return None
        return Standby(self.config, self.lease.group if self.lease is not None else "", self.standby_since,
                       self.last_failure, self.failing_since, self.failed_takes)

    def state(self) -> str:
        parts = self.parts
        if parts is None:
            return "standby" if self.last_failure is None else "degraded"
        return parts.supervisor.state()

    def progress_line(self) -> str:
        """One line for the console: records copied since start and the rate of the latest batches."""
        parts = self.parts
        if parts is None:
            if self.last_failure is not None:
                return f"{self.name}: degraded: starting it failed, retried: {self.last_failure}"
            return (f"{self.name}: standby (waiting for the flow's lease: another instance writes it, or the target's "
                    "group coordinator is out of reach)")
        query, supervisor = parts.query, parts.supervisor
        query.collect_progress()
        if supervisor.state() in ("failed", "restarting", "degraded"):
            return f"{self.name}: {supervisor.state()}: {supervisor.reason()}"
        if query.paused:
            return f"{self.name}: paused"
        if query.last_batch_id is None:
            return f"{self.name}: waiting for the first batch"
        return (f"{self.name}: {query.records_read} records replicated in {query.data_batches} batches since start, "
                f"latest {query.last_rate:.0f} records/s")
