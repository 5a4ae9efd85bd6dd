"""Topic ids of a flow's source and remote topics, remembered in the state, so that a topic that
was deleted and re-created under the same name is noticed instead of being read (or translated
into) with the old topic's offsets.

A re-created **source** topic is read again from its beginning (Spark's checkpoint is moved back
for it), the old topic's records not copied before its deletion are reported lost (counted from the
end offsets last seen), and the old offset mapping is dropped. A re-created or deleted **remote**
topic is re-created by the topic refresh and *refilled*: Spark's checkpoint is moved back to the
source's log start for its source topic, so the new remote topic again holds what the source holds,
in order, before anything newer (a batch never writes into a remote topic whose end went back below
what the flow wrote: see ``BatchGuard``). The offset mapping is bound to the new topic and rebuilt
by the refill; only the records the old remote topic held that the source no longer has are
reported lost. A remote partition whose end went back below what the flow wrote (truncated by an
unclean leader election) is reported and its mapping cut at the new end. Losses are counted by
offsets (Span), so a check that fails half-way and runs again, or a truncation seen before the
re-creation, never counts one record twice.

Exactly-once: the sink skips rows its committed progress says are on the target, and that progress
is kept per remote partition, on the target and in the producers the executors keep. Each batch
tells the sink the ids seen here (``sink_ids``, its ``topicIds`` option) and the sink commits its
progress with them; progress committed for other ids, read from the target or kept in memory, is not
used, so a rewind for a re-created topic makes every executor forget it at the next batch (a call
from here could reach only the driver's JVM).
"""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from confluent_kafka.admin import AdminClient

from mirrorspark.control.admin import partition_offsets, topic_ids, topic_layout
from mirrorspark.integrity.loss import LossLog, Span
from mirrorspark.integrity.spark_offsets import SparkOffsetLog
from mirrorspark.integrity.write_marks import WriteMarks
from mirrorspark.partition import Partition, kafka_topic_id
from mirrorspark.sink_report import TopicIds
from mirrorspark.state.files import StateFiles

log = logging.getLogger(__name__)

FILE = "topic-ids.json"


def _kafka_ids(entry: Any) -> Any:
    """An older-copies entry (this state's or the target's) with its topic ids as Kafka writes them."""
    if not isinstance(entry, dict):
        return entry
    out = dict(entry)
    if isinstance(out.get("id"), str):
        out["id"] = kafka_topic_id(out["id"])
    out["generations"] = [{**g, "source_id": kafka_topic_id(g["source_id"])}
                          if isinstance(g, dict) and isinstance(g.get("source_id"), str) else g
                          for g in out.get("generations", [])]
    if "generations" not in entry:
        del out["generations"]
    if isinstance(out.get("held_from"), dict):
        out["held_from"] = {kafka_topic_id(k): v for k, v in out["held_from"].items()}
    return out


class OffsetMapping(Protocol):
    """The flow's source -> target offset mapping, as far as topic identity changes it."""

    def forget_topic(self, topic: str) -> None: ...

    def bind_remote(self, topic: str, remote: str, partitions: int, starts: Callable[[], dict[int, int]]) -> None: ...

    def truncate_remote(self, topic: str, partition: int, end: int) -> None: ...

    def first_upstream(self, topic: str, partition: int) -> int | None: ...


class OlderCopiesStore(Protocol):
    """Where the older generations' copies a remote topic holds are kept for every instance of the
    flow (``coordination.claims.SharedOlderCopies``); None keeps them in this state only."""

    def read(self, remote: str) -> dict | None: ...

    def write(self, remote: str, entry: dict | None) -> None: ...

    def read_all(self, remotes: list[str]) -> dict[str, dict | None]: ...

    def write_all(self, entries: dict[str, dict | None]) -> None: ...


