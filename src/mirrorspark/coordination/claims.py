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
    group: str  # the lease group: the deployment the instance belongs to

    def describe(self) -> str:
        return (f"instance {self.instance[:8]} (pid {self.pid} on {self.host}, state {self.state}, "
                f"lease group {self.group})")

    @classmethod
    def mine(cls, *, flow: str, group: str, instance: str, state: StateFiles) -> Claim:
        return cls(flow, instance, socket.gethostname(), os.getpid(), state.uri(), time.time(), group)

    def key(self) -> bytes:
        return claim_key(flow=self.flow, group=self.group)


def claim_key(*, flow: str, group: str) -> bytes:
    """The flow and its lease group, as JSON (any text fits)."""
    return json.dumps([flow, group]).encode()


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
        """The latest claim of ``flow`` by a member of lease group ``group``, None when no instance of
        the group ever claimed it."""
        mine = claim_key(flow=flow, group=group)
        found: Claim | None = None
        try:
            for key, value, *_ in read_to_end(self.conf, LEASE_TOPIC, timeout=30):
                if not value or key != mine:
                    continue
                try:
                    found = Claim(**json.loads(value))
                except (ValueError, TypeError):
                    log.warning("an unreadable claim of flow %s in %s is skipped", flow, LEASE_TOPIC)
        except TopicMissing:
            return None
        return found

    def write(self, claim: Claim) -> None:
        sender = producer({**self.conf, "enable.idempotence": True})
        send_all(sender, LEASE_TOPIC, [(claim.key(), json.dumps(asdict(claim)).encode())], "lease claim")

    def latest(self, key: bytes) -> bytes | None:
        """The newest value of ``key`` (None: never written, or deleted)."""
        return self.latest_of({key})[key]

    def latest_of(self, keys: set[bytes]) -> dict[bytes, bytes | None]:
        """The newest value of each of ``keys``, in one read of the topic (None: never written, or deleted)."""
        found: dict[bytes, bytes | None] = dict.fromkeys(keys)
        try:
            for got, value, *_ in read_to_end(self.conf, LEASE_TOPIC, timeout=30):
                if got in found:
                    found[got] = value
        except TopicMissing:
            pass
        return found

    def put(self, key: bytes, value: bytes | None, what: str) -> None:
        """Write ``value`` under ``key`` (None deletes it: a tombstone the compaction removes)."""
        self.put_all([(key, value)], what)

    def put_all(self, records: list[tuple[bytes, bytes | None]], what: str) -> None:
        """Write each (key, value), with one producer."""
        sender = producer({**self.conf, "enable.idempotence": True})
        send_all(sender, LEASE_TOPIC, records, what)


class SharedOlderCopies:
    """Which generations of a source topic a remote topic holds copies of, kept beside the claims.

    A remote topic deleted on the target loses the copies of its source topic's earlier generations
    (deleted and re-created since): the refill restores only what the source has now. The instance
    that sees the re-creation is often not the one writing when the remote topic is deleted (a
    takeover, a standby, state set aside), so what it saw is kept on the target, keyed by flow, lease
    group and remote topic, for whichever instance counts the loss."""

    def __init__(self, claims: Claims, *, flow: str, group: str) -> None:
        self.claims = claims
        self.flow = flow
        self.group = group

    def _key(self, remote: str) -> bytes:
        return json.dumps(["older-copies", self.flow, self.group, remote]).encode()

    def read(self, remote: str) -> dict | None:
        return self.read_all([remote])[remote]

    def read_all(self, remotes: list[str]) -> dict[str, dict | None]:
        """The entries of ``remotes``, in one read of the topic: one per remote topic made a consumer each, for
        minutes of a flow's first checks at thousands of partitions."""
        keys = {self._key(remote): remote for remote in remotes}
        out: dict[str, dict | None] = dict.fromkeys(remotes)
        for key, value in self.claims.latest_of(set(keys)).items():
            if not value:
                continue
            try:
                entry = json.loads(value)
            except ValueError:
                log.warning("an unreadable record of %s's older copies in %s is skipped", keys[key], LEASE_TOPIC)
                continue
            out[keys[key]] = entry if isinstance(entry, dict) else None
        return out

    def write(self, remote: str, entry: dict | None) -> None:
        self.write_all({remote: entry})

    def write_all(self, entries: dict[str, dict | None]) -> None:
        """Each remote topic's entry (None deletes it), with one producer."""
        if entries:
            self.claims.put_all([(self._key(remote), None if entry is None else json.dumps(entry).encode())
                                 for remote, entry in sorted(entries.items())],
                                "older copies of " + ", ".join(sorted(entries)))
