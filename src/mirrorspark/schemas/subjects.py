"""The target registry's subject for a source subject, following the remote topic's name.

Serializers name a subject by strategy: TopicNameStrategy ``<topic>-key`` / ``<topic>-value``,
TopicRecordNameStrategy ``<topic>-<record full name>``, RecordNameStrategy ``<record full name>``.
A consumer on the target reading the remote topic with the same strategy looks the subject up
under the remote topic's name, so the topic part is renamed as the topic is; a record-name subject
names no topic and keeps its name, as does a subject of a topic the flow does not copy (a type
another schema references)."""
from __future__ import annotations

from collections.abc import Mapping

SUFFIXES = ("-key", "-value")


def target_subject(subject: str, remote: Mapping[str, str]) -> str:
    """``subject`` on the target, given the flow's source topic -> remote topic names. The longest
    copied topic that prefixes the subject wins (``orders`` and ``orders-eu`` are both topics)."""
    for suffix in SUFFIXES:
        if subject.endswith(suffix) and subject[: -len(suffix)] in remote:
            return remote[subject[: -len(suffix)]] + suffix
    for topic in sorted(remote, key=len, reverse=True):
        rest = subject[len(topic):]
        if subject.startswith(topic) and rest.startswith("-") and _record_name(rest[1:]):
            return remote[topic] + rest
    return subject


def _record_name(name: str) -> bool:
    """A record's full name as Avro, Protobuf and JSON Schema serializers give it: dotted identifiers."""
    parts = name.split(".")
    return all(part and (part[0].isalpha() or part[0] == "_") and all(c.isalnum() or c in "_$" for c in part)
               for part in parts)
