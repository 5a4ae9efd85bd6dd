"""Every mm2.properties key mirrorspark understands, declared once: type, default, doc, scope.

``docs/configuration.md`` is generated from this table (``python -m mirrorspark.config.docs``),
and validation uses it to reject unknown keys in MM2's namespaces with a near-miss suggestion.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TypedDict


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
    low: float | None = None      # numbers: smallest value accepted (inclusive)
    high: float | None = None     # numbers: largest value accepted (inclusive)
    also: tuple[str, ...] = ()    # values accepted outside low..high, e.g. -1 for "broker default"
    regex: bool = False           # a LIST of regular expressions, each compiled when the file is read
    not_empty: bool = False       # an empty value cannot work (e.g. the policy separator)

    def bounds(self) -> str:
        """The accepted range in words, for errors and the generated docs."""
        if self.low is None and self.high is None:
            return ""
        low = "" if self.low is None else f"{self.low:g}"
        high = "" if self.high is None else f"{self.high:g}"
        text = f"{low}..{high}" if low and high else (f"at least {low}" if low else f"at most {high}")
        return text + "".join(f" or {value}" for value in self.also)


class _Bounds(TypedDict, total=False):
    """The range fields of a :class:`Key`, shared by several keys and splatted into them (``**_RF``)."""

    low: float
    high: float
    also: tuple[str, ...]


# Kafka's replication factors are Java shorts; -1 asks the broker for its default (KIP-464).
_RF: _Bounds = {"low": 1, "high": 32767, "also": ("-1",)}
# MM2's intervals are whole seconds: 0 would run a task without pause and MM2 silently skips a task whose interval is
# negative; the documented way to turn a task off is its ``*.enabled`` key.
_INTERVAL: _Bounds = {"low": 1}


_EXCLUDE_TOPICS = r".*[\-\.]internal, .*\.replica, __.*"
_EXCLUDE_CONFIGS = (r"follower\.replication\.throttled\.replicas, leader\.replication\.throttled\.replicas, "
                    r"message\.timestamp\.difference\.max\.ms, message\.timestamp\.type, "
                    r"unclean\.leader\.election\.enable, min\.insync\.replicas")

KEYS: tuple[Key, ...] = (
    Key("clusters", Type.LIST, None, "Cluster aliases (required).", Scope.DRIVER),
    Key("bootstrap.servers", Type.LIST, None, "Where the cluster is: `A.bootstrap.servers`.", Scope.CLUSTER),
    Key("exactly.once.source.support", Type.STRING, "disabled",
        "Exactly-once into this cluster: `B.exactly.once.source.support = enabled` makes every flow whose target is B "
        "write in transactions (records and progress committed together), as MM2's workers do; `preparing` (MM2's "
        "rolling step) writes at least once. Given at top level it has no effect, as in MM2.", Scope.CLUSTER,
        choices=("disabled", "preparing", "enabled")),
    Key("exactly.once.support", Type.STRING, "requested",
        "With exactly-once on the target: `required` refuses a flow that cannot deliver it (the target's "
        "`exactly.once.source.support` not enabled, or the source consumer set to `read_uncommitted`).",
        choices=("requested", "required")),
    Key("transaction.boundary", Type.STRING, "poll",
        "Where exactly-once transactions end: MM2's `poll`. Each mirrorspark task commits its transaction at the "
        "end of its micro-batch (and within it as the target's speed requires), or in real-time mode whenever "
        "its source has handed over everything it polled; the other boundaries are refused.", choices=("poll",)),
    Key("enabled", Type.BOOLEAN, "false", "Run this flow: `A->B.enabled = true`."),
    Key("topics", Type.LIST, ".*", "Topics to replicate: regexes, comma separated, full match.", regex=True),
    Key("topics.exclude", Type.LIST, _EXCLUDE_TOPICS, "Topics never replicated; excludes win over `topics`.",
        regex=True),
    Key("topics.blacklist", Type.LIST, None, "Deprecated alias of `topics.exclude`.", deprecated_by="topics.exclude",
        regex=True),
    Key("groups", Type.LIST, ".*", "Consumer groups whose offsets are checkpointed.", regex=True),
    Key("groups.exclude", Type.LIST, "console-consumer-.*, connect-.*, __.*", "Groups never checkpointed.",
        regex=True),
    Key("groups.blacklist", Type.LIST, None, "Deprecated alias of `groups.exclude`.",
        deprecated_by="groups.exclude", regex=True),
    Key("replication.factor", Type.INT, "2", "Replication factor of remote topics created on the target.", **_RF),
    Key("replication.policy.class", Type.CLASS, "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
        "Remote topic naming: MM2's Default or Identity policy, a Java class of the plug-in jars (`plugin.path`, "
        "`spark.jars`) or a Python `module.Class`. A cycle of flows that all keep names (Identity, no `topic.map`) "
        "runs active/active on the same names: copies carry the header `mirrorspark.path` and never go back."),
    Key("topic.filter.class", Type.CLASS, "org.apache.kafka.connect.mirror.DefaultTopicFilter",
        "Which topics are copied: MM2's default (`topics`, `topics.exclude`) or a Java TopicFilter of the plug-in "
        "jars, which then decides alone, as in MM2."),
    Key("group.filter.class", Type.CLASS, "org.apache.kafka.connect.mirror.DefaultGroupFilter",
        "Which groups are checkpointed: MM2's default (`groups`, `groups.exclude`) or a Java GroupFilter of the "
        "plug-in jars."),
    Key("config.property.filter.class", Type.CLASS, "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter",
        "Which topic configs are copied: MM2's default (`config.properties.exclude`) or a Java "
        "ConfigPropertyFilter of the plug-in jars."),
    Key("mirrorspark.control.clients", Type.STRING, "java",
        "Which Kafka clients the control plane (admin, heartbeats, offset syncs, checkpoints, group sync, the "
        "lease) uses: `java` (Kafka's Java clients, MM2's own, with every client key as MM2 reads it), "
        "`librdkafka`, or `auto`: Kafka's Java clients for a cluster whose settings only they honour (GSSAPI, "
        "a login or client callback handler, `ssl.engine.factory.class`, Java cipher suites or store types), "
        "librdkafka for the others.", Scope.DRIVER, choices=("auto", "java", "librdkafka")),
    Key("plugin.path", Type.LIST, "", "Where Java plug-ins are found, as for MM2: directories holding jars, "
        "directories of jars or class folders, or jars.", Scope.DRIVER),
    Key("replication.policy.separator", Type.STRING, ".", "Separator of the default policy. Empty (MM2's \"no "
        "prefix\" recipe, usually with `source.cluster.alias =` and `target.cluster.alias =` empty) gives the names "
        "MM2 gives, remote and internal, with a warning: remote names then no longer show their source, so "
        "cycles run as with IdentityReplicationPolicy (active/active on the same names)."),
    Key("replication.policy.internal.topic.separator.enabled", Type.BOOLEAN, "true",
        "Use the separator in internal topic names too (KIP-949)."),
    Key("topic.map", Type.STRING, None,
        "mirrorspark extension: explicit remote names, `source:target` pairs, comma separated "
        "(`A->B.topic.map = orders:orders-from-a`). Mapped topics ignore the policy's naming."),
    Key("heartbeats.replication.enabled", Type.BOOLEAN, "true", "Replicate heartbeat topics whatever `topics` says."),
    Key("refresh.topics.enabled", Type.BOOLEAN, "true",
        "Look for new topics periodically; `false` replicates only the topics present at start "
        "(partitions they gain are still followed, so no record is skipped)."),
    Key("refresh.topics.interval.seconds", Type.LONG, "600",
        "How often remote topics are re-checked on the target (the source is checked every batch).", **_INTERVAL),
    Key("sync.topic.configs.enabled", Type.BOOLEAN, "true", "Copy topic configs to remote topics."),
    Key("sync.topic.configs.interval.seconds", Type.LONG, "600", "How often topic configs are synced.", **_INTERVAL),
    Key("config.properties.exclude", Type.LIST, _EXCLUDE_CONFIGS, "Topic configs never copied (regexes).",
        regex=True),
    Key("config.properties.blacklist", Type.LIST, None, "Deprecated alias of `config.properties.exclude`.",
        deprecated_by="config.properties.exclude", regex=True),
    Key("use.defaults.from", Type.STRING, "target",
        "Whose defaults a remote topic gets for configs left at default on the source.",
        choices=("source", "target")),
    Key("sync.topic.acls.enabled", Type.BOOLEAN, "true",
        "Copy LITERAL topic ACLs to remote topics (ALLOW WRITE dropped, ALLOW ALL -> READ, never deletes)."),
    Key("sync.topic.acls.interval.seconds", Type.LONG, "600", "How often ACLs are synced.", **_INTERVAL),
    Key("emit.heartbeats.enabled", Type.BOOLEAN, "true",
        "Emit heartbeats for the pair into the target's `heartbeats` topic (MM2: every pair by default, "
        "including the reverse of an enabled flow)."),
    Key("emit.heartbeats.interval.seconds", Type.LONG, "1", "Heartbeat interval.", **_INTERVAL),
    Key("heartbeats.topic.replication.factor", Type.INT, "3", "RF of the `heartbeats` topic.", **_RF),
    Key("emit.checkpoints.enabled", Type.BOOLEAN, "true",
        "Write consumer-group checkpoints to `<source>.checkpoints.internal` on the target."),
    Key("emit.checkpoints.interval.seconds", Type.LONG, "60", "Checkpoint interval.", **_INTERVAL),
    Key("checkpoints.topic.replication.factor", Type.INT, "3", "RF of the checkpoints topic.", **_RF),
    Key("emit.offset-syncs.enabled", Type.BOOLEAN, "true",
        "Emit offset syncs (and so checkpoints); `false` turns both off."),
    Key("offset-syncs.topic.location", Type.STRING, "source", "Cluster holding the offset-syncs topic.",
        choices=("source", "target")),
    Key("offset-syncs.topic.replication.factor", Type.INT, "3", "RF of the offset-syncs topic.", **_RF),
    Key("offset.lag.max", Type.LONG, "100",
        "MM2's bound on offset-sync lag; mirrorspark syncs every run boundary and batch end and translates "
        "exactly, so it needs no bound.", used=False),
    Key("sync.group.offsets.enabled", Type.BOOLEAN, "false", "Commit translated offsets on the target."),
    Key("sync.group.offsets.interval.seconds", Type.LONG, "60", "Group offset sync interval.", **_INTERVAL),
    Key("refresh.groups.enabled", Type.BOOLEAN, "true",
        "MM2's group refresh; mirrorspark lists groups at every checkpoint round instead.", used=False),
    Key("refresh.groups.interval.seconds", Type.LONG, "600", "See `refresh.groups.enabled`.", used=False),
    Key("admin.timeout.ms", Type.LONG, "60000", "Timeout of admin calls.", used=False),
    Key("consumer.poll.timeout.ms", Type.LONG, "1000", "MM2 consumer poll timeout.", used=False),
    Key("tasks.max", Type.INT, "1", "Connect tasks per connector; Spark parallelism replaces it.", used=False,
        low=1),
    Key("security.protocol", Type.STRING, "PLAINTEXT", "Client security default for every cluster.",
        choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
    # mirrorspark's own (MM2 has no public API in dedicated mode).
    Key("mirrorspark.rest.enabled", Type.BOOLEAN, "true",
        "Serve the REST API and the Prometheus `/metrics` endpoint.", Scope.DRIVER),
    Key("mirrorspark.rest.listener", Type.STRING, "127.0.0.1:0",
        "`host:port` (or `http://host:port`, `https://host:port` with `mirrorspark.rest.ssl.*`) of the REST "
        "API; port 0 picks a free one. The address in use is logged and written "
        "to `<state-dir>/rest.json`, where `mirrorspark status` finds it. Set a fixed port for Prometheus.",
        Scope.DRIVER),
    Key("mirrorspark.rest.ssl.keystore.location", Type.STRING, None,
        "The REST listener's key and certificate when it is `https://host:port`, as Kafka Connect's REST "
        "takes them (`listeners.https.ssl.keystore.location`): a PKCS12 or JKS keystore, or a PEM file "
        "holding the private key and the certificate chain.", Scope.DRIVER),
    Key("mirrorspark.rest.ssl.keystore.password", Type.STRING, None,
        "The keystore's password (PKCS12, JKS); use a config provider (`${file:...}`, `${env:...}`) to keep it "
        "out of the file.", Scope.DRIVER),
    Key("mirrorspark.rest.ssl.keystore.type", Type.STRING, "PKCS12", "`PKCS12`, `JKS` or `PEM`.", Scope.DRIVER,
        choices=("PKCS12", "JKS", "PEM")),
    Key("mirrorspark.rest.ssl.key.password", Type.STRING, None,
        "The private key's password when it differs from the keystore's (PKCS12, JKS) or the PEM key is "
        "encrypted.", Scope.DRIVER),
    Key("mirrorspark.rest.plaintext.allowed", Type.BOOLEAN, "false",
        "Let the REST API listen in plain HTTP on an address other than loopback (its token then crosses the "
        "network in clear). Without it such a listener is refused: give it `https://` and a keystore, or keep "
        "it on loopback behind a TLS proxy.", Scope.DRIVER),
    Key("mirrorspark.rest.token", Type.STRING, None,
        "The token every REST call but `/health`, `/ready` and `/metrics` needs (`Authorization: Bearer <token>`; "
        "the `/status` page asks for it once in a form and keeps a cookie). "
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
        "next to nothing without it; set it to cap the worst case (each batch boundary adds a batch's fixed "
        "work; what a bound costs in backlog rate is measured in docs/adr/0010-grouped-source.md).", low=0),
    Key("mirrorspark.trigger", Type.STRING, "auto",
        "How the flow's Spark query runs: `auto` (the default: real-time mode when `spark.master = local[N]` "
        "has a slot for every real-time task beside one per micro-batch flow and the flow sets no "
        "`mirrorspark.batch.max.records`; micro-batches otherwise, and on a Spark cluster; the choice and its "
        "reason are logged at start), `realtime` (Spark's real-time mode: long-running tasks, each reading a "
        "group of the flow's partitions with one consumer, forward each record as it arrives, for latency at "
        "MM2's level) or `microbatch` (tasks that each read a group of partitions, one batch after another; "
        "they share the slots, at several times MM2's latency). "
        "`realtime` needs a free task slot per group (`mirrorspark.realtime.tasks`) and is refused "
        "with the numbers when the Spark application has fewer (`spark.master = local[N]`, or executors' "
        "cores); with `exactly.once.source.support = enabled` each task commits a transaction every "
        "`mirrorspark.realtime.transaction.ms`; topics or partitions added are met within seconds, as "
        "micro-batches meet them, and read from the next batch end on, by restarting the query. On a Spark "
        "cluster, what a lost executor's tasks wrote is compared with the target by their retries and the "
        "batches after them, as in micro-batches (docs/adr/0027-grouped-source-real-time.md).",
        choices=("microbatch", "realtime", "auto")),
    Key("mirrorspark.realtime.tasks", Type.INT, "0",
        "Real-time mode: how many long-running tasks read the flow's partitions, each a group of them with one "
        "consumer (as MM2's `tasks.max`); each holds a task slot for as long as the flow runs. 0, the default, "
        "shares the slots the micro-batch flows of the process leave among its real-time flows; never more "
        "tasks than partitions.", low=0, high=100000),
    Key("mirrorspark.realtime.batch.seconds", Type.DOUBLE, "15",
        "Real-time mode: how long each real-time batch runs before Spark records its progress (at least 5, "
        "Spark's minimum). Offset syncs, checkpoints, lag and mirrorspark's resume state follow each batch end; "
        "records pause briefly at each boundary, which is what the p99 latency shows (measured per batch length "
        "by `make bench-realtime`: docs/adr/0016-real-time-mode.md).", low=5, high=3600),
    Key("mirrorspark.realtime.transaction.ms", Type.INT, "100",
        "Real-time mode with `exactly.once.source.support = enabled`: the longest a task's transaction holds its "
        "records before it commits them (visible to `read_committed` consumers), as MM2's "
        "`transaction.boundary.interval.ms`; a shorter one lowers their latency and commits more often "
        "(docs/adr/0015-exactly-once.md).", low=1, high=600000),
    Key("mirrorspark.heartbeats.hold.ms", Type.INT, "10000",
        "While a flow's only new records are heartbeats (an idle flow: MM2 emits one a second), they are copied "
        "together at most this long after the flow's quiet check of its source first sees them (one every few "
        "seconds), instead of one micro-batch each; any other record copies "
        "them at once with it. An idle flow then runs one batch per interval instead of one a second (its CPU "
        "falls by about as much). In real-time mode a heartbeat that comes alone is copied at once and the next "
        "ones are fetched together this long after it. 0 copies heartbeats as they come, as MM2 does.",
        low=0, high=60000),
    Key("mirrorspark.source.stall.timeout.ms", Type.INT, "60000",
        "How long a task waits for source records that are due (the partition's end is past what it read) "
        "while the source answers nothing (a broker down, a leader lost) before the task fails; the flow then "
        "stays `degraded` and is retried until the source answers, and the batch is read again whole. Records "
        "still on the source are never skipped; only those the source no longer has are reported lost.",
        low=1000),
    Key("mirrorspark.flow.restart.attempts", Type.INT, "5",
        "Consecutive failures of a flow's query that a retry cannot fix (authorization, a configuration the "
        "cluster refuses, a record too large, an unknown error) after which the flow stays `failed`; before that "
        "it is restarted with exponential backoff while the other flows keep running. A batch written resets the "
        "count. Failures that pass when a cluster answers again (unreachable, a leader moving, a timeout) never "
        "count: the flow stays up, `degraded` with the reason and since when, and is retried for as long as it "
        "takes, as MM2's tasks retry retriable errors. The process exits non-zero only when every flow has failed.",
        low=0),
    Key("mirrorspark.flow.restart.backoff.seconds", Type.DOUBLE, "1",
        "Wait before the first restart of a failed flow; doubled after each further failure, at most 60 s "
        "(15 s while a cluster is out of reach, so a flow resumes soon after it answers again).",
        low=0),
    Key("mirrorspark.flow.lease.enabled", Type.BOOLEAN, "true",
        "Instances that run the same flow coordinate through a consumer group on the flow's target cluster, as "
        "MM2's workers do: exactly one writes the flow, the others wait as standbys (`status`: `standby`) and one "
        "of them takes over, resuming from what the target holds, when it stops or stops answering. A paused or "
        "cut-off writer is fenced before it writes again. Set it to `false` only where the group cannot be used "
        "(no READ ACL on the group); then nothing stops a second instance from copying everything again."),
    Key("mirrorspark.flow.lease.timeout.ms", Type.INT, "10000",
        "How long a writer may stop answering (process stopped, host cut off, JVM paused) before a standby takes "
        "the flow over: the lease group's session timeout. The writer stops sending after half of it without a "
        "confirmation, well before a standby can start.", low=6000, high=300000),
    Key("mirrorspark.flow.lease.group", Type.STRING, None,
        "The consumer group on the target cluster whose single member writes the flow. Default "
        "`mirrorspark.<source>-><target>`; give separate deployments that replicate different topics between "
        "the same clusters their own group."),
    Key("schema.registry.url", Type.STRING, None,
        "The cluster's schema registry (Confluent's REST API: Confluent, Apicurio's `/apis/ccompat/v7`, Karapace): "
        "`A.schema.registry.url`. Read by flows with `mirrorspark.schemas.sync.enabled` (ADR 0028).", Scope.CLUSTER),
    Key("schema.registry.basic.auth.user.info", Type.STRING, None,
        "`user:password` for the registry's basic authentication: `A.schema.registry.basic.auth.user.info`.",
        Scope.CLUSTER),
    Key("schema.registry.ssl.ca.location", Type.STRING, None,
        "A PEM file of the CAs that sign an HTTPS registry's certificate, when the system's do not: "
        "`A.schema.registry.ssl.ca.location`.", Scope.CLUSTER),
    Key("schema.registry.ssl.certificate.location", Type.STRING, None,
        "A PEM client certificate for a registry that asks for one (with `schema.registry.ssl.key.location`).",
        Scope.CLUSTER),
    Key("schema.registry.ssl.key.location", Type.STRING, None,
        "The PEM private key of `schema.registry.ssl.certificate.location` (unencrypted).", Scope.CLUSTER),
    Key("mirrorspark.schemas.sync.enabled", Type.BOOLEAN, "false",
        "Copy the source registry's subjects and versions to the target's registry, renamed as the remote topics "
        "are, and rewrite each record's schema id (keys and values in the Confluent wire format) to the target's. "
        "Needs `schema.registry.url` on both clusters."),
    Key("mirrorspark.schemas.subjects", Type.LIST, ".*",
        "Source subjects (Java regexes) copied whole at each sync; others are copied when a record or a reference "
        "needs them.", regex=True),
    Key("mirrorspark.schemas.topics", Type.LIST, ".*",
        "Source topics (Java regexes) whose keys and values in the Confluent wire format get the target registry's "
        "ids; records of other topics are copied as they are (a topic of raw bytes that may start with a 0 byte). "
        "MM2's heartbeats are never rewritten.", regex=True),
    Key("mirrorspark.schemas.sync.interval.seconds", Type.DOUBLE, "30",
        "Seconds between two passes over the source registry (new subjects and versions).", low=1),
    Key("mirrorspark.schemas.ids", Type.STRING, "rewrite",
        "`rewrite`: each schema takes the id the target registry gives it and the sink rewrites every record's id. "
        "`keep`: each schema is registered with its source id (the subject in IMPORT mode meanwhile, in the source's "
        "id order) and records keep their ids; for a target registry that is empty or holds only what the flow "
        "copied. A schema the target registry gives another id fails the flow naming this key.",
        choices=("rewrite", "keep")),
    Key("mirrorspark.schemas.unresolved", Type.STRING, "fail",
        "A record whose schema id neither registry knows: `fail` (the flow fails naming topic, partition, offset and "
        "id) or `copy` (copied unchanged, counted in the log and a metric).", choices=("fail", "copy")),
    Key("mirrorspark.shutdown.timeout.ms", Type.INT, "75000",
        "How long a stop (SIGTERM, Ctrl-C) may take: each flow's running batch, its offset syncs and its lease "
        "group are ended in order, and when a cluster does not answer one of them can wait far longer. Past "
        "this, the process logs the step it was still in and exits at once (exit code 143), which is as safe as "
        "`kill -9`: nothing is lost and the next start resumes from the flows' state. A second signal exits at "
        "once too. The default leaves the batch in flight Spark's 60 s to commit; keep it below the orchestrator's "
        "grace period (the shipped systemd unit and Kubernetes manifests give 90 s; Kubernetes' own default is "
        "30 s).", Scope.DRIVER, low=1000),
    Key("mirrorspark.metrics.lag.interval.seconds", Type.DOUBLE, "5",
        "How often lag (offsets and seconds) and record/byte rates are measured; while a flow is caught up (no lag "
        "outside the heartbeat topics) its lag is measured every sixth time.", Scope.DRIVER, low=0.1),
)

BY_NAME: dict[str, Key] = {k.name: k for k in KEYS}

# Prefixes whose keys are passed to clients or Spark as they are.
PASSTHROUGH_PREFIXES = ("consumer.", "producer.", "admin.", "producer.override.", "ssl.", "sasl.", "spark.",
                        "config.providers", "source.", "target.")
# MM2 / Kafka Connect settings that mean nothing to mirrorspark's design; accepted so existing
# mm2.properties files load unchanged.
CONNECT_PREFIXES = ("offset.storage", "config.storage", "status.storage", "key.converter", "value.converter",
                    "header.converter", "task", "worker", "offset.flush",
                    "errors.", "transforms", "predicates", "listeners", "rest.", "dedicated.mode",
                    "access.control", "metric.reporters", "forwarding.admin.class", "client.id", "group.id", "name",
                    "connector.class", "scheduled.rebalance", "topic.creation", "response.http.headers",
                    "client.dns.lookup")
# Of those, the ones mirrorspark reads (the transformation chain, the clients, a warning) or refuses unless
# MM2's default (errors.*): configuration.md lists only the rest as ignored.
READ_CONNECT_PREFIXES = ("transforms", "predicates", "key.converter", "value.converter", "header.converter",
                         "client.dns.lookup", "metric.reporters", "errors.")


@dataclass(frozen=True)
class Unsupported:
    """An MM2 plug-in point or delivery mode mirrorspark does not implement. Ignoring it would change
    what is copied without a word, so a value other than MM2's default is refused."""

    name: str                     # the key, or with a trailing ".*" every key under it
    why: str
    defaults: tuple[str, ...] = ()  # values that mean MM2's default behaviour: accepted, no effect

    def matches(self, key: str) -> bool:
        if self.name.endswith(".*"):
            return key.startswith(self.name[:-1])
        return key == self.name


