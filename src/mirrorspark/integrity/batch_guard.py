"""Per micro-batch integrity: loss detection around each write and resuming an interrupted batch.

Before a batch writes: target partitions it writes for the first time get their end recorded (the
resume marks), with ``mirrorspark.data.loss = fail`` the source is checked for a gap first, and a
batch a crash interrupted is told which target records an earlier attempt wrote. After it wrote:
a partition whose first record read is past the batch's planned start while the source's log start
is too has lost the records in between (retention, ``deleteRecords``) and is reported; a partition
whose end went back before its planned start was truncated. A partition that went back or appears
has its topic's id checked before the write: a re-created topic is read again from its start.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from mirrorspark.errors import OperationalError
from mirrorspark.integrity.loss import LossLog
from mirrorspark.integrity.spark_offsets import Positions
from mirrorspark.integrity.write_marks import WriteMarks
from mirrorspark.partition import Partition
from mirrorspark.sink_report import ResumeRange, TopicIds, resume_option

log = logging.getLogger(__name__)

OffsetsOf = Callable[[list[Partition]], dict[Partition, int]]
GONE = "no longer on the source (retention or deleteRecords removed them before they were copied)"


class DataLossStop(OperationalError):
    """``mirrorspark.data.loss = fail`` and the next batch would copy past a gap: the flow stops."""


class RemoteTopicGone(OperationalError):
    """A remote partition the batch would write ends below what the flow wrote to it: the remote
    topic was deleted (and maybe re-created) or truncated. Nothing is written; the flow restarts at
    once, and the restart's topic check re-creates and refills it (``TopicIdentity``)."""


class Fenced(OperationalError):
    """This process no longer holds the flow's lease: another instance writes it. Nothing is written."""


class TopicCheck(Protocol):
    """The flow's topic identity as a batch needs it (``TopicIdentity``)."""

    def check(self, remote: Mapping[str, str], partitions: Mapping[str, int], full: bool = True) -> bool: ...

    def sink_ids(self, remote: Mapping[str, str]) -> list[TopicIds]: ...


