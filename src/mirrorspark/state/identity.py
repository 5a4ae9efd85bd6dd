"""A flow's state folder belongs to one pair of Kafka clusters.

Spark's checkpoint, the offset ranges and the re-copy marks hold offsets of the source and target
clusters the flow first ran against. Started against other clusters under the same aliases (a
re-created cluster, a copied state dir), Spark would resume at offsets that mean nothing there and
skip records without a word. So the cluster ids are recorded at the first start and checked at
every later one.

The same file carries the state folder's format (``FORMAT``) and the version that last wrote it
(docs/upgrade.md): a folder of a newer format is refused naming the version that wrote it, an older
one is migrated in place (format 1 was the bare map of cluster ids, read as such).
"""
from __future__ import annotations

import json

from confluent_kafka.admin import AdminClient

from mirrorspark.errors import ConfigError
from mirrorspark.state.files import StateFiles
from mirrorspark.version import version

FILE = "clusters.json"
FORMAT = 2  # 1: {alias: cluster id}; 2: {"format", "written_by", "clusters": {alias: cluster id}}
LOCATION_KEY = "mirrorspark.state.location"


def _read(text: str | None, flow_name: str, where: str) -> tuple[int, dict[str, str]]:
    """The folder's format and its cluster ids (format 1 files were the ids alone)."""
    try:
        found = json.loads(text) if text is not None else {}
    except ValueError:
        found = {}
    if not isinstance(found, dict):
        found = {}
    if "format" not in found:
        return 1, {k: v for k, v in found.items() if isinstance(v, str)}
    fmt = found.get("format")
    if not isinstance(fmt, int) or fmt > FORMAT:
        raise ConfigError(f"flow {flow_name}: the state in {where} has format {fmt}, written by mirrorspark "
                          f"{found.get('written_by', 'unknown')}; this is mirrorspark {version()}, which reads format "
                          f"{FORMAT} and older. Run that version (or a newer one) on this state, or give this one "
                          f"another --state-dir", LOCATION_KEY)
    clusters = found.get("clusters")
    return fmt, dict(clusters) if isinstance(clusters, dict) else {}


def cluster_id(admin: AdminClient, timeout: float = 15.0) -> str:
    return admin.describe_cluster(request_timeout=timeout).result().cluster_id


def check_state_identity(folder: StateFiles, flow_name: str, source_alias: str, target_alias: str,
                         source: AdminClient, target: AdminClient) -> None:
    """Record the clusters' ids in ``folder`` on first use; refuse to run against others later."""
    now = {source_alias: cluster_id(source), target_alias: cluster_id(target)}
    text = folder.read(FILE)
    fmt, before = _read(text, flow_name, folder.uri())
    changed = [f"{alias} was cluster {before[alias]}, is now {now[alias]}" for alias in now
               if before.get(alias) not in (None, now[alias])]
    if changed:
        raise ConfigError(
            f"flow {flow_name}: the state in {folder.uri()} belongs to other clusters ({'; '.join(changed)}). "
            f"Its offsets mean nothing there and resuming would skip records. Use another --state-dir, or "
            f"delete {folder.uri()} to replicate from scratch", f"{source_alias}.bootstrap.servers")
    stamp = {"format": FORMAT, "written_by": version(), "clusters": {**before, **now}}
    try:
        unchanged = fmt == FORMAT and text is not None and json.loads(text) == stamp
    except ValueError:
        unchanged = False
    if not unchanged:  # first use, an older format (migrated in place), another version
        folder.write(FILE, json.dumps(stamp))