_NO_ERRORS = ("mirrorspark does not use Kafka Connect's error handling: a record that cannot be copied stops the "
              "flow and is never skipped; remove it")
UNSUPPORTED: tuple[Unsupported, ...] = (
    Unsupported("errors.tolerance", _NO_ERRORS, ("none",)),
    Unsupported("errors.retry.timeout", _NO_ERRORS, ("0",)),
    Unsupported("errors.retry.delay.max.ms", _NO_ERRORS, ("60000",)),
    Unsupported("errors.log.enable", _NO_ERRORS, ("false",)),
    Unsupported("errors.log.include.messages", _NO_ERRORS, ("false",)),
    Unsupported("errors.*", _NO_ERRORS),
)


# MM2's policy class names (and mirrorspark's own) that name a built-in policy: never imported.
BUILTIN_POLICIES: dict[str, str] = {
    "org.apache.kafka.connect.mirror.DefaultReplicationPolicy": "default",
    "DefaultReplicationPolicy": "default",
    "mirrorspark.policy.DefaultReplicationPolicy": "default",
    "mirrorspark.policy.default.DefaultReplicationPolicy": "default",
    "org.apache.kafka.connect.mirror.IdentityReplicationPolicy": "identity",
    "IdentityReplicationPolicy": "identity",
    "mirrorspark.policy.IdentityReplicationPolicy": "identity",
    "mirrorspark.policy.identity.IdentityReplicationPolicy": "identity",
}


def builtin_policy(name: str) -> str | None:
    """``default`` or ``identity`` for MM2's and mirrorspark's built-in policies in any accepted form
    (``module.Class`` or ``module:Class``), else None."""
    name = name.strip()
    return BUILTIN_POLICIES.get(name) or BUILTIN_POLICIES.get(name.replace(":", "."))


def unsupported(name: str, value: str) -> Unsupported | None:
    """The refusal for ``name = value``, or None (not such a key, or MM2's default value)."""
    for entry in UNSUPPORTED:
        if entry.matches(name):
            return None if value.strip().lower() in (d.lower() for d in entry.defaults) else entry
    return None

# Roots of MM2's own namespaces: an undeclared key under one of them is a typo, not a setting.
MM2_NAMESPACES = ("emit.", "sync.", "refresh.", "topics", "groups", "replication.", "offset-syncs",
                  "checkpoints.", "heartbeats.", "config.properties", "use.defaults", "offset.lag", "enabled",
                  "topic.map", "mirrorspark.")
