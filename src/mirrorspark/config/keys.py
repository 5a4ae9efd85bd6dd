"""Every mm2.properties key mirrorspark understands, declared once: type, default, doc, scope.

``docs/configuration.md`` is generated from this table (``python -m mirrorspark.config.docs``),
and validation uses it to reject unknown keys in MM2's namespaces with a near-miss suggestion.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Type(str, Enum):
    STRING = "string"
    LIST = "list"
    BOOLEAN = "boolean"
    INT = "int"
    LONG = "long"
    DOUBLE = "double"
    CLASS = "class"


class Scope(str, Enum):
    DRIVER = "top level"          # only at top level
    FLOW = "top level or flow"    # `key` default for all flows, `A->B.key` for one
    CLUSTER = "cluster"           # `A.key`


@dataclass(frozen=True)
class Key:
    name: str
    type: Type
    default: str | None
    doc: str
    scope: Scope = Scope.FLOW
    choices: tuple[str, ...] = ()
    deprecated_by: str | None = None
    used: bool = True             # False: accepted for MM2 compatibility, has no effect yet


_EXCLUDE_TOPICS = r".*[\-\.]internal, .*\.replica, __.*"
_EXCLUDE_CONFIGS = (r"follower\.replication\.throttled\.replicas, leader\.replication\.throttled\.replicas, "
                    r"message\.timestamp\.difference\.max\.ms, message\.timestamp\.type, "
                    r"unclean\.leader\.election\.enable, min\.insync\.replicas")

KEYS: tuple[Key, ...] = (
    Key("clusters", Type.LIST, None, "Cluster aliases (required).", Scope.DRIVER),
    Key("bootstrap.servers", Type.LIST, None, "Where the cluster is: `A.bootstrap.servers`.", Scope.CLUSTER),
    Key("enabled", Type.BOOLEAN, "false", "Run this flow: `A->B.enabled = true`."),
    Key("topics", Type.LIST, ".*", "Topics to replicate: regexes, comma separated, full match."),
    Key("topics.exclude", Type.LIST, _EXCLUDE_TOPICS, "Topics never replicated; excludes win over `topics`."),
    Key("topics.blacklist", Type.LIST, None, "Deprecated alias of `topics.exclude`.", deprecated_by="topics.exclude"),
    Key("groups", Type.LIST, ".*", "Consumer groups whose offsets are checkpointed."),
    Key("groups.exclude", Type.LIST, "console-consumer-.*, connect-.*, __.*", "Groups never checkpointed."),
    Key("groups.blacklist", Type.LIST, None, "Deprecated alias of `groups.exclude`.",
        deprecated_by="groups.exclude"),
    Key("replication.factor", Type.INT, "2", "Replication factor of remote topics created on the target."),
    Key("replication.policy.class", Type.CLASS, "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
        "Remote topic naming: MM2's Default or Identity policy, or a Python `module.Class`."),
    Key("replication.policy.separator", Type.STRING, ".", "Separator of the default policy."),
    Key("replication.policy.internal.topic.separator.enabled", Type.BOOLEAN, "true",
        "Use the separator in internal topic names too (KIP-949)."),
    Key("topic.map", Type.STRING, None,
        "mirrorspark extension: explicit remote names, `source:target` pairs, comma separated "
        "(`A->B.topic.map = orders:orders-from-a`). Mapped topics ignore the policy's naming."),
    Key("heartbeats.replication.enabled", Type.BOOLEAN, "true", "Replicate heartbeat topics whatever `topics` says."),
    Key("refresh.topics.enabled", Type.BOOLEAN, "true", "Look for new topics periodically; `false` replicates only the topics present at start "
        "(partitions they gain are still followed, so no record is skipped)."),
    Key("refresh.topics.interval.seconds", Type.LONG, "600",
        "How often remote topics are re-checked on the target (the source is checked every batch)."),
    Key("sync.topic.configs.enabled", Type.BOOLEAN, "true", "Copy topic configs to remote topics."),
    Key("sync.topic.configs.interval.seconds", Type.LONG, "600", "How often topic configs are synced."),
    Key("config.properties.exclude", Type.LIST, _EXCLUDE_CONFIGS, "Topic configs never copied (regexes)."),
    Key("config.properties.blacklist", Type.LIST, None, "Deprecated alias of `config.properties.exclude`.",
        deprecated_by="config.properties.exclude"),
    Key("use.defaults.from", Type.STRING, "target",
        "Whose defaults a remote topic gets for configs left at default on the source.",
        choices=("source", "target")),
    Key("sync.topic.acls.enabled", Type.BOOLEAN, "true", "Copy LITERAL topic ACLs to remote topics (ALLOW WRITE dropped, ALLOW ALL -> READ, never deletes)."),
    Key("sync.topic.acls.interval.seconds", Type.LONG, "600", "How often ACLs are synced."),
    Key("emit.heartbeats.enabled", Type.BOOLEAN, "true",
        "Emit heartbeats for the pair into the target's `heartbeats` topic (MM2: every pair by default, "
        "including the reverse of an enabled flow)."),
    Key("emit.heartbeats.interval.seconds", Type.LONG, "1", "Heartbeat interval."),
    Key("heartbeats.topic.replication.factor", Type.INT, "3", "RF of the `heartbeats` topic."),
    Key("emit.checkpoints.enabled", Type.BOOLEAN, "true", "Write consumer-group checkpoints to `<source>.checkpoints.internal` on the target."),
    Key("emit.checkpoints.interval.seconds", Type.LONG, "60", "Checkpoint interval."),
    Key("checkpoints.topic.replication.factor", Type.INT, "3", "RF of the checkpoints topic."),
    Key("emit.offset-syncs.enabled", Type.BOOLEAN, "true", "Emit offset syncs (and so checkpoints); `false` turns both off."),
    Key("offset-syncs.topic.location", Type.STRING, "source", "Cluster holding the offset-syncs topic.",
        choices=("source", "target")),
    Key("offset-syncs.topic.replication.factor", Type.INT, "3", "RF of the offset-syncs topic."),
    Key("offset.lag.max", Type.LONG, "100",
        "MM2's bound on offset-sync lag; mirrorspark syncs every run boundary and batch end and translates "
        "exactly, so it needs no bound.", used=False),
    Key("sync.group.offsets.enabled", Type.BOOLEAN, "false", "Commit translated offsets on the target."),
    Key("sync.group.offsets.interval.seconds", Type.LONG, "60", "Group offset sync interval."),
    Key("refresh.groups.enabled", Type.BOOLEAN, "true",
        "MM2's group refresh; mirrorspark lists groups at every checkpoint round instead.", used=False),
    Key("refresh.groups.interval.seconds", Type.LONG, "600", "See `refresh.groups.enabled`.", used=False),
    Key("admin.timeout.ms", Type.LONG, "60000", "Timeout of admin calls.", used=False),
    Key("consumer.poll.timeout.ms", Type.LONG, "1000", "MM2 consumer poll timeout.", used=False),
    Key("tasks.max", Type.INT, "1", "Connect tasks per connector; Spark parallelism replaces it.", used=False),
    Key("security.protocol", Type.STRING, "PLAINTEXT", "Client security default for every cluster.",
        choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
    # mirrorspark's own (MM2 has no public API in dedicated mode).
    Key("mirrorspark.rest.enabled", Type.BOOLEAN, "true",
        "Serve the REST API and the Prometheus `/metrics` endpoint.", Scope.DRIVER),
    Key("mirrorspark.rest.listener", Type.STRING, "127.0.0.1:0",
        "`host:port` of the REST API; port 0 picks a free one. The address in use is logged and written "
        "to `<state-dir>/rest.json`, where `mirrorspark status` finds it. Set a fixed port for Prometheus.",
        Scope.DRIVER),
    Key("mirrorspark.rest.token", Type.STRING, None,
        "The token every REST call but `/health` and `/metrics` needs (`Authorization: Bearer <token>`). "
        "Unset: a random token is generated at each start and written (mode 0600) to "
        "`<state-dir>/rest.token`, which `mirrorspark status` reads.", Scope.DRIVER),
    Key("mirrorspark.rest.auth", Type.STRING, "token",
        "`token` (the default) or `none`: no token at all, for a listener only trusted users reach "
        "(a WARNING is logged when it is not loopback). Host and Origin checks apply either way.",
        Scope.DRIVER, choices=("token", "none")),
    Key("mirrorspark.rest.allowed.hosts", Type.LIST, None,
        "Extra names clients may use in the `Host` header (e.g. a Kubernetes service name), besides "
        "loopback names, the listener's host and, on a wildcard listener, this machine's names and IP "
        "addresses. Other names are refused (421), which stops DNS rebinding.", Scope.DRIVER),
    Key("mirrorspark.state.location", Type.STRING, None,
        "Where every flow keeps what it needs to resume (Spark checkpoint, exact offset ranges, cluster ids, "
        "re-copy marks): a folder, or a Hadoop-compatible URI shared by machines (`file:///mnt/shared/ms`, "
        "`hdfs://nn/ms`, `s3a://bucket/ms`) so a driver started elsewhere resumes. Default `<state-dir>/flows`.",
        Scope.DRIVER),
    Key("mirrorspark.data.loss", Type.STRING, "report",
        "What a flow does when source records are gone before it copied them (retention or `deleteRecords` "
        "ahead of it, a re-created or truncated topic): `report` (ERROR log, `mirrorspark_records_lost_total`, "
        "flow state `degraded`, and go on) or `fail` (report, then stop the flow before it copies past the gap).",
        choices=("report", "fail")),
    Key("mirrorspark.batch.max.records", Type.LONG, "0",
        "Most source records one micro-batch reads (Spark's `maxOffsetsPerTrigger`); 0, the default, for no "
        "limit. A batch interrupted by a crash resumes from what the target already holds, so a crash re-copies "
        "next to nothing without it; set it to cap the worst case (every batch boundary costs throughput: "
        "250,000 cost about 20% of backlog throughput in `make bench`)."),
    Key("mirrorspark.flow.restart.attempts", Type.INT, "5",
        "Consecutive failures of a flow's query (target unreachable, authorization, a record too large...) "
        "after which the flow stays `failed`; before that it is restarted with exponential backoff while the "
        "other flows keep running. A batch written resets the count. The process exits non-zero only when every "
        "flow has failed."),
    Key("mirrorspark.flow.restart.backoff.seconds", Type.DOUBLE, "1",
        "Wait before the first restart of a failed flow; doubled after each further failure, at most 60 s."),
    Key("mirrorspark.metrics.lag.interval.seconds", Type.DOUBLE, "5",
        "How often lag (offsets and seconds) and record/byte rates are measured.", Scope.DRIVER),
)

BY_NAME: dict[str, Key] = {k.name: k for k in KEYS}

# Prefixes whose keys are passed to clients or Spark as they are.
PASSTHROUGH_PREFIXES = ("consumer.", "producer.", "admin.", "producer.override.", "ssl.", "sasl.", "spark.",
                        "config.providers", "source.", "target.")
# MM2 / Kafka Connect settings that mean nothing to mirrorspark's design; accepted so existing
# mm2.properties files load unchanged.
CONNECT_PREFIXES = ("offset.storage", "config.storage", "status.storage", "key.converter", "value.converter",
                    "header.converter", "task", "worker", "offset.flush", "exactly.once", "transaction.boundary",
                    "errors.", "transforms", "predicates", "listeners", "rest.", "dedicated.mode",
                    "access.control", "metric.reporters", "forwarding.admin.class", "topic.filter.class",
                    "group.filter.class", "config.property.filter.class", "client.id", "group.id", "name",
                    "connector.class", "scheduled.rebalance", "topic.creation", "response.http.headers",
                    "emit.offset-syncs", "client.dns.lookup")

# Roots of MM2's own namespaces: an undeclared key under one of them is a typo, not a setting.
MM2_NAMESPACES = ("emit.", "sync.", "refresh.", "topics", "groups", "replication.", "offset-syncs",
                  "checkpoints.", "heartbeats.", "config.properties", "use.defaults", "offset.lag", "enabled",
                  "topic.map", "mirrorspark.")

# Secret detection and hiding live in one place (redaction.py); re-exported for existing callers.
from mirrorspark.config.redaction import HIDDEN, SECRET, is_secret, redact  # noqa: E402,F401