class BatchGuard:
    def __init__(self, *, flow_name: str, marks: WriteMarks, loss: LossLog, source_starts: OffsetsOf,
                 target_ends: OffsetsOf, fail_on_loss: bool,
                 rewinds_pending: Callable[[], set[str]] = set, writing: Callable[[], bool] | None = None,
                 identity: TopicCheck | None = None, listing_wait: float = 30.0) -> None:
        self.flow_name = flow_name
        # How long a remote partition created moments before may stay unlisted by the target before the
        # flow restarts to create it (the measured lag: docs/adr/0027-grouped-source-real-time.md, section 9).
        self.listing_wait = listing_wait
        self.identity = identity  # asked first when a source partition went back or appears (None: not asked)
        self.writing = writing  # the flow's lease is held and confirmed (None: no lease)
        self.rewinds_pending = rewinds_pending  # source topics to be read again from their start at the restart
        self.marks = marks
        self.loss = loss
        self.source_starts = source_starts
        self.target_ends = target_ends
        self.fail_on_loss = fail_on_loss

    def before_write(self, batch_id: int, planned: str, starts: Positions, ends: Positions,
                     remote: Mapping[str, str], rerun: bool) -> str:
        """Checks before the write; returns the sink's ``resume`` option ('' when nothing to resume)."""
        if self.writing is not None and not self.writing():
            raise Fenced(f"flow {self.flow_name}: fenced: this process no longer holds the flow's lease (another "
                         f"instance writes it, or this one was stopped too long); batch {batch_id} is not written")
        targets = sorted({(remote[t], p) for t, p in ends if t in remote})
        self._check_targets(starts, ends, remote)
        self.learn_new_targets(targets)
        if self.fail_on_loss:
            gaps = self._gaps(starts, ends, remote, {})
            if gaps:
                self._report(gaps)
                raise DataLossStop(f"flow {self.flow_name}: source records are gone before they were copied "
                                   f"({sum(g[3] - g[2] for g in gaps)} record(s)) and mirrorspark.data.loss = fail; "
                                   "the flow is stopped before it copies past the gap (set it to report to go on)")
        if not rerun:
            return ""
        start_marks = self.marks.resume_from(batch_id, planned)
        now = self.target_ends(targets)
        ranges = []
        for target in targets:
            begin, end = start_marks.get(target), now.get(target)
            if begin is not None and end is not None and end > begin:
                ranges.append(ResumeRange(target[0], target[1], begin, end))
        if ranges:
            log.info("flow %s: batch %d was interrupted; %d target record(s) an earlier attempt wrote are "
                     "compared before anything is sent again", self.flow_name, batch_id,
                     sum(r.records for r in ranges))
        return resume_option(ranges)

    def learn_new_targets(self, targets: Sequence[Partition]) -> None:
        """Record the target end of each partition this flow has never written, before it writes there:
        a first write interrupted is compared from that end at the restart, not sent again uncounted.
        A remote partition created moments before may not be listed yet: it is asked again until it is,
        and never written unrecorded; one still unlisted after ``listing_wait`` seconds makes the flow
        restart, whose topic check creates it."""
        unknown = self.marks.unknown_targets(targets)
        deadline = time.monotonic() + self.listing_wait
        while unknown:
            ends = self.target_ends(unknown)
            if ends:
                self.marks.learn_targets(ends)
            unknown = [t for t in unknown if t not in ends]
            if unknown and time.monotonic() >= deadline:
                shown = ", ".join(f"{t}[{p}]" for t, p in unknown[:3])
                raise RemoteTopicGone(
                    f"flow {self.flow_name}: remote partition(s) {shown}"
                    f"{f' and {len(unknown) - 3} more' if len(unknown) > 3 else ''} are not listed by the target "
                    f"{self.listing_wait:g} s after they were asked for; nothing is written to them before their "
                    "end is recorded, and the flow restarts to create them")
            if unknown:
                time.sleep(0.2)

    def _check_targets(self, starts: Positions, ends: Positions, remote: Mapping[str, str]) -> None:
        """Refuse to write newer records into a remote partition that went back: the refill of a
        re-created remote topic must come first, in order; the same for a source topic found re-created
        when one of its partitions went back or appeared."""
        changed = {t for (t, p), end in ends.items() if t in remote and ((t, p) not in starts or end < starts[(t, p)])}
        if changed and self.identity is not None:
            # A partition that went back (truncated, or its topic deleted and re-created) or that the
            # source lists anew (after a deletion, or new): a re-created topic must be read again from
            # its start, with the sink told its new id, and the old one's copies are not lost; so the
            # ids are read before anything is written, not at the next round of the topic check.
            counts: dict[str, int] = {}
            for topic, partition in ends:
                if topic in changed:
                    counts[topic] = max(counts.get(topic, 0), partition + 1)
            self.identity.check({t: remote[t] for t in changed}, counts, full=False)
        pending = sorted(self.rewinds_pending() & {t for t, _ in ends})
        if pending:
            raise RemoteTopicGone(f"flow {self.flow_name}: {', '.join(pending)} must be read again from the start "
                                  "(its remote topic or itself was re-created); the flow restarts to do so before it "
                                  "copies anything newer")
        writing = [(remote[t], p) for (t, p), end in ends.items() if t in remote and end > starts.get((t, p), 0)]
        marks = self.marks.target_marks(writing)
        if not marks:
            return
        now = self.target_ends(sorted(marks))
        back = sorted(t for t, mark in marks.items() if now.get(t, -1) < mark)
        if back:
            shown = ", ".join(f"{t}[{p}] (end {now.get((t, p), 'gone')}, this flow wrote up to {marks[(t, p)]})"
                              for t, p in back[:3])
            raise RemoteTopicGone(f"flow {self.flow_name}: remote partition(s) went back on the target: {shown}"
                                  f"{f' and {len(back) - 3} more' if len(back) > 3 else ''}; the flow restarts to "
                                  "re-create and refill them before it copies anything newer")

    def sink_topic_ids(self, remote: Mapping[str, str]) -> list[TopicIds]:
        """The planned topics' ids for the sink's ``topicIds`` option (none without an identity check)."""
        return self.identity.sink_ids(remote) if self.identity is not None else []

    def retry_from(self, batch_id: int, planned: str, starts: Positions, ends: Positions,
                   remote: Mapping[str, str]) -> str:
        """The sink's ``retryFrom`` option: each target partition this batch writes to and its end
        when the batch started. A task attempt Spark retries (an executor lost, a task error) compares
        from there with what the target holds, so what the failed attempt wrote is not sent again."""
        targets = [(remote[t], p) for (t, p), end in ends.items() if t in remote and end > starts.get((t, p), 0)]
        marks = self.marks.starts_of(batch_id, planned, targets)
        return "\n".join(f"{topic}\t{partition}\t{mark}" for (topic, partition), mark in sorted(marks.items()))

    def after_write(self, starts: Positions, ends: Positions, remote: Mapping[str, str],
                    first_written: Mapping[Partition, int]) -> None:
        """Report the source records this batch should have read and could not (report mode)."""
        if self.fail_on_loss:
            return  # checked before the write
        gaps = self._gaps(starts, ends, remote, first_written)
        if gaps:
            self._report(gaps)

    def _gaps(self, starts: Positions, ends: Positions, remote: Mapping[str, str],
              first_written: Mapping[Partition, int]) -> list[tuple[str, int, int, int, str]]:
        """(topic, partition, first lost, end of loss, reason) for this batch's ranges."""
        gaps = []
        candidates = []
        for (topic, partition), end in ends.items():
            start = starts.get((topic, partition))
            if start is None or topic not in remote:
                continue
            if end < start:
                gaps.append((topic, partition, end, start,
                             f"the partition went back from offset {start} to {end} (truncated by an unclean leader "
                             "election, or re-created): the target holds records the source no longer has, and "
                             f"records written below offset {end} since then were not copied"))
                continue
            first = first_written.get((remote[topic], partition), end)
            if end > start and first > start:
                candidates.append((topic, partition))
        if candidates:
            log_starts = self.source_starts(candidates)
            for topic, partition in candidates:
                start = starts[(topic, partition)]
                first = first_written.get((remote[topic], partition), ends[(topic, partition)])
                lost_to = min(log_starts.get((topic, partition), start), first)
                if lost_to > start:
                    gaps.append((topic, partition, start, lost_to, GONE))
        return gaps

    def _report(self, gaps: list[tuple[str, int, int, int, str]]) -> None:
        for topic, partition, first, end, reason in gaps:
            self.loss.report(topic, partition, first, end - 1, reason)
