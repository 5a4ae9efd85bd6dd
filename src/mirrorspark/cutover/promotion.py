"""``promote --execute`` and ``--abort``: the cutover's steps, each one resumable.

Every step waits for a fact (the lag under a bound, the source ends still, the flow drained, a
group's final checkpoint) and records in the journal what it is about to change before changing it.
A step that waits longer than ``timeout`` stops the command (exit 1) saying what it waits for; run
again, it resumes there. Fencing is by ACLs where the source has an authorizer, and in every case
the source ends must then stay still for ``quiet_seconds``: a super user's writes pass any ACL,
and a record written after the drain would be left behind.
"""
from __future__ import annotations

import fcntl
import os
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from mirrorspark.client.failover import FailoverPlan, execute_failover, plan_failover
from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.control.admin import admin_client, partition_offsets
from mirrorspark.control.client_settings import admin_settings
from mirrorspark.control.groups import GroupDescription, RdkafkaGroups
from mirrorspark.control.share_groups import ShareGroup, ShareGroups, share_groups
from mirrorspark.cutover.journal import STEPS, Journal, Journals
from mirrorspark.errors import Conflict, NotFound, OperationalError
from mirrorspark.integrity.loss import LossReport
from mirrorspark.partition import Partition
from mirrorspark.policy import policy_for_flow
from mirrorspark.policy.topic_selection import TopicSelection
from mirrorspark.rest.client import RestUnanswered, read_json

EVERYONE = "User:*"
POLL_SECONDS = 1.0


class StillWaiting(OperationalError):
    """A step waited ``timeout`` seconds for its fact; the journal keeps the step for the next run."""


class PromotionRunning(Conflict):
    """Another ``promote`` of the same flow holds the lock."""


