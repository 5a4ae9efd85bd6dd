"""Which failures of a flow a retry can fix: a cluster out of reach, a leader moving, a timeout.

MM2's tasks retry Kafka's ``RetriableException`` family for as long as it takes; a replicator for
disaster recovery must outlive the disaster. The supervisor keeps such a flow up (``degraded``) and
retries it without limit, with capped backoff; what no retry can fix (authorization, a configuration
the cluster refuses, a record too large, ``mirrorspark.data.loss = fail``) counts towards
``mirrorspark.flow.restart.attempts``. A failure that matches neither list counts too: a bug must not
loop silently for ever.
"""
from __future__ import annotations

import re

# Kafka's Java clients (the source and the sink in the JVM) and librdkafka (the control plane):
# the exception classes and error codes a broker that is down, moving or slow produces.
_RETRIABLE = re.compile("|".join([
    r"\bTimeoutException\b", r"\bNetworkException\b", r"\bDisconnectException\b",
    r"\bNotLeaderOrFollowerException\b", r"\bLeaderNotAvailableException\b",
    r"\bNotCoordinatorException\b", r"\bCoordinatorNotAvailableException\b",
    r"\bCoordinatorLoadInProgressException\b", r"\bNotEnoughReplicas(AfterAppend)?Exception\b",
    r"\bKafkaStorageException\b", r"\bBrokerNotAvailableException\b", r"\bRetriableException\b",
    r"\bUnknownServerException\b.*\btimed out\b",
    r"Failed to get offsets by times", r"Timed out waiting for", r"Failed to (fetch|update) metadata",
    r"Timeout expired (while|after)",
    r"_TRANSPORT\b", r"Broker transport failure", r"_ALL_BROKERS_DOWN\b", r"_TIMED_OUT\b", r"_MSG_TIMED_OUT\b",
    r"Local: Timed out", r"Message timed out", r"\bREQUEST_TIMED_OUT\b", r"\bLEADER_NOT_AVAILABLE\b",
    r"\bNOT_LEADER_(FOR_PARTITION|OR_FOLLOWER)\b", r"\bNOT_COORDINATOR\b", r"\bCOORDINATOR_NOT_AVAILABLE\b",
    r"\bNETWORK_EXCEPTION\b", r"\bNOT_ENOUGH_REPLICAS\b",
    r"cannot reach cluster", r"SourceStalledException", r"Failed to query partition leaders",
    # The lease moved while a batch ran: the flow leaves or waits as a standby; never a failure of its own.
    r"no longer holds the flow's lease", r"after this process lost the flow's lease",
]))

# A transaction the broker aborted when transaction.timeout.ms ran out (a source stalled mid-transaction):
# retried, although the exception behind it (InvalidProducerEpoch) otherwise means a newer writer; and
# a flush cut when its transaction ran out (the sink closes the producer: a deleted topic, a target away).
_TRANSACTION_TIMED_OUT = re.compile(
    r"was aborted by the target after \d+ ms|did not end within transaction\.timeout\.ms")

# What a retry cannot fix even when a timeout is mentioned next to it.
_PERMANENT = re.compile("|".join([
    r"Authori[sz]ation", r"Authentication", r"\bSasl", r"SSL handshake", r"InvalidConfiguration",
    r"RecordTooLarge", r"MSG_SIZE_TOO_LARGE", r"mirrorspark\.data\.loss = fail", r"DataLossException",
    r"ProducerFenced", r"InvalidProducerEpoch", r"UnsupportedVersion", r"InvalidTopicException",
    r"TOPIC_AUTHORIZATION_FAILED", r"GROUP_AUTHORIZATION_FAILED", r"CLUSTER_AUTHORIZATION_FAILED",
]))


def retriable(error: str) -> bool:
    """A failure that passes when the cluster answers again (the whole error text, causes included)."""
    if _TRANSACTION_TIMED_OUT.search(error) and not re.search(r"Authori[sz]ation|Authentication", error):
        return True
    return bool(_RETRIABLE.search(error)) and not _PERMANENT.search(error)
