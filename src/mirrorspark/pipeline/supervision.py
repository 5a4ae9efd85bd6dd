"""Keeps one flow's query running: a failed query is started again with exponential backoff while
the other flows go on; after ``mirrorspark.flow.restart.attempts`` consecutive failures it stays
``failed`` (the process keeps serving the others). A written batch resets the count.

A failure a retry can fix (``retriable``: a cluster out of reach, a leader moving, a timeout) never
counts: the flow stays up, ``degraded`` with the reason and since when, and is retried with backoff
capped at ``RETRY_BACKOFF_CAP`` until the cluster answers, then resumes where it was (ADR 0021).
A flow stopped by ``mirrorspark.data.loss = fail`` is not restarted: the gap needs a person.
"""
from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

from mirrorspark.integrity.loss import LossLog
from mirrorspark.metrics.registry import MirrorMetrics
from mirrorspark.pipeline.flow_query import FlowQuery
from mirrorspark.pipeline.retriable import retriable
from mirrorspark.schemas.registry import RegistryError
from mirrorspark.schemas.sync import IdsNotKept, unknown_schema_id

log = logging.getLogger(__name__)

MAX_BACKOFF = 60.0
QUICK_RESTARTS = 3  # restarts in a row a batch may ask for before they count as failures
RETRY_BACKOFF_CAP = 15.0  # a cluster back after an outage is read again within this long (ADR 0021)


class RestartRequests:
    """Why the flow's query should start again (a source topic re-created, a new plan), asked by
    control tasks made before the query and its supervisor exist; the supervisor takes the latest."""

    def __init__(self) -> None:
        self._reason: str | None = None

    def ask(self, reason: str) -> None:
        self._reason = reason

    def pending(self) -> str | None:
        return self._reason

    def take(self) -> str | None:
        reason, self._reason = self._reason, None
        return reason


