"""Copy topic ACLs of replicated topics to their remote topics, with MM2's rules.

Only LITERAL topic ACLs are copied; ALLOW WRITE is dropped (only the replicator writes remote
topics); ALLOW ALL becomes ALLOW READ; everything else (DENY, READ, DESCRIBE, ...) is copied with
the same principal, host and permission. Nothing is ever deleted on the target. A source without
an authorizer is reported once and then skipped.
"""
from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from mirrorspark.control.admin import not_answering
from mirrorspark.errors import ClusterFailure

log = logging.getLogger(__name__)

# confluent-kafka annotates name, principal and host as str, but documents None as "match any" in a filter.
_ALL_LITERAL_TOPICS = AclBindingFilter(
    ResourceType.TOPIC, None, ResourcePatternType.LITERAL, None, None,  # type: ignore[arg-type]
    AclOperation.ANY, AclPermissionType.ANY)


def _delete_nothing(admin: AdminClient, timeout: float) -> None:
    """Delete ACLs with a filter naming a random principal on a random resource: it matches nothing,
    and a broker without an authorizer refuses it with SECURITY_DISABLED (librdkafka's DescribeAcls
    does not tell "no ACLs" from "no authorizer")."""
    probe = AclBindingFilter(ResourceType.TOPIC, f"mirrorspark-probe-{uuid.uuid4().hex}",
                             ResourcePatternType.LITERAL, f"User:mirrorspark-probe-{uuid.uuid4().hex}",
                             None,  # type: ignore[arg-type]  # host: None matches any (stub says str)
                             AclOperation.ANY, AclPermissionType.ANY)
    for future in admin.delete_acls([probe], request_timeout=timeout).values():
        future.result()


def has_authorizer(admin: AdminClient, *, cluster: str, timeout: float = 30.0) -> bool:
    """Whether the cluster runs an authorizer; raises ClusterFailure when it does not answer."""
    try:
        _delete_nothing(admin, timeout)
    except KafkaException as exc:
        if exc.args[0].code() == KafkaError.SECURITY_DISABLED:
            return False
        if not_answering(exc):
            raise ClusterFailure(f"{cluster} did not answer whether it has an authorizer: {exc.args[0].str()}") \
                from None
    return True  # any other refusal (e.g. no ALTER on the cluster) comes from an authorizer


def remote_binding(binding: AclBinding, remote: Mapping[str, str]) -> AclBinding | None:
    """The target ACL for a source ACL, or None when MM2's rules say it is not copied."""
    if binding.restype != ResourceType.TOPIC or binding.resource_pattern_type != ResourcePatternType.LITERAL:
        return None
    remote_name = remote.get(binding.name)
    if remote_name is None:
        return None
    allow = binding.permission_type == AclPermissionType.ALLOW
    if allow and binding.operation == AclOperation.WRITE:
        return None
    operation = AclOperation.READ if allow and binding.operation == AclOperation.ALL else binding.operation
    return AclBinding(ResourceType.TOPIC, remote_name, ResourcePatternType.LITERAL, binding.principal,
                      binding.host, operation, binding.permission_type)


class AclSync:
    """One flow's ACL sync; ``sync(remote)`` is called on the flow's ACL interval."""

    def __init__(self, *, flow_name: str, source: AdminClient, target: AdminClient, timeout: float = 30.0) -> None:
        self.flow_name = flow_name
        self.source = source
        self.target = target
        self.timeout = timeout
        self.source_has_no_authorizer = False
        self._target_refused = False
        self._created: set[AclBinding] = set()
        self._authorizer_checked = False

    def sync(self, remote: Mapping[str, str]) -> list[AclBinding]:
        """Create the target ACLs the replicated topics' source ACLs call for; return those created."""
        if self.source_has_no_authorizer or not remote:
            return []
        try:
            bindings = self.source.describe_acls(_ALL_LITERAL_TOPICS, request_timeout=self.timeout).result()
            if not bindings and not self._authorizer_checked:
                self._probe_source_authorizer()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.SECURITY_DISABLED:
                raise
            self.source_has_no_authorizer = True
        if self.source_has_no_authorizer:
            log.info("flow %s: the source cluster has no authorizer, so there are no ACLs to sync; "
                     "consider sync.topic.acls.enabled = false", self.flow_name)
            return []
        wanted = {b for b in (remote_binding(b, remote) for b in bindings) if b is not None} - self._created
        if not wanted:
            return []
        try:
            futures = self.target.create_acls(list(wanted), request_timeout=self.timeout)
        except KafkaException as exc:
            self._report_target(exc)
            return []
        created = []
        for binding, future in futures.items():
            try:
                future.result()
                created.append(binding)
                self._created.add(binding)
            except KafkaException as exc:
                self._report_target(exc)
        if created:
            log.info("flow %s: synced %d topic ACL(s) to the target", self.flow_name, len(created))
        return created

    def _probe_source_authorizer(self) -> None:
        """Tell "no ACLs" from "no authorizer", which librdkafka's DescribeAcls does not.

        Deleting with a filter naming a random principal on a random resource matches nothing; a
        broker without an authorizer refuses it with SECURITY_DISABLED (raised to the caller).
        """
        self._authorizer_checked = True
        try:
            _delete_nothing(self.source, self.timeout)
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.SECURITY_DISABLED:
                raise
            # Any other refusal (e.g. no ALTER on the cluster) means an authorizer is there.

    def _report_target(self, exc: KafkaException) -> None:
        error = exc.args[0]
        if error.code() == KafkaError.SECURITY_DISABLED:
            if not self._target_refused:
                log.warning("flow %s: the target cluster has no authorizer, so source topic ACLs cannot be "
                            "copied; enable an authorizer there or set sync.topic.acls.enabled = false",
                            self.flow_name)
            self._target_refused = True
            return
        log.warning("flow %s: creating ACLs on the target failed: %s", self.flow_name, error.str())
