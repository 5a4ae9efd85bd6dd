"""One flow of this process and its lease: assembled and writing while it holds the lease, a standby otherwise.

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
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mirrorspark.config.model import FlowConfig
from mirrorspark.coordination import stale_writes
from mirrorspark.coordination.claims import Claim, Claims
from mirrorspark.coordination.lease import FlowLease, default_group
from mirrorspark.errors import ConfigError
from mirrorspark.integrity.write_marks import WriteMarks
from mirrorspark.partition import Partition
from mirrorspark.pipeline.flow_assembly import AssembledFlow, Shared, assemble_flow, flow_lanes
from mirrorspark.pipeline.supervision import publish_state
from mirrorspark.policy import ReplicationPolicy
from mirrorspark.state.files import StateFiles
from mirrorspark.takeover.lost_state import has_no_state
from mirrorspark.takeover.plan import FILE as TAKEOVER_FILE

log = logging.getLogger(__name__)

LEASE_KEY = "mirrorspark.flow.lease.enabled"
STALE = ("checkpoint", WriteMarks.FILE, TAKEOVER_FILE)  # what another writer made out of date


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
HAND_OVER_REJOIN = 60.0  # seconds out of the lease group after handing a failed flow over


class FlowSeat:
    def __init__(self, flow: FlowConfig, policy: ReplicationPolicy, shared: Shared, instance: str) -> None:
        self.flow = flow
        self.policy = policy
        self.shared = shared
        self.instance = instance
        self.assembled: AssembledFlow | None = None
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
        self._late: stale_writes.LateWatch | None = None  # the search for copies made twice after leaving
        options = flow.options
        if options.lease_enabled:
            target, target_conf = shared.clusters.admin(flow.target)
            self._target_conf = target_conf
            self.claims = Claims(target, target_conf)
            group = options.lease_group or default_group(flow.source.alias, flow.target.alias)
            self.lease = self._new_lease(group)

    def _new_lease(self, group: str) -> FlowLease:
        return FlowLease(flow=self.flow.name, group=group, target_conf=self._target_conf,
                         timeout=self.flow.options.lease_timeout, instance=self.instance)

    def another_member(self) -> bool:
        """Another instance waits in this flow's lease group (asked at most every half minute)."""
        if self.lease is None or time.monotonic() - self.hand_over_checked < HAND_OVER_CHECK:
            return False
        self.hand_over_checked = time.monotonic()
        try:
            admin = self.shared.clusters.admin(self.flow.target)[0]
            group = admin.describe_consumer_groups([self.lease.group], request_timeout=10)[self.lease.group].result(15)
        except Exception as exc:  # noqa: BLE001 - the target out of reach: nobody to hand over to now
            log.debug("flow %s: lease group not described: %s", self.flow.name, exc)
            return False
        return len(group.members) > 1

    def hand_over(self) -> None:
        """The flow failed here for a reason a retry cannot fix: leave its lease group so a standby
        takes it (another host, another state, another chance), and join again later as a standby."""
        if self.lease is None:
            return
        group = self.lease.group
        self.lease.stop()
        self.lease = self._new_lease(group)
        self.rejoin_at = time.monotonic() + max(HAND_OVER_REJOIN, 3 * self.flow.options.lease_timeout)

    def rejoin_due(self) -> bool:
        return self.rejoin_at is not None and time.monotonic() >= self.rejoin_at

    def rejoin(self) -> None:
        self.rejoin_at = None
        if self.lease is not None:
            self.lease.start()

    @property
    def folder(self) -> StateFiles:
        return self.shared.state.child(self.flow.source.alias).child(self.flow.target.alias)

    def join(self) -> None:
        """Join the lease group (the claims topic is created first if needed)."""
        if self.lease is None or self.claims is None:
            return
        self.claims.ensure_topic()
        self.lease.start()

    def wait(self, limit: float) -> None:
        """Until it is known whether this process writes the flow; refused when the group cannot be used."""
        if self.lease is None:
            return
        self.lease.wait_decided(limit)
        if self.lease.refused is not None:
            raise ConfigError(
                f"flow {self.flow.name}: the lease group {self.lease.group} on cluster {self.flow.target.alias!r} "
                f"cannot be used: {self.lease.refused}. Grant the replicator's principal READ on that group and "
                f"READ, WRITE and DESCRIBE on topic mirrorspark.leases.internal, or set {self.flow.where(LEASE_KEY)} "
                "= false (then nothing keeps a second instance from copying the flow again)", LEASE_KEY)

    def may_write(self) -> bool:
        return self.lease is None or self.lease.active()

    def should_take(self) -> bool:
        return self.assembled is None and self.may_write() and time.monotonic() >= self.retry_at

    def should_leave(self) -> bool:
        """Membership is lost (another member owns the flow, or this one was expelled). A lease held
        but not confirmed (the target unreachable) keeps the flow: its batches wait for confirmation."""
        return self.assembled is not None and self.lease is not None and not self.lease.held()

    def take_failed(self, error: BaseException) -> None:
        """Taking the flow over failed for a reason that may pass (a cluster unreachable): undo, retry later."""
        self.shared.scheduler.cancel(flow_lanes(self.flow))
        self.failed_takes += 1
        self.last_failure = str(error).splitlines()[0][:300] if str(error) else type(error).__name__
        if self.failing_since is None:
            self.failing_since = time.time()
        publish_state(self.shared.metrics, self.flow.source.alias, self.flow.target.alias, "degraded")
        delay = min(60.0, 5.0 * 2 ** (self.failed_takes - 1))
        self.retry_at = time.monotonic() + delay
        log.warning("flow %s: taking the flow over failed (attempt %d), retried in %.0f s: %s", self.flow.name,
                    self.failed_takes, delay, str(error).splitlines()[0][:300])

    def activate(self) -> AssembledFlow:
        """Claim the flow, set stale state aside, and assemble it (raises on bad input, as at start)."""
        if self.claims is not None and self.lease is not None:
            group = self.lease.group  # the deployment: its members' claims, not another group's, date this state
            previous = self.claims.last(flow=self.flow.name, group=group)
            set_aside_if_stale(self.folder, self.flow.name, previous, self.instance)
            self.claims.write(Claim.mine(flow=self.flow.name, group=group, instance=self.instance, state=self.folder))
        writing = self.lease.confirmed if self.lease is not None else None
        self.assembled = assemble_flow(self.flow, self.policy, self.shared, writing)
        self.takeovers += 1
        self.failed_takes = 0
        self.last_failure = self.failing_since = None
        return self.assembled

    def deactivate(self) -> None:
        """Stop writing: the query (its batch in flight is refused), control tasks and offset syncs."""
        if self.assembled is None:
            return
        self.standby_since = time.time()
        self.publish_standby()  # before the role changes: /metrics never lags what REST shows
        assembled, self.assembled = self.assembled, None
        self.shared.scheduler.cancel(flow_lanes(self.flow))
        assembled.probe.close()
        try:
            assembled.query.stop(commit_timeout=5.0)
        except Exception as exc:  # noqa: BLE001 - a fenced query has usually failed already
            log.debug("flow %s: stopping the fenced query: %s", self.flow.name, exc)
        assembled.offsets.close()
        metrics = assembled.query.metrics
        if metrics is not None:
            metrics.set_running(False)
        if self.lease is not None:
            self._watch_late_writes(self.lease, metrics.count_recopied if metrics is not None else None)

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
            flow=self.flow.name, conf=self._target_conf, collect=lease.late_writes,
            window=stale_writes.window(lease_timeout=self.flow.options.lease_timeout,
                                       producer=self.flow.target_producer()),
            count_recopied=count_recopied or (lambda _counts: None))
        watch.add(text)
        if watch.pending():
            self._late = watch
            watch.start()

    def publish_standby(self) -> None:
        publish_state(self.shared.metrics, self.flow.source.alias, self.flow.target.alias, "standby")

    def standby(self) -> Standby | None:
        if self.assembled is not None or (self.lease is None and self.last_failure is None):
            return None
        return Standby(self.flow, self.lease.group if self.lease is not None else "", self.standby_since,
                       self.last_failure, self.failing_since, self.failed_takes)

    def ran_before(self) -> bool:
        """This state folder says where the flow stopped: it has copied before, from these clusters."""
        return not has_no_state(self.folder)

    def close(self) -> None:
        if self._late is not None:
            self._late.stop()
        if self.lease is not None:
            self.lease.stop()
