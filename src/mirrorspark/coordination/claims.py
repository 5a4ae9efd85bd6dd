"""Who wrote a flow last: a claim record on the target each time an instance takes a flow.

The lease group says who writes a flow now; the claims say who wrote it before. An instance
taking a flow compares the previous claim with itself: when another instance wrote the flow since
this state folder was saved, the folder's Spark checkpoint and write marks describe an older copy.
They are set aside, and the flow resumes from what the target holds (``takeover.lost_state``),
so nothing the other instance wrote is copied again.

The claims live in one small compacted topic on the target, next to the lease group itself: a
standby needs nothing of the other instance's host. A claim is keyed by the flow and its lease
group: two deployments of one cluster pair in separate groups (different topics, each with its
own standbys) are different writers of different records, and neither's claim says the other's
state is out of date.

Instances before lease groups were part of the claim keyed it by the flow's name alone. Such a
claim is still heeded as it was (its group is unknown, so it may be any deployment's) when it is
newer than the group's own claim; and each claim is written under the flow's name too, in the old
form, so instances not yet upgraded still see it. A new reader knows those copies by the claim
they repeat (same instance and time) and ignores them.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from confluent_kafka.admin import AdminClient

from mirrorspark.control.admin import (
    TopicMissing,
    broker_count,
    ensure_compacted_topic,
    producer,
    read_to_end,
    send_all,
)
from mirrorspark.state.files import StateFiles

log = logging.getLogger(__name__)

LEASE_TOPIC = "mirrorspark.leases.internal"
INSTANCE_FILE = "instance.json"


@dataclass(frozen=True)
class Claim:
    flow: str
    instance: str  # one per state location (instance.json): processes sharing a state folder are one writer
    host: str
    pid: int
    state: str  # the claimant's state folder
    at: float
    group: str | None = None  # the lease group; None in a claim written before groups were part of it

    def describe(self) -> str:
        group = f", lease group {self.group}" if self.group is not None else ""
        return f"instance {self.instance[:8]} (pid {self.pid} on {self.host}, state {self.state}{group})"

    @classmethod
    def mine(cls, *, flow: str, group: str, instance: str, state: StateFiles) -> Claim:
        return cls(flow, instance, socket.gethostname(), os.getpid(), state.uri(), time.time(), group)

    def key(self) -> bytes:
        return claim_key(flow=self.flow, group=self.group)

    def older_form(self) -> bytes:
        """The record as instances keying claims by the flow's name read it (no field they do not know)."""
        fields = asdict(self)
        del fields["group"]
        return json.dumps(fields).encode()


def claim_key(*, flow: str, group: str | None) -> bytes:
    """The flow's name alone in the older form; the flow and its lease group (as JSON: any text fits) since."""
    return flow.encode() if group is None else json.dumps([flow, group]).encode()


def instance_id(root: StateFiles) -> str:
    """This state location's instance id, made on first use."""
    text = root.read(INSTANCE_FILE)
    if text:
        try:
            return str(json.loads(text)["instance"])
        except (ValueError, KeyError, TypeError):
            log.warning("%s/%s is damaged; a new instance id is made", root.uri(), INSTANCE_FILE)
    made = uuid.uuid4().hex
    root.write(INSTANCE_FILE, json.dumps({"instance": made}))
    return made


class Claims:
    """The claims topic of one target cluster."""

    def __init__(self, admin: AdminClient, conf: dict[str, Any]) -> None:
        self.admin = admin
        self.conf = conf

    def ensure_topic(self) -> None:
        if ensure_compacted_topic(self.admin, LEASE_TOPIC, min(3, broker_count(self.admin))):
            log.info("created %s (flow leases and their claims)", LEASE_TOPIC)

    def last(self, *, flow: str, group: str) -> Claim | None:
        """The latest claim of ``flow`` by a member of lease group ``group`` (or in the older form,
        when newer than that), None when no instance of the group ever claimed it."""
        mine = claim_key(flow=flow, group=group)
        by_name = flow.encode()
        own: tuple[int, Claim] | None = None
        older: tuple[int, Claim] | None = None
        repeated: set[tuple[str, float]] = set()  # (instance, at) of every group's claim of the flow
        try:
            for position, (key, value, *_) in enumerate(read_to_end(self.conf, LEASE_TOPIC, timeout=30)):
                if not value or (key != by_name and not _claims_flow(key, flow)):
                    continue
                try:
                    claim = Claim(**json.loads(value))
                except (ValueError, TypeError):
                    log.warning("an unreadable claim of flow %s in %s is skipped", flow, LEASE_TOPIC)
                    continue
                if key == by_name:
                    older = (position, claim)
                    continue
                repeated.add((claim.instance, claim.at))
                if key == mine:
                    own = (position, claim)
        except TopicMissing:
            return None
        if older is not None and (older[1].instance, older[1].at) in repeated:
            older = None  # a newer instance's claim repeated for older readers: its own record counts
        found = max((c for c in (own, older) if c is not None), key=lambda c: c[0], default=None)
        return found[1] if found is not None else None

    def write(self, claim: Claim) -> None:
        """The claim under its group's key, then repeated under the flow's name for older readers."""
        sender = producer({**self.conf, "enable.idempotence": True})
        send_all(sender, LEASE_TOPIC, [(claim.key(), json.dumps(asdict(claim)).encode()),
                                       (claim.flow.encode(), claim.older_form())], "lease claim")


def _claims_flow(key: bytes | None, flow: str) -> bool:
    """Whether ``key`` is a claim key of ``flow`` with a lease group."""
    if not key or not key.startswith(b"["):
        return False
    try:
        parsed = json.loads(key)
    except ValueError:
        return False
    return isinstance(parsed, list) and len(parsed) == 2 and parsed[0] == flow
