"""MM2's binary record formats for offset syncs, checkpoints and heartbeats.

Kafka protocol primitives, big-endian: INT16/INT32/INT64, and STRING = INT16 byte length + UTF-8.
Checkpoint and heartbeat values start with an INT16 version (0); offset sync values have none.
Readers skip records they cannot decode, as MM2's do.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from mirrorspark.errors import OperationalError

HEARTBEATS_TOPIC = "heartbeats"
VERSION = 0


class RecordFormatError(OperationalError):
    """Bytes that are not a version-0 MM2 record of the expected kind."""


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise RecordFormatError(f"{self.what}: truncated after {self.pos} of {len(self.data)} bytes")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        length = self.take(">h")
        if length < 0 or self.pos + length > len(self.data):
            raise RecordFormatError(f"{self.what}: bad string length {length}")
        try:
            text = self.data[self.pos:self.pos + length].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordFormatError(f"{self.what}: a string is not UTF-8 ({exc.reason} at byte {exc.start})") from None
        self.pos += length
        return text

    def version(self) -> None:
        version = self.take(">h")
        if version != VERSION:
            raise RecordFormatError(f"{self.what}: unsupported version {version} (only {VERSION} is known)")


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


@dataclass(frozen=True)
class OffsetSync:
    """Source offset ``upstream`` of ``topic``/``partition`` was written at target offset ``downstream``."""

    topic: str
    partition: int
    upstream: int
    downstream: int

    def key_bytes(self) -> bytes:
        return _string(self.topic) + struct.pack(">i", self.partition)

    def value_bytes(self) -> bytes:
        return struct.pack(">qq", self.upstream, self.downstream)

    @classmethod
    def from_record(cls, key: bytes, value: bytes) -> OffsetSync:
        k, v = _Reader(key, "offset sync key"), _Reader(value, "offset sync value")
        return cls(k.string(), k.take(">i"), v.take(">q"), v.take(">q"))


@dataclass(frozen=True)
class Checkpoint:
    """Group ``group`` committed ``upstream`` on the source; ``downstream`` is the same place on the
    target's ``topic`` (the renamed, remote topic)."""

    group: str
    topic: str
    partition: int
    upstream: int
    downstream: int
    metadata: str = ""

    def key_bytes(self) -> bytes:
        return _string(self.group) + _string(self.topic) + struct.pack(">i", self.partition)

    def value_bytes(self) -> bytes:
        return struct.pack(">hqq", VERSION, self.upstream, self.downstream) + _string(self.metadata)

    @classmethod
    def from_record(cls, key: bytes, value: bytes) -> Checkpoint:
        k, v = _Reader(key, "checkpoint key"), _Reader(value, "checkpoint value")
        group, topic, partition = k.string(), k.string(), k.take(">i")
        v.version()
        return cls(group, topic, partition, v.take(">q"), v.take(">q"), v.string())


@dataclass(frozen=True)
class Heartbeat:
    """Emitted by flow ``source->target`` into the target's ``heartbeats`` topic at ``timestamp`` (ms)."""

    source: str
    target: str
    timestamp: int

    def key_bytes(self) -> bytes:
        return _string(self.source) + _string(self.target)

    def value_bytes(self) -> bytes:
        return struct.pack(">hq", VERSION, self.timestamp)

    @classmethod
    def from_record(cls, key: bytes, value: bytes) -> Heartbeat:
        k, v = _Reader(key, "heartbeat key"), _Reader(value, "heartbeat value")
        source, target = k.string(), k.string()
        v.version()
        return cls(source, target, v.take(">q"))
