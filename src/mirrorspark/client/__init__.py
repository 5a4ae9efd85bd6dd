"""MM2's MirrorClient and RemoteClusterUtils operations for Python programs (no Spark)."""
from __future__ import annotations

from mirrorspark.client.mirror_client import MirrorClient, count_hops, translate_offsets, upstream_chain
from mirrorspark.config.model import MirrorConfig
from mirrorspark.control.client_settings import admin_settings
from mirrorspark.policy import policy_for_flow


def client_for(config: MirrorConfig, alias: str, remote_alias: str | None = None) -> MirrorClient:
    """A MirrorClient for cluster ``alias`` of an mm2.properties file (MM2's ``clientConfig(alias)``);
    ``remote_alias`` lets the Identity policy name the source of replicated topics. The cluster is asked
    with the clients the replicator's control plane uses (``mirrorspark.control.clients``: Kafka's Java
    clients by default, with ``plugin.path``'s classes), so a Kerberos or IAM cluster answers here too."""
    cluster = config.clusters[alias]
    settings = dict(config.top_level)
    if remote_alias is not None:
        flow = next((f for f in config.flows if f.source.alias == remote_alias and f.target.alias == alias), None)
        if flow is not None:
            settings = dict(flow.settings)
    return MirrorClient(admin_settings(cluster), policy_for_flow(settings, remote_alias or alias), java_style=False)


__all__ = ["MirrorClient", "client_for", "count_hops", "translate_offsets", "upstream_chain"]