@contextmanager
def exclusive(folder: Path, flow: str) -> Iterator[None]:
    """One ``promote --execute``/``--abort`` of a flow at a time (released by the kernel if killed)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / (flow.replace("->", "-to-") + ".lock"), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PromotionRunning(f"another `mirrorspark promote` of {flow} is running with this state dir; "
                                   "wait for it, or stop it and run again (it resumes where that one stopped)") \
                from None
        yield
    finally:
        os.close(fd)


@dataclass(frozen=True, kw_only=True)
class Rest:
    """The REST API of the instance that writes the flow."""

    base: str
    token: str | None
    cacert: Path | None = None

    def get(self, path: str) -> Any:
        return read_json(f"{self.base}{path}", self.token, self.cacert)

    def post(self, path: str, body: Any = None) -> Any:
        return read_json(f"{self.base}{path}", self.token, self.cacert, post=True, body=body)


def _path(flow: str) -> str:
    return "/flows/" + urllib.parse.quote(flow, safe="")


def share_resume_at(*, start: int, lag: int | None, end: int) -> int:
    """The source offset a share group resumes from on the target: the partition's end when it has
    acknowledged every record up to it (lag 0: Kafka moves the stored start offset lazily), else its
    start offset, so records it acknowledged above that one are delivered again (at least once)."""
    return end if lag == 0 else start


def _deny(topic: str) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, EVERYONE, "*", AclOperation.WRITE,
                      AclPermissionType.DENY)


def _deny_filter(topic: str) -> AclBindingFilter:
    return AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, EVERYONE, "*",
                            AclOperation.WRITE, AclPermissionType.DENY)


class Promotion:
    """The cutover of ``flow`` (A->B) to its target, with ``reverse`` (B->A) as the way back."""

    def __init__(self, *, config: MirrorConfig, flow: FlowConfig, reverse: FlowConfig, rest: Rest,
                 journals: Journals, losses: Sequence[LossReport] | None, max_lag: int, quiet_seconds: float,
                 timeout: float, say: Callable[[str], None]) -> None:
        self.config = config
        self.flow = flow
        self.reverse = reverse
        self.rest = rest
        self.journals = journals
        self.losses = losses
        self.max_lag = max_lag
        self.quiet_seconds = quiet_seconds
        self.timeout = timeout
        self.say = say
        self._source_admin: AdminClient | None = None

    @property
    def source_admin(self) -> AdminClient:
        if self._source_admin is None:
            self._source_admin = admin_client(admin_settings(self.flow.source))
        return self._source_admin

    # -- running ----------------------------------------------------------------------------------

    def run(self, journal: Journal) -> Journal:
        """Run the steps from the journal's one to the end; the journal is saved after each."""
        steps = {"lag": self._lag, "fence": self._fence, "quiet": self._quiet, "drain": self._drain,
                 "groups": self._groups, "stop": self._stop}
        while journal.step != "done":
            began = time.monotonic()
            step = journal.step
            self.say(f"step {step}: {self._describe(step, journal)}")
            steps[step](journal)
            journal.timings[step] = round(journal.timings.get(step, 0.0) + time.monotonic() - began, 1)
            journal.step = STEPS[STEPS.index(step) + 1]
            self.journals.save(journal)
            self.say(f"step {step}: done in {journal.timings[step]:.1f} s")
        return journal

    def _describe(self, step: str, journal: Journal) -> str:
        source, target = self.flow.source.alias, self.flow.target.alias
        return {
            "lag": f"waiting until the lag of {self.flow.name} is at most {self.max_lag} record(s)",
            "fence": (f"denying WRITE on {len(journal.topics)} topic(s) of {source} to every principal"
                      if journal.authorizer else f"{source} has no authorizer: its writers are not fenced"),
            "quiet": f"waiting until the ends of {len(journal.topics)} topic(s) on {source} stay still for "
                     f"{self.quiet_seconds:g} s (stop their producers)",
            "drain": f"waiting until every record of those topics is on {target}",
            "groups": f"committing the final offsets of {len(journal.groups)} group(s) on {target}, then the start "
                      "offsets of the share groups that read these topics",
            "stop": f"pausing {self.flow.name}; {self.reverse.name} carries what is written on {target} back",
        }[step]

    def _wait(self, what: str | Callable[[], str], ready: Callable[[], bool]) -> None:
        """``what``: what is waited for, or a function saying it as it stands when the time is up."""
        deadline = time.monotonic() + self.timeout
        while not ready():
            if time.monotonic() > deadline:
                what = what if isinstance(what, str) else what()
                raise StillWaiting(f"still waiting, after {self.timeout:g} s, for {what}; run the same command again "
                                   "to go on waiting (it resumes at this step), or --abort to undo what was done")
            time.sleep(POLL_SECONDS)

    def _view(self, detail: bool = False) -> dict[str, Any]:
        """The flow as its instance shows it; a flow that failed for good stops the promotion."""
        views = self.rest.get(_path(self.flow.name)) if detail else \
            next((v for v in self.rest.get("/flows") if v.get("name") == self.flow.name), None)
        if not isinstance(views, dict):
            raise NotFound(f"{self.rest.base} does not run {self.flow.name}")
        if views.get("state") == "failed":
            raise OperationalError(f"{self.flow.name} failed: {views.get('error')}; fix it (`mirrorspark status`) "
                                   "and run the same command again")
        return views

    def _positions(self, topics: Sequence[str]) -> dict[Partition, tuple[int, int]]:
        """(copied position, source end) of each partition of ``topics`` as the flow's lag probe last
        measured them (the flow's other topics, such as heartbeats, do not hold the cutover up)."""
        rows = self._view(detail=True).get("lag") or []
        return {(row["topic"], row["partition"]): (int(row["position"]), int(row["end_offset"])) for row in rows
                if row.get("topic") in topics}

    def _lag(self, journal: Journal) -> None:
        def under() -> bool:
            positions = self._positions(journal.topics)
            return bool(positions) and sum(max(0, end - at) for at, end in positions.values()) <= self.max_lag

        self._wait(f"the lag of {self.flow.name} on its {len(journal.topics)} topic(s) to fall to {self.max_lag} "
                   "record(s)", under)

    def _fence(self, journal: Journal) -> None:
        if not journal.authorizer:
            return
        journal.acls = list(journal.topics)
        self.journals.save(journal)  # recorded before it is made: --abort removes what may have been created
        results = self.source_admin.create_acls([_deny(t) for t in journal.topics], request_timeout=30)
        for future in results.values():
            try:
                future.result()
            except KafkaException as exc:
                raise OperationalError(f"cluster {self.flow.source.alias} refused the DENY WRITE ACLs: "
                                       f"{exc.args[0].str()}; mirrorspark's principal needs ALTER on the cluster "
                                       "(or use a source without an authorizer, fenced by stopping producers)") \
                    from None

    def _source_partitions(self, topics: Sequence[str]) -> list[Partition]:
        metadata = self.source_admin.list_topics(timeout=30).topics
        return sorted((t, p) for t in topics if t in metadata for p in metadata[t].partitions)

    def _quiet(self, journal: Journal) -> None:
        partitions = self._source_partitions(journal.topics)
        seen: dict[Partition, int] = {}
        since = time.monotonic()

        def still() -> bool:
            nonlocal seen, since
            ends = partition_offsets(self.source_admin, partitions, timeout=30)
            if ends != seen:
                seen, since = ends, time.monotonic()
            return time.monotonic() - since >= self.quiet_seconds

        self._wait(f"the ends of {len(partitions)} partition(s) on {self.flow.source.alias} to stay still for "
                   f"{self.quiet_seconds:g} s", still)
        journal.quiet_ends = [[t, p, seen[(t, p)]] for t, p in sorted(seen)]
        journal.quiet_at = time.time()

    def _drain(self, journal: Journal) -> None:
        def drained() -> bool:
            positions = self._positions(journal.topics)
            return all(positions.get((t, p), (-1, 0))[0] >= end for t, p, end in journal.quiet_ends)

        self._wait(f"{self.flow.name} to copy every record of its topics up to their still ends", drained)

    def _groups(self, journal: Journal) -> None:
        target = self.flow.target.alias
        for group in journal.groups:
            if group in journal.committed:
                continue
            plan = self._final_plan(group)
            journal.before[group] = [[r.topic, r.partition, r.current] for r in plan.partitions]
            self.journals.save(journal)
            written = execute_failover(self.config, plan)  # GroupActive when it has consumers on the target
            journal.committed[group] = [[t, p, o] for (t, p), o in sorted(written.items())]
            self.journals.save(journal)
            self.say(f"  group {group}: {len(written)} offset(s) committed on {target}")
        self._share_groups(journal)

    def _share_groups(self, journal: Journal) -> None:
        """Each share group with start offsets on the topics: once it has no member on the source,
        its start offsets, translated through the flow's offset mapping, are set on the target."""
        source, target = share_groups(self.flow.source), share_groups(self.flow.target)
        try:
            if journal.share_groups is None:
                journal.share_groups = [g for g in source.ids()
                                        if any(t in journal.topics for t, _ in source.start_offsets(g))]
                self.journals.save(journal)
            for group in journal.share_groups:
                if group not in journal.share_committed:
                    self._move_share_group(journal, group, source, target)
        finally:
            source.close()
            target.close()

    def _move_share_group(self, journal: Journal, group: str, source: ShareGroups, target: ShareGroups) -> None:
        source_alias, target_alias = self.flow.source.alias, self.flow.target.alias
        members: list[str] = []

        def idle() -> bool:
            found = source.describe(group)
            if found.idle:
                return True
            if list(found.members) != members:
                members[:] = found.members
                self.say(f"  share group {group}: waiting until its {len(members)} consumer(s) on {source_alias} stop: "
                         f"{', '.join(members)}")
            return False

        self._wait(lambda: f"share group {group}'s consumers on {source_alias} to stop ({', '.join(members)})", idle)
        ends = {(t, p): e for t, p, e in journal.quiet_ends}
        resume = {(t, p): share_resume_at(start=start, lag=lag, end=ends.get((t, p), start))
                  for (t, p), (start, lag) in source.start_offsets(group).items() if t in journal.topics}
        offsets = self._translated(group, resume, ends)
        _refuse_active(target.describe(group), target_alias)
        before = target.start_offsets(group)
        settings, settings_before = source.configs(group), target.configs(group)
        journal.share_before[group] = [[t, p, before[(t, p)][0] if (t, p) in before else None]
                                       for t, p in sorted(offsets)]
        journal.share_configs_before[group] = {name: settings_before.get(name) for name in settings}
        self.journals.save(journal)
        # its own settings first: a partition it never started on the source (no start offset) begins on
        # the target as on the source (share.auto.offset.reset)
        target.set_configs(group, settings)
        target.set_start_offsets(group, offsets)
        journal.share_committed[group] = [[t, p, o] for (t, p), o in sorted(offsets.items())]
        self.journals.save(journal)
        self.say(f"  share group {group}: {len(offsets)} start offset(s) set on {target_alias} (records it "
                 "acknowledged above its start offset on the source are delivered again: at least once)")

    def _translated(self, group: str, resume: dict[Partition, int], ends: dict[Partition, int]) -> dict[Partition, int]:
        """``resume`` (source offsets) as the remote partitions' offsets, from the running flow's offset
        mapping. A partition the mapping cannot place while the source holds records after the offset
        stops the step: set anywhere, the group would skip or repeat records without a count."""
        if not resume:
            return {}
        rows = self.rest.post(f"{_path(self.flow.name)}/translate",
                              body={"positions": [{"topic": t, "partition": p, "offset": o}
                                                  for (t, p), o in sorted(resume.items())]})
        selection = TopicSelection(self.flow, policy_for_flow(self.flow.settings, self.flow.source.alias))
        out: dict[Partition, int] = {}
        for row in rows:
            topic, partition, offset, target = row["topic"], row["partition"], row["offset"], row["target_offset"]
            if target is None:
                if ends.get((topic, partition), 0) > offset:
                    raise OperationalError(f"share group {group}: {self.flow.name}'s offset mapping has no target "
                                           f"offset for {topic}[{partition}] at {offset}; run the same command again "
                                           "once the flow has copied it, or --abort")
                continue  # nothing after it on the source: the group has nothing to resume there
            out[(selection.remote_name(topic), partition)] = int(target)
        return out

    def _final_plan(self, group: str) -> FailoverPlan:
        """The group's failover plan once it has no consumer left on the source (its later commits
        would be left behind), its checkpoints match its commits there and nothing it has not read
        is missing on the target. Classic and new-protocol (KIP-848) groups alike."""
        source, target = self.flow.source.alias, self.flow.target.alias
        plans: list[FailoverPlan] = []
        groups = RdkafkaGroups(admin=self.source_admin, cluster=f"cluster {source}")
        members: list[str] = []

        def final() -> bool:
            described = groups.describe_all([group]).get(group)
            if isinstance(described, GroupDescription) and described.members:
                if list(described.names) != members:
                    members[:] = described.names
                    self.say(f"  group {group}: waiting until its {described.members} consumer(s) on {source} stop: "
                             f"{', '.join(described.names) or 'names not given'}")
                return False
            members.clear()
            plan = plan_failover(self.config, group, source, target, self.losses)
            plans[:] = [plan]
            return plan.source_reachable and all(
                row.behind_checkpoint == 0 and not row.not_replicated and not row.past_end for row in plan.partitions)

        self._wait(lambda: f"group {group}'s consumers on {source} to stop ({', '.join(members)})" if members else
                   f"the final checkpoints of group {group} (matching its commits on {source})", final)
        return plans[0]

    def _stop(self, journal: Journal) -> None:
        journal.paused = True
        self.journals.save(journal)
        self.rest.post(f"{_path(self.flow.name)}/pause")  # a 409 (not written here) ends the command
        state = self._view().get("state")
        if state != "paused":
            raise OperationalError(f"{self.flow.name} is {state} after the pause; run the same command again")
        back = next((v for v in self.rest.get("/flows") if v.get("name") == self.reverse.name), None)
        if back is not None and back.get("state") == "paused":
            journal.reverse_resumed = True
            self.journals.save(journal)
            self._resume(self.reverse.name)
        elif back is None:
            self.say(f"  {self.reverse.name} does not run in this instance: start it where it is written")

    def _resume(self, flow: str) -> None:
        try:
            self.rest.post(f"{_path(flow)}/resume")
        except RestUnanswered as exc:
            if " answered 409" not in str(exc):  # 409: not paused (a pause recorded but never made)
                raise

    # -- undoing ----------------------------------------------------------------------------------

    def abort(self, journal: Journal) -> list[str]:
        """Undo what the journal records, newest first; returns what was undone."""
        undone: list[str] = []
        if journal.reverse_resumed:
            try:
                self.rest.post(f"{_path(self.reverse.name)}/pause")
            except RestUnanswered as exc:
                if " answered 409" not in str(exc):  # 409: paused already, or not written here
                    raise
            undone.append(f"{self.reverse.name} paused again")
        if journal.paused:
            self._resume(self.flow.name)
            undone.append(f"{self.flow.name} resumed")
        if journal.committed or journal.before:
            undone += self._restore_groups(journal)
        if journal.share_before:
            undone += self._restore_share_groups(journal)
        return undone + self.release(journal)

    def release(self, journal: Journal) -> list[str]:
        """Remove the DENY WRITE ACLs a finished promotion left on its source (writes go there again)."""
        if not journal.acls:
            return []
        results = self.source_admin.delete_acls([_deny_filter(t) for t in journal.acls], request_timeout=30)
        for future in results.values():
            future.result()
        return [f"DENY WRITE removed from {len(journal.acls)} topic(s) on {self.flow.source.alias}"]

    def _restore_groups(self, journal: Journal) -> list[str]:
        target = self.flow.target.alias
        admin = admin_client(admin_settings(self.flow.target))
        groups = RdkafkaGroups(admin=admin, cluster=f"cluster {target}")
        done = []
        for group, rows in journal.before.items():
            if not groups.describe(group).idle:
                raise Conflict(f"group {group!r} has consumers on {target}: stop them, then run --abort again "
                               "(its offsets there are put back as they were before the promotion)")
            earlier = {(t, p): (o, "") for t, p, o in rows if o is not None}
            if earlier:
                groups.commit(group, earlier)
                done.append(f"group {group}: {len(earlier)} offset(s) on {target} put back")
            if len(earlier) < len(rows):  # partitions it had no offset for: the group did not exist there
                if not earlier:
                    for future in admin.delete_consumer_groups([group], request_timeout=30).values():
                        future.result()
                    done.append(f"group {group}: deleted on {target} (it had no offsets there before)")
                else:
                    done.append(f"group {group}: {len(rows) - len(earlier)} partition(s) keep the committed offset "
                                f"(none before; Kafka deletes a partition's offset only with the whole group)")
        return done

    def _restore_share_groups(self, journal: Journal) -> list[str]:
        target_alias = self.flow.target.alias
        target = share_groups(self.flow.target)
        done = []
        try:
            for group, rows in journal.share_before.items():
                _refuse_active(target.describe(group), target_alias, undoing=True)
                settings = journal.share_configs_before.get(group, {})
                target.set_configs(group, settings)
                if settings:
                    done.append(f"share group {group}: its settings on {target_alias} put back ({', '.join(settings)})")
                earlier = {(t, p): o for t, p, o in rows if o is not None}
                if earlier:
                    target.set_start_offsets(group, earlier)
                    done.append(f"share group {group}: {len(earlier)} start offset(s) on {target_alias} put back")
                elif rows:
                    target.delete(group)
                    done.append(f"share group {group}: deleted on {target_alias} (no start offsets there before)")
                if earlier and len(earlier) < len(rows):
                    done.append(f"share group {group}: {len(rows) - len(earlier)} partition(s) keep the start offset "
                                "set (none before)")
        finally:
            target.close()
        return done


def _refuse_active(group: ShareGroup, cluster: str, undoing: bool = False) -> None:
    """A share group's start offsets are set only while it has no member (Kafka refuses otherwise)."""
    if not group.idle:
        again = "--abort again" if undoing else "the same command again"
        raise Conflict(f"share group {group.group!r} has consumers on {cluster}: {', '.join(group.members)}; stop "
                       f"them, then run {again}")
