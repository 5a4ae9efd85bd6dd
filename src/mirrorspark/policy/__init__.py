"""Replication policies: how remote topics are named and how a topic's origin is recognised."""
from mirrorspark.policy.base import ReplicationPolicy
from mirrorspark.policy.default import DefaultReplicationPolicy
from mirrorspark.policy.identity import IdentityReplicationPolicy
from mirrorspark.policy.loading import policy_for_flow

__all__ = ["DefaultReplicationPolicy", "IdentityReplicationPolicy", "ReplicationPolicy", "policy_for_flow"]
