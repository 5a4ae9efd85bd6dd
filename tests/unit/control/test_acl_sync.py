"""ACL sync rules (MM2's testSyncTopicACLs) that need no broker."""
from __future__ import annotations

from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

from mirrorspark.control.acl_sync import remote_binding

TOPIC, ALLOW, DENY, LITERAL = ResourceType.TOPIC, AclPermissionType.ALLOW, AclPermissionType.DENY, \
    ResourcePatternType.LITERAL


def acl(name: str, principal: str, op: AclOperation, perm=ALLOW, pattern=LITERAL) -> AclBinding:
    return AclBinding(TOPIC, name, pattern, principal, "*", op, perm)


def test_acl_rules_follow_mm2():
    remote = {"t": "A.t"}
    assert remote_binding(acl("t", "User:r", AclOperation.READ), remote) == acl("A.t", "User:r", AclOperation.READ)
    assert remote_binding(acl("t", "User:w", AclOperation.WRITE), remote) is None
    assert remote_binding(acl("t", "User:a", AclOperation.ALL), remote) == acl("A.t", "User:a", AclOperation.READ)
    assert remote_binding(acl("t", "User:d", AclOperation.WRITE, DENY), remote) == \
        acl("A.t", "User:d", AclOperation.WRITE, DENY)
    assert remote_binding(acl("t", "User:p", AclOperation.READ, pattern=ResourcePatternType.PREFIXED), remote) is None
    assert remote_binding(acl("other", "User:r", AclOperation.READ), remote) is None