class TopicIdentity:
    """Checks one flow's topics against the ids (and source end offsets) seen last."""

    def __init__(self, *, files: StateFiles, flow_name: str, source: AdminClient, target: AdminClient,
                 loss: LossLog, marks: WriteMarks, spark_log: SparkOffsetLog,
                 mapping: OffsetMapping, takeover: Mapping[Partition, int] | None = None,
                 rewind_takeover: Callable[[str, Mapping[int, int]], object] | None = None,
                 shared: OlderCopiesStore | None = None) -> None:
        """``takeover``: where the query's first batch starts (a takeover, or a start without state that
        resumes after the target's copies), what was copied before any batch is committed;
        ``rewind_takeover``: moves a re-created topic's takeover positions to its new start;
        ``shared``: the older generations' copies kept for every instance of the flow (with a lease)."""
        self.takeover = takeover if takeover is not None else {}
        self.rewind_takeover = rewind_takeover
        self.files = files
        self.flow_name = flow_name
        self.source = source
        self.target = target
        self.loss = loss
        self.marks = marks
        self.spark_log = spark_log
        self.mapping = mapping
        self.shared = shared
        self.rewinds: dict[str, dict[int, int]] = {}  # source topic -> new start, applied while stopped
        self.moves: dict[str, dict[int, int]] = {}  # source topic -> its truncated partitions' ends, likewise
        self._announced: set[str] = set()  # rewinds a check returned True for, until applied
        self._lock = threading.RLock()  # the refresh, the checkpoint round and a query restart all check
        try:
            saved = json.loads(files.read(FILE) or "{}")
        except ValueError:
            saved = {}
        self.source_ids: dict[str, str] = {t: kafka_topic_id(i) for t, i in saved.get("source", {}).items()}
        self.remote_ids: dict[str, str] = {t: kafka_topic_id(i) for t, i in saved.get("remote", {}).items()}
        self.source_ends: dict[str, dict[str, int]] = saved.get("source_ends", {})
        # Remote topic -> its id and the earlier generations of its source topic (re-created since) it holds
        # copies of: per generation the source topic's id and, per partition, the end of what was copied. A
        # deletion of that remote topic loses them for good. Kept on the target too (``shared``).
        self.older_copies: dict[str, dict] = {remote: _kafka_ids(entry) for remote, entry
                                              in saved.get("older_copies", {}).items()}
        self.remote_leaders: dict[str, dict[int, int]] = {}  # as seen by the last check (this run only)
        # (remote topic, its id, source id) -> the first source offsets this instance put on the target as held
        self._held_noted: dict[tuple[str, str, str], dict[str, int]] = {}

    def _save(self) -> None:
        self.files.write(FILE, json.dumps({"source": self.source_ids, "remote": self.remote_ids,
                                           "source_ends": self.source_ends, "older_copies": self.older_copies}))

    def check(self, remote: Mapping[str, str], partitions: Mapping[str, int], full: bool = True,
              sources: bool = True) -> bool:
        """Compare the planned topics (source -> remote name, source -> partition count) with the
        ids seen last; True when this check found a topic re-created and the query must be restarted
        (``apply_rewinds`` runs while it is stopped). One check at a time: each change is
        reported once.

        A check that is not ``full`` (the checkpoint round's, every few seconds) reads the topics'
        ids and leaders only: it asks for the ends of just the remote partitions whose leader
        changed (an unclean election is what truncates one), and takes the source's ends from
        ``note_source_ends``. Asking thousands of partitions for their offsets every round was
        most of an idle flow's control-plane CPU.

        ``sources`` False leaves a re-created source topic for a later check (real-time mode: until the
        batch writing it is recorded, what the old topic had copied is not known whole)."""
        with self._lock:
            return self._check(remote, partitions, full, sources)

    def note_source_ends(self, ends: Mapping[Partition, int]) -> None:
        """The source's end offsets as the lag probe just read them: what a re-created source
        topic's loss is counted up to, between full checks. Only a higher end is taken: the probe
        does not know the topic's id, and may already read the new topic's (lower) ends."""
        with self._lock:
            for (topic, partition), end in ends.items():
                if topic in self.source_ids:
                    seen = self.source_ends.setdefault(topic, {})
                    seen[str(partition)] = max(end, seen.get(str(partition), end))

    def source_changed(self, topics: list[str]) -> bool:
        """A source topic's id differs from the one seen last: one DescribeTopics of the source, cheap
        enough to ask every few seconds. A re-created topic that grows past the flow's position before
        the check sees it is read on as if it were the old one (the old topic's loss under-counted, the
        new one's records copied again after the rewind): the sooner it is seen, the less of that."""
        now = topic_ids(self.source, topics)
        return any(self.source_ids.get(topic) not in (None, topic_id) for topic, topic_id in now.items())

    def sink_ids(self, remote: Mapping[str, str]) -> list[TopicIds]:
        """Each planned source topic's id and its remote topic's as last seen ('' when not seen yet),
        for the sink's ``topicIds`` option (see the module's docstring)."""
        with self._lock:
            return [TopicIds(source, self.source_ids.get(source, ""), self.remote_ids.get(name, ""))
                    for source, name in sorted(remote.items())]

    def _check(self, remote: Mapping[str, str], partitions: Mapping[str, int], full: bool, sources: bool) -> bool:
        now = topic_ids(self.source, sorted(remote))
        for topic, topic_id in list(now.items()):
            old = self.source_ids.get(topic)
            if old is not None and old != topic_id:
                if not sources:
                    del now[topic]  # seen again by the check that handles it
                    continue
                self._source_recreated(topic, old, topic_id, partitions.get(topic, 0), remote.get(topic))
        self.source_ids.update(now)
        self._check_remote(remote, partitions, full)
        self._bind(remote, partitions)
        if self.shared is not None:
            self._note_held_from(remote)
        if full:
            ends = partition_offsets(self.source, [(t, p) for t in now for p in range(partitions.get(t, 0))])
            for (topic, partition), end in ends.items():
                self.source_ends.setdefault(topic, {})[str(partition)] = end
        self._save()
        new = set(self.rewinds) - self._announced  # a restart already asked for is not asked again
        self._announced |= new
        return bool(new)

    def _source_recreated(self, topic: str, old: str, new: str, count: int, remote: str | None) -> None:
        # Before the query's first committed batch, what was copied ends where the query started (a
        # takeover, or a start without state resumed after the target's copies), not at offset 0.
        position = {**{key: offset for key, offset in self.takeover.items() if key[0] == topic},
                    **self.spark_log.committed_positions()}
        # What the flow wrote of the old topic: a batch that read the new topic before this check
        # (Spark saw its partitions as new, or its ends went back) moved Spark's position below it.
        written = self.marks.source_marks(topic)
        seen = self.source_ends.get(topic, {})
        copied_to = {p: max(position.get((topic, p), 0), written.get(p, 0))
                     for p in {p for t, p in position if t == topic} | set(written) | {int(k) for k in seen}}
        if remote is not None:  # first: a failure here leaves the check to run again, nothing half done
            self._note_older_copies(remote, old, copied_to)
        self.source_ends.pop(topic, None)
        for partition, end in sorted((int(p), e) for p, e in seen.items()):
            copied = copied_to[partition]
            if end > copied:
                self.loss.report(topic, partition, copied, end - 1,
                                 f"the source topic was deleted and re-created (topic id {old} -> {new}) before "
                                 "these records were copied", span=Span.source(topic, copied, end - 1, old))
        starts = partition_offsets(self.source, [(topic, p) for p in range(count)], earliest=True)
        self.rewinds[topic] = {p: o for (_, p), o in starts.items()}
        if self.rewind_takeover is not None:  # else the next start reads the old topic's offsets again
            self.rewind_takeover(topic, self.rewinds[topic])
        if remote is not None:
            self._old_copies_compared_no_more(topic, remote, position, count)
        self.marks.forget_source(topic)
        self.mapping.forget_topic(topic)
        log.warning("flow %s: source topic %s was re-created (topic id %s -> %s); it is replicated again from "
                    "its beginning", self.flow_name, topic, old, new)

    def _note_older_copies(self, remote: str, source_id: str, copied: Mapping[int, int]) -> None:
        """The remote topic now holds copies of an earlier generation of its source topic (``source_id``),
        up to ``copied`` per partition: the refill after a deletion of the remote topic cannot restore
        them. Counted from the generation's first offset: records removed before their copy were
        reported lost in the same log (each is counted once), and a flow copies a topic from its start
        (as MM2 does), or after the copies of the instance or MM2 it took over from, which the remote
        topic holds too."""
        remote_id = self.remote_ids.get(remote)
        ends = {str(p): end for p, end in sorted(copied.items()) if end > 0}
        if not remote_id or not ends:
            return
        entry = self._older_entry(remote, remote_id)
        if not any(g.get("source_id") == source_id for g in entry["generations"]):
            entry["generations"].append({"source_id": source_id, "ends": ends})
        self.older_copies[remote] = entry
        if self.shared is not None:
            self.shared.write(remote, entry)

    def _note_held_from(self, remote: Mapping[str, str]) -> None:
        """Where each remote partition's copies of the current source topic begin, kept on the target
        with the older copies: an instance that took the flow over without state knows only what it
        copied itself (its mapping begins at its resume point), and a deletion of the remote topic
        also loses the copies the instances before it made (the tenth soak run: 1,040 uncounted)."""
        due: dict[str, tuple[str, str, dict[str, int]]] = {}
        written_to = self.marks.written_to(remote.values())  # one pass over the marks for all the topics
        for source, name in sorted(remote.items()):
            remote_id, source_id = self.remote_ids.get(name), self.source_ids.get(source)
            if not remote_id or not source_id:
                continue
            written = written_to[name]
            firsts = {str(p): first for p in sorted(written)
                      if (first := self.mapping.first_upstream(source, p)) is not None}
            noted = self._held_noted.get((name, remote_id, source_id), {})
            if firsts and not all(noted.get(p, first + 1) <= first for p, first in firsts.items()):
                due[name] = (remote_id, source_id, firsts)
        if not due:
            return
        assert self.shared is not None
        shared = self.shared.read_all(sorted(due))  # one read and one write for all of them
        changed: dict[str, dict] = {}
        helds: dict[tuple[str, str, str], dict[str, int]] = {}
        for name, (remote_id, source_id, firsts) in due.items():
            entry = self._merged_entry(name, remote_id, shared[name])
            held = entry.setdefault("held_from", {}).setdefault(source_id, {})
            for p, first in firsts.items():
                if first < held.get(p, first + 1):
                    held[p] = first
                    changed[name] = entry
            helds[(name, remote_id, source_id)] = held
        self.shared.write_all(dict(changed))
        for name, entry in changed.items():
            self.older_copies[name] = entry
        for key, held in helds.items():
            self._held_noted[key] = dict(held)

    def _older_entry(self, remote: str, remote_id: str) -> dict:
        """What this state and the target know of the older copies in ``remote`` (by its id ``remote_id``)."""
        return self._merged_entry(remote, remote_id, self.shared.read(remote) if self.shared is not None else None)

    def _merged_entry(self, remote: str, remote_id: str, shared: dict | None) -> dict:
        """This state's entry of ``remote`` merged with ``shared``, the target's (None: it has none)."""
        entry: dict[str, Any] = {"id": remote_id, "generations": []}
        for known in (self.older_copies.get(remote), _kafka_ids(shared)):
            if not known or known.get("id") != remote_id:
                continue
            if "ends" in known and "generations" not in known:  # kept by an earlier version: target offsets
                entry.setdefault("target", {"starts": known.get("starts", {}), "ends": known["ends"]})
            for generation in known.get("generations", []):
                if not any(g.get("source_id") == generation.get("source_id") for g in entry["generations"]):
                    entry["generations"].append(generation)
            for source_id, firsts in known.get("held_from", {}).items():
                held = entry.setdefault("held_from", {}).setdefault(source_id, {})
                for p, first in firsts.items():
                    held[p] = min(first, held.get(p, first))
            if "target" in known:
                entry.setdefault("target", known["target"])
        return entry

    def _old_copies_compared_no_more(self, topic: str, remote: str, position: Mapping[Partition, int],
                                     count: int) -> None:
        """The records an interrupted batch wrote after the last recorded one are compared with the
        re-run's rows, and the ones past the first difference are counted as copied twice. After a
        re-creation the re-run reads the new topic: the old topic's copies never match and are no
        copies made twice. So a remote partition's comparison starts at its end now, when no attempt
        can have read a record of the new topic: its end is not past the position Spark resumes from
        (where any attempt began reading). Otherwise the comparison stays (it may over-count, never
        miss a copy made twice)."""
        ends = partition_offsets(self.source, [(topic, p) for p in range(count)])
        unread = [p for (_, p), end in ends.items() if end <= position.get((topic, p), 0)]
        written = self.marks.written_to([remote])[remote]
        if not unread or not written:
            return
        now = partition_offsets(self.target, [(remote, p) for p in unread if p in written])
        # A remote partition whose end went back below what was written (an unclean election) keeps its
        # marks: the truncation check that follows reports it.
        self.marks.reset_target(remote, {p: end for (_, p), end in now.items() if end >= written[p]})

    def _check_remote(self, remote: Mapping[str, str], partitions: Mapping[str, int], full: bool) -> None:
        names = {name: source for source, name in remote.items()}
        written = self.marks.written_to(names)  # read before the ends: they only grow
        layout = topic_layout(self.target, sorted(names))
        now = {name: topic_id for name, (topic_id, _) in layout.items()}
        for name, source in names.items():
            old, new = self.remote_ids.get(name), now.get(name)
            if old is not None and new != old:
                self._remote_recreated(name, source, old, new, written[name], partitions.get(source, 0))
        unchanged = [(n, p) for n in names if n in now and now[n] == self.remote_ids.get(n) for p in written[n]
                     if full or layout[n][1].get(p, -1) != self.remote_leaders.get(n, {}).get(p, -1)
                     or layout[n][1].get(p, -1) < 0]
        for (name, partition), end in (partition_offsets(self.target, unchanged) if unchanged else {}).items():
            mark = written[name][partition]
            if end < mark:
                self.loss.report(names[name], partition, -1, -1,
                                 f"remote partition {name}[{partition}] was truncated on the target (an unclean "
                                 f"leader election?): its end went back from {mark} to {end}", records=mark - end,
                                 span=Span.target(name, now[name], end, mark))
                self.marks.reset_target(name, {partition: end})
                self.mapping.truncate_remote(names[name], partition, end)  # its runs point past the end now
        for name in names:
            if name not in now:
                self.remote_ids.pop(name, None)
                self.remote_leaders.pop(name, None)
        self.remote_ids.update(now)
        self.remote_leaders.update({name: leaders for name, (_, leaders) in layout.items()})

    def _remote_recreated(self, name: str, source: str, old: str, new: str | None, written: dict[int, int],
                          partition_count: int) -> None:
        """Refill the new remote topic from the source's log start; report what the source lost meanwhile."""
        older = self._older_entry(name, old)  # first: a target that does not answer leaves nothing half done
        held_from = {p: self.mapping.first_upstream(source, p) for p in written}
        source_id = self.source_ids.get(source)
        for p in written:  # the copies other instances made before this one's mapping begins went too
            recorded = older.get("held_from", {}).get(source_id or "", {}).get(str(p))
            if recorded is not None and (held_from[p] is None or recorded < held_from[p]):
                held_from[p] = recorded
        source_next = self.marks.source_marks(source)
        # Runs not bound yet (written before a check bound their partition, as a takeover's can be) belong
        # to the old topic: bound to it here, the binding to the new topic starts a new mapping instead of
        # adopting them.
        self.mapping.bind_remote(source, f"{name}@{old}", partition_count, dict)
        found = partition_offsets(self.source, [(source, p) for p in range(partition_count)], earliest=True)
        starts = {p: o for (_, p), o in found.items()}
        refilled, lost = 0, 0
        for generation in older["generations"]:
            for key, end in sorted(generation.get("ends", {}).items()):
                said = self.loss.report(source, int(key), 0, end - 1,
                                        f"remote topic {name} was deleted on the target (topic id {old} -> "
                                        f"{new or 'none'}) holding copies of an earlier generation of {source} "
                                        f"(topic id {generation.get('source_id')}, deleted and re-created since), "
                                        "which neither cluster has any more",
                                        span=Span.source(source, 0, end - 1, generation.get("source_id")))
                lost += said.records if said is not None else 0
        target_copies = older.get("target", {})
        for key, end in sorted(target_copies.get("ends", {}).items()):
            start = target_copies.get("starts", {}).get(key, 0)
            if end > start:
                lost += end - start
                self.loss.report(source, int(key), -1, -1,
                                 f"remote topic {name} was deleted on the target (topic id {old} -> "
                                 f"{new or 'none'}) holding copies of an earlier generation of {source} (deleted "
                                 "and re-created since), which neither cluster has any more", records=end - start,
                                 span=Span.target(name, old, start, end))
        kept_here = self.older_copies.pop(name, None) is not None
        if self.shared is not None and (kept_here or older["generations"] or target_copies):
            self.shared.write(name, None)  # the new remote topic holds none of them
        for partition, count in sorted(written.items()):
            if count <= 0:
                continue
            first = held_from.get(partition)
            if first is None:  # no mapping (offset syncs off): the old topic held the last ``count`` copied
                first = max(0, source_next.get(partition, count) - count)
            log_start = starts.get(partition, first)
            refilled += max(0, source_next.get(partition, log_start) - log_start)
            if log_start > first:
                gone = min(count, log_start - first)
                lost += gone
                self.loss.report(source, partition, first, log_start - 1,
                                 f"remote topic {name} was deleted on the target (topic id {old} -> {new or 'none'}) "
                                 f"and the source no longer has offsets {first}..{log_start - 1} (retention or "
                                 "deleteRecords) to copy into the new one", records=gone,
                                 span=Span.source(source, first, log_start - 1, self.source_ids.get(source)))
        if starts:
            self.rewinds[source] = starts
            # Before the query's first committed batch it starts at the takeover positions: left there, the
            # refill's rewound end lies below its start and the topic looks gone back (its copies reported lost).
            if self.rewind_takeover is not None:
                self.rewind_takeover(source, starts)
        self.marks.forget_source(source)  # the refill is no re-copy: the old records are gone from the target
        ends = partition_offsets(self.target, [(name, p) for p in written]) if new else {}
        self.marks.reset_target(name, {p: ends.get((name, p), 0) for p in written})
        log.warning("flow %s: remote topic %s was deleted on the target%s (topic id %s -> %s): it is refilled from "
                    "%s's log start (about %d record(s))%s", self.flow_name, name, " and re-created" if new else "",
                    old, new or "none", source, refilled,
                    f"; {lost} record(s) it held are gone from the source too and are reported lost" if lost else "")

    def _bind(self, remote: Mapping[str, str], partitions: Mapping[str, int]) -> None:
        """Bind each source topic's offset mapping to its remote topic as it is now (name and id)."""
        for source, name in sorted(remote.items()):
            topic_id, count = self.remote_ids.get(name), partitions.get(source, 0)
            if topic_id is None or not count:
                continue  # not created yet: bound by the check after the refresh that creates it

            def starts(name: str = name, count: int = count) -> dict[int, int]:
                found = partition_offsets(self.target, [(name, p) for p in range(count)], earliest=True)
                return {p: o for (_, p), o in found.items()}
            self.mapping.bind_remote(source, f"{name}@{topic_id}", count, starts)

    def source_truncated(self, back: Mapping[Partition, tuple[int, int]]) -> None:
        """Source partitions whose end went back below what was read, their topic unchanged (an unclean
        leader election): ``back`` maps each to (its end now, the offset read up to). Reported as a
        micro-batch reports it, and read on from the end now at the next start."""
        with self._lock:
            for (topic, partition), (end, read) in sorted(back.items()):
                self.loss.report(topic, partition, end, read - 1,
                                 f"the partition went back from offset {read} to {end} (truncated by an unclean "
                                 "leader election): the target holds records the source no longer has, and records "
                                 f"written below offset {read} since then were not copied")
                self.moves.setdefault(topic, {})[partition] = end
                self.marks.move_source(topic, partition, end)
            log.warning("flow %s: source partition(s) went back below what was read: %s; read on from their ends",
                        self.flow_name, ", ".join(f"{t}[{p}] {read} -> {end}" for (t, p), (end, read) in
                                                  sorted(back.items())))

    def rewinds_pending(self) -> set[str]:
        """Source topics the next start reads again from their beginning or moves back (checked before each
        batch)."""
        return set(self.rewinds) | set(self.moves)

    def apply_rewinds(self) -> None:
        """Move Spark's checkpoint back for re-created source topics, and truncated partitions to their
        ends (the query must be stopped)."""
        rewinds, self.rewinds = self.rewinds, {}  # the refresh thread may add one meanwhile
        moves, self.moves = self.moves, {}
        self._announced -= set(rewinds)
        for topic, starts in rewinds.items():
            self.spark_log.rewind(topic, starts)
        for topic, starts in moves.items():
            if topic not in rewinds:
                self.spark_log.rewind(topic, starts, merge=True)
