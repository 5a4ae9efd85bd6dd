"""A promotion's journal: where it stands and everything it changed, written before each change.

``promote --execute`` may be killed at any moment; run again, it reads the journal and resumes at
the step it records; ``--abort`` reads it to undo exactly what was done (the ACLs it created, the
flow it paused, the group offsets and share groups' start offsets it committed, each with what was
there before). The journal is
written (durably, temp + rename + fsync) before the change it records, so a change is never made
without a trace; undoing one that was recorded but never made is harmless.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from mirrorspark.errors import OperationalError
from mirrorspark.state.files import LocalFiles

FORMAT = 1
# The steps in order; a journal names the next one to run.
STEPS = ("lag", "fence", "quiet", "drain", "groups", "stop", "done")


class JournalUnreadable(OperationalError):
    """The journal file exists but is not one this version wrote."""


@dataclass(kw_only=True)
class Journal:
    """One promotion of ``flow``; offsets are ``[topic, partition, offset]`` rows (offset None: none
    was committed), so the JSON reads plainly."""

    flow: str
    step: str = STEPS[0]
    started: float = field(default_factory=time.time)
    topics: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    authorizer: bool = False
    acls: list[str] = field(default_factory=list)            # topics denied WRITE to every principal
    quiet_ends: list[list[Any]] = field(default_factory=list)
    quiet_at: float | None = None
    before: dict[str, list[list[Any]]] = field(default_factory=dict)     # group -> its offsets on the target
    committed: dict[str, list[list[Any]]] = field(default_factory=dict)  # group -> what promote committed
    # Share groups (KIP-932) with start offsets on the topics, found at the groups step (None: not yet
    # looked for); their start offsets on the target before and after, as for consumer groups.
    share_groups: list[str] | None = None
    share_before: dict[str, list[list[Any]]] = field(default_factory=dict)
    share_committed: dict[str, list[list[Any]]] = field(default_factory=dict)
    share_configs_before: dict[str, dict[str, str | None]] = field(default_factory=dict)  # its settings on the target
    paused: bool = False
    reverse_resumed: bool = False  # the reverse flow was paused and the stop step resumed it
    timings: dict[str, float] = field(default_factory=dict)  # step -> seconds it took

    def as_json(self) -> str:
        return json.dumps({"format": FORMAT, **asdict(self)}, indent=2)


def _name(flow: str) -> str:
    return flow.replace("->", "-to-") + ".json"


class Journals:
    """The journals of one state folder (``<state-dir>/promote``)."""

    def __init__(self, files: LocalFiles) -> None:
        self.files = files

    def load(self, flow: str) -> Journal | None:
        text = self.files.read(_name(flow))
        if text is None:
            return None
        where = f"{self.files.uri()}/{_name(flow)}"
        try:
            data = json.loads(text)
            if data.pop("format", None) != FORMAT:
                raise JournalUnreadable(f"{where}: not a promotion journal of format {FORMAT}; move it aside if no "
                                        "promotion is under way")
            return Journal(**data)
        except (ValueError, TypeError) as exc:
            raise JournalUnreadable(f"{where} cannot be read ({exc}); move it aside if no promotion is under "
                                    "way") from None

    def view(self, flow: str) -> dict[str, Any] | None:
        """A ``promote`` of ``flow`` under way as REST shows it (its step among ``STEPS``), or None."""
        try:
            journal = self.load(flow)
        except JournalUnreadable as exc:
            return {"error": str(exc)}
        if journal is None:
            return None
        return {"step": journal.step, "steps": list(STEPS), "started": journal.started,
                "topics": len(journal.topics), "groups": len(journal.groups),
                "share_groups": len(journal.share_groups or ()), "fenced": len(journal.acls),
                "paused": journal.paused, "timings": dict(journal.timings)}

    def save(self, journal: Journal) -> None:
        self.files.write(_name(journal.flow), journal.as_json())

    def last_finished(self, flow: str) -> tuple[str, Journal] | None:
        """The newest promotion of ``flow`` that ran to its end (kept by ``close``) and its file name."""
        kept = re.compile(re.escape(_name(flow)[:-5]) + r"-\d{8}T\d{6}-done\.json")
        for name in sorted((n for n in self.files.list() if kept.fullmatch(n)), reverse=True):
            text = self.files.read(name)
            if text is not None:
                data = json.loads(text)
                data.pop("format", None)
                return name, Journal(**data)
        return None

    def close(self, journal: Journal, outcome: str) -> str:
        """Keep a finished (``done``) or ``aborted`` journal under a dated name, so the next promotion
        of the flow starts afresh; returns that name."""
        kept = f"{_name(journal.flow)[:-5]}-{time.strftime('%Y%m%dT%H%M%S')}-{outcome}.json"
        self.files.write(kept, journal.as_json())
        self.files.delete(_name(journal.flow))
        return kept