class FlowSupervisor:
    def __init__(self, *, query: FlowQuery, loss: LossLog, metrics: MirrorMetrics,
                 requests: RestartRequests | None = None) -> None:
        self.query = query
        self.loss = loss
        self.metrics = metrics
        self.allowed = query.flow.options.restart_attempts
        self.backoff = query.flow.options.restart_backoff
        self.attempts = 0  # consecutive failures
        self.attempts_quick = 0  # consecutive restarts a batch asked for (not failures)
        self.restarts = 0
        self._schema_last: int | None = None  # the schema id the last batch failure was copied for
        self.last_error: str | None = None
        self.failed = False
        self.restart_at: float | None = None
        self.requests = requests or RestartRequests()  # e.g. a source topic re-created while running
        self.retries = 0  # consecutive retriable failures (never make the flow fail)
        self.retrying_since: float | None = None  # wall clock of the first of them
        self._written = query.batches_written
        # The lag probe's rounds got no answer from the source since (wall clock), and the last error: a
        # real-time query does not fail when its source is away (its consumers reconnect and read on),
        # so without this the flow would look plainly running through an outage.
        self.source_away_since: float | None = None
        self.source_error: str | None = None

    def source_round(self, error: str | None) -> None:
        """A lag round's outcome: None when the source answered, else the error. Only a failure a retry
        can fix counts as the source away (an authorization refusal is said by the probe's log)."""
        if error is None:
            if self.source_away_since is not None:
                log.warning("flow %s: the source cluster answers again after %.0f s", self.query.flow.name,
                            time.time() - self.source_away_since)
            self.source_away_since = self.source_error = None
            return
        if not retriable(error):
            return
        if self.source_away_since is None:
            self.source_away_since = time.time()
            log.warning("flow %s: degraded: the source cluster %r does not answer; the query waits for it and "
                        "resumes where it is (nothing is skipped): %s", self.query.flow.name,
                        self.query.flow.source.alias, error)
        self.source_error = error

    def state(self) -> str:
        if self.failed:
            return "failed"
        if self.retrying_since is not None:
            return "degraded"  # up, waiting for a cluster to answer again
        if self.restart_at is not None:
            return "restarting"
        state = self.query.state()
        if state == "failed":
            return "restarting"  # seen before the next poll decides
        if state == "running" and (self.source_away_since is not None or self.loss.since_start):
            return "degraded"
        return state

    def healthy(self) -> bool:
        """Doing its part: running (or paused by an operator), or degraded only by a loss it reported
        (the loss is said by its own count and alert; the flow replicates as it should). Retrying a
        cluster that does not answer, restarting or failed is not."""
        state = self.state()
        return state in ("running", "paused") or (state == "degraded" and self.retrying_since is None
                                                   and self.source_away_since is None)

    def reason(self) -> str | None:
        """Why the flow is not plainly running: its last error, or the latest loss report."""
        if self.retrying_since is not None:
            since = datetime.fromtimestamp(self.retrying_since, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            return f"retrying since {since} ({self.retries} retries; nothing is skipped): {self.last_error}"
        if self.failed or self.restart_at is not None:
            return self.last_error
        away = self.source_away_since  # set and cleared by the lag probe's thread
        if away is not None and self.state() == "degraded":
            since = datetime.fromtimestamp(away, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            return (f"retrying since {since} (the source cluster {self.query.flow.source.alias!r} does not answer; "
                    f"the query waits for it, nothing is skipped): {self.source_error}")
        if self.loss.since_start and self.state() == "degraded":
            return self.loss.since_start[-1].line()
        return self.query.error()

    def poll(self, spark) -> None:
        """One look at the flow (called about twice a second by the runner)."""
        q = self.query
        if q.batches_written != self._written:
            self._written = q.batches_written
            self.attempts = self.attempts_quick = 0
            self._schema_last = None
            if self.retrying_since is not None:
                log.warning("flow %s: writes again after %.0f s and %d retries", q.flow.name,
                            time.time() - self.retrying_since, self.retries)
            self.retries, self.retrying_since = 0, None
        if self.failed or q.paused or q.restarting:
            if q.paused:
                self.restart_at = None  # the user's pause supersedes a pending automatic restart
            self._publish()
            return
        now = time.monotonic()
        # Asked once a look (a JVM call each time): the next look, half a second later, sees any change.
        running = q.query is not None and q.query.isActive
        stopped = q.query is not None and not running
        if self.requests.pending() is not None and running:
            log.warning("flow %s: restarting: %s", q.flow.name, self.requests.take())
            self._restart(spark)
        elif self.restart_at is None and stopped and \
                (reason := q.take_restart_reason()) is not None and self.attempts == 0:
            self.attempts_quick += 1
            if self.attempts_quick > QUICK_RESTARTS:  # the restart did not repair it: a failure, with backoff
                self.attempts_quick = 0
                self._failed_once(reason, now)
            else:
                log.warning("flow %s: restarting: %s", q.flow.name, reason)
                self._restart(spark)
        elif self.restart_at is None and stopped and self._schema_met(spark, now):
            pass
        elif self.restart_at is None and stopped:
            self._failed_once(q.loss_stop or q.error() or "the query stopped", now,
                              q.loss_stop is None and retriable(q.failure_text()))
        elif self.restart_at is not None and now >= self.restart_at:
            self.restart_at = None
            self.restarts += 1
            self.metrics.flow_restarts.labels(source=q.flow.source.alias, target=q.flow.target.alias).inc()
            if self.retrying_since is None:
                log.warning("flow %s: restart %d of %d after: %s", q.flow.name, self.attempts, self.allowed,
                            self.last_error)
            self._restart(spark)
        self._publish()

    def _schema_met(self, spark, now: float) -> bool:
        """The batch failed on a schema id the flow's map lacks (ADR 0028): the schema is copied to the
        target's registry and the batch runs again at once, not counted as a failure. The same id met
        again right after is a failure as any other."""
        q = self.query
        schemas = q.schemas
        met = unknown_schema_id(q.failure_text()) if schemas is not None else None
        if schemas is None or met is None or met[0] == self._schema_last:
            return False
        self._schema_last = met[0]
        try:
            problem = schemas.handle_unknown(met[0], met[1], fail_unresolved=q.flow.options.schemas_fail_unresolved)
        except RegistryError as exc:  # a registry out of reach: retried for as long as it takes
            self._schema_last = None
            self._failed_once(str(exc), now, may_pass=True)
            return True
        except IdsNotKept as exc:  # mirrorspark.schemas.ids = keep and the target gave another id: a retry cannot help
            self._failed_once(str(exc), now, final=True)
            return True
        if problem is not None:
            self._failed_once(problem, now, final=True)
            return True
        log.info("flow %s: schema id %d met at %s is in the map now; the batch runs again", q.flow.name, met[0], met[1])
        self._restart(spark)
        return True

    def stopped_for_loss(self, error: str) -> None:
        """The start itself met a gap under ``mirrorspark.data.loss = fail`` (real-time mode checks before
        its query starts): failed, not restarted, as when a batch meets it."""
        self._failed_once(error, time.monotonic())

    def _failed_once(self, error: str, now: float, may_pass: bool = False, final: bool = False) -> None:
        q = self.query
        self.last_error = error
        if may_pass:
            self._retry_later(error, now)
            return
        self.retrying_since = None
        self.attempts += 1
        too_large = "RecordTooLargeException" in error
        if too_large:  # the same record fails every restart: say what to change, once
            self.last_error = error = (
                f"{error}. A source record is larger than the target takes: raise max.message.bytes of the remote "
                f"topic (config sync copies the source topic's; sync.topic.configs.enabled) or the target brokers' "
                f"message.max.bytes, or set {q.flow.target.alias}.producer.max.request.size, then restart the flow")
        if q.loss_stop is not None or too_large or final or self.attempts > self.allowed:
            self.failed = True
            if q.metrics is not None:
                q.metrics.set_running(False)
            why = "mirrorspark.data.loss = fail" if q.loss_stop is not None else \
                "a schema id no registry knows; a restart cannot help" if final else \
                "a record too large for the target; a restart cannot help" if too_large else \
                f"{self.attempts - 1} restart(s) did not help (mirrorspark.flow.restart.attempts = {self.allowed})"
            log.error("flow %s: FAILED, not restarted (%s); the other flows go on. Last error: %s", q.flow.name,
                      why, error)
            return
        delay = min(MAX_BACKOFF, self.backoff * 2 ** (self.attempts - 1))
        self.restart_at = now + delay
        log.error("flow %s: the query failed (%d of %d); restarting in %.1f s: %s", q.flow.name, self.attempts,
                  self.allowed + 1, delay, error)

    def _retry_later(self, error: str, now: float) -> None:
        """A failure that passes when the cluster answers: never counted, retried for as long as it takes."""
        self.retries += 1
        if self.retrying_since is None:
            self.retrying_since = time.time()
        delay = min(RETRY_BACKOFF_CAP, self.backoff * 2 ** min(self.retries - 1, 16))
        self.restart_at = now + delay
        log.warning("flow %s: degraded, retrying in %.1f s (retry %d; the flow stays up and resumes where it was "
                    "when the cluster answers): %s", self.query.flow.name, delay, self.retries, error)

    def _restart(self, spark) -> None:
        try:
            self.query.restart(spark)
        except Exception as exc:  # noqa: BLE001 - a failing start counts as a failure of the flow
            text = str(exc)
            self._failed_once(f"restart failed: {text.splitlines()[0][:300] if text else type(exc).__name__}",
                              time.monotonic(), retriable(text))

    def manual_restart(self, spark) -> None:
        """REST restart: a failed flow gets a fresh count."""
        self.failed = False
        self.restart_at = None
        self.attempts = self.retries = 0
        self.retrying_since = None
        self.query.writer.loss_stop = None
        self.query.restart(spark, unpause=True)

    def _publish(self) -> None:
        publish_state(self.metrics, self.query.flow.source.alias, self.query.flow.target.alias, self.state(),
                      healthy=self.healthy())


def publish_state(metrics: MirrorMetrics, source: str, target: str, current: str,
                  healthy: bool | None = None) -> None:
    """``mirrorspark_flow_state``: 1 for the flow's current state, 0 for the others (with the role
    the state implies, read at each scrape); ``healthy`` when the state alone does not say."""
    metrics.set_state(source, target, current, healthy)
