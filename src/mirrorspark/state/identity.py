"""A flow's state folder belongs to one pair of Kafka clusters.

Spark's checkpoint, the offset ranges and the re-copy marks hold offsets of the source and target
clusters the flow first ran against. Started against other clusters under the same aliases (a
re-created cluster, a copied state dir), Spark would resume at offsets that mean nothing there and
skip records without a word. So the cluster ids are recorded at the first start and checked at
every later one.
"""
from __future__ import annotations

import json

from confluent_kafka.admin import AdminClient

from mirrorspark.errors import ConfigError
from mirrorspark.state.files import StateFiles

FILE = "clusters.json"


def cluster_id(admin: AdminClient, timeout: float = 15.0) -> str:
    return admin.describe_cluster(request_timeout=timeout).result().cluster_id


def check_state_identity(folder: StateFiles, flow_name: str, source_alias: str, target_alias: str,
                         source: AdminClient, target: AdminClient) -> None:
    """Record the clusters' ids in ``folder`` on first use; refuse to run against others later."""
    now = {source_alias: cluster_id(source), target_alias: cluster_id(target)}
    text = folder.read(FILE)
    if text is None:
        folder.write(FILE, json.dumps(now))
        return
    try:
        before = json.loads(text)
    except ValueError:
        before = {}
    changed = [f"{alias} was cluster {before[alias]}, is now {now[alias]}" for alias in now
               if before.get(alias) not in (None, now[alias])]
    if changed:
        raise ConfigError(
            f"flow {flow_name}: the state in {folder.uri()} belongs to other clusters ({'; '.join(changed)}). "
            f"Its offsets mean nothing there and resuming would skip records. Use another --state-dir, or "
            f"delete {folder.uri()} to replicate from scratch", f"{source_alias}.bootstrap.servers")
