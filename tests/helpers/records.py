"""Records to produce: tagged, sample (nulls, headers, explicit timestamps) and numbered (header ``seq``,
which drills count lost and re-copied records by)."""
from __future__ import annotations

import time


def records(n: int, partitions: int, tag: str) -> list[dict]:
    now = int(time.time() * 1000)
    return [{"partition": i % partitions, "key": f"{tag}-{i}".encode(), "value": f"{tag}-v{i}".encode(),
             "timestamp": now + i, "headers": [("tag", tag.encode())]} for i in range(n)]


def sample_records(n: int, partitions: int, base_ts: int) -> list[dict]:
    """Keyed records with headers and explicit timestamps, some null keys and one tombstone."""
    records = []
    for i in range(n):
        records.append({
            "partition": i % partitions,
            "key": None if i % 7 == 0 else f"key-{i}".encode(),
            "value": None if i == 11 else f"value-{i}".encode() * (1 + i % 3),
            "timestamp": base_ts + 17 * i,
            "headers": [("trace", f"t{i}".encode()), ("empty", None), ("trace", b"dup")] if i % 2 else [],
        })
    return records


def numbered(start: int, stop: int, partitions: int, size: int = 100) -> list[dict]:
    return [{"partition": i % partitions, "key": str(i).encode(), "value": b"v" * size,
             "headers": [("seq", str(i).encode())]} for i in range(start, stop)]
