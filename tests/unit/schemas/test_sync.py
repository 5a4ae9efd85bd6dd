"""The schema sync's order and map, against registries kept in memory (the real ones: Apicurio, in the drills)."""
from __future__ import annotations

import re

import pytest

from mirrorspark.errors import OperationalError
from mirrorspark.schemas.registry import Reference, SchemaVersion
from mirrorspark.schemas.sync import SchemaSync


class Memory:
    """A registry as the Confluent API behaves: ids global, versions per subject, same schema same id."""

    def __init__(self, name: str, first_id: int = 1, honours_ids: bool = True) -> None:
        self.name = name
        self.next_id = first_id
        self.honours_ids = honours_ids  # Confluent's registry in IMPORT mode; Apicurio's ccompat API is not
        self.modes: dict[str, str] = {}
        self.by_schema: dict[tuple[str, str, tuple], int] = {}
        self.subject_versions: dict[str, list[SchemaVersion]] = {}
        self.levels: dict[str, str] = {}
        self.calls: list[tuple] = []

    def add(self, subject: str, schema: str, references: tuple[Reference, ...] = (), kind: str = "AVRO") -> int:
        return self.register(subject, SchemaVersion(subject, 0, 0, schema, kind, references))

    def subjects(self) -> list[str]:
        return list(self.subject_versions)

    def versions(self, subject: str) -> list[int]:
        return [v.version for v in self.subject_versions[subject]]

    def version(self, subject: str, version: int) -> SchemaVersion:
        return next(v for v in self.subject_versions[subject] if v.version == version)

    def subjects_of_id(self, schema_id: int) -> list[tuple[str, int]]:
        return [(s, v.version) for s, vs in self.subject_versions.items() for v in vs if v.id == schema_id]

    def register(self, subject: str, schema: SchemaVersion, references: tuple[Reference, ...] | None = None,
                 *, keep_id: bool = False) -> int:
        refs = schema.references if references is None else references
        for ref in refs:
            assert ref.version in self.versions(ref.subject), f"{ref} is not registered yet"
        key = (schema.schema, schema.schema_type, refs)
        if keep_id and self.honours_ids and self.modes.get(subject) == "IMPORT" and key not in self.by_schema:
            assert schema.id not in self.by_schema.values(), "Confluent refuses an id another schema holds"
            self.by_schema[key] = schema.id
            self.next_id = max(self.next_id, schema.id + 1)
        schema_id = self.by_schema.setdefault(key, self.next_id)
        if schema_id == self.next_id:
            self.next_id += 1
        held = self.subject_versions.setdefault(subject, [])
        if not any(v.id == schema_id for v in held):
            held.append(SchemaVersion(subject, len(held) + 1, schema_id, schema.schema, schema.schema_type, refs))
        self.calls.append(("register", subject))
        return schema_id

    def lookup(self, subject, schema, references=None):
        refs = schema.references if references is None else references
        found = [v for v in self.subject_versions.get(subject, []) if (v.schema, v.references) == (schema.schema, refs)]
        return (found[0].id, found[0].version) if found else None

    def compatibility(self, subject: str) -> str | None:
        return self.levels.get(subject)

    def set_compatibility(self, subject: str, level: str) -> None:
        self.levels[subject] = level
        self.calls.append(("compatibility", subject))

    def set_mode(self, subject: str, mode: str) -> bool:
        self.modes[subject] = mode
        return True


REMOTE = {"orders": "primary.orders"}


def test_every_version_is_copied_in_order_under_the_remote_subject_and_ids_are_mapped():
    source, target = Memory("primary"), Memory("backup", first_id=100)
    target.add("taken", '"string"')  # the target's id 100 is another schema: the map must not take it for id 1
    one = source.add("orders-value", '{"type":"record","name":"Order","fields":[]}')
    two = source.add("orders-value",
                     '{"type":"record","name":"Order","fields":[{"name":"a","type":"int","default":0}]}')
    source.levels["orders-value"] = "FULL"
    sync = SchemaSync(flow="primary->backup", source=source, target=target, remote=lambda: REMOTE)
    assert sync.run() == 2
    assert target.versions("primary.orders-value") == [1, 2]
    assert [v.schema for v in target.subject_versions["primary.orders-value"]] == \
        [v.schema for v in source.subject_versions["orders-value"]]
    assert sync.ids == {one: 101, two: 102}
    assert sync.option() == f"{one}:101,{two}:102"
    assert target.levels == {"primary.orders-value": "FULL"}
    registers = [i for i, call in enumerate(target.calls) if call == ("register", "primary.orders-value")]
    assert registers[0] < target.calls.index(("compatibility", "primary.orders-value")) < registers[1], \
        "the level once the subject exists (a registry refuses it before), before its second version"
    assert sync.run() == 0, "a second pass copies nothing again"


def test_references_are_copied_first_and_renamed_in_the_schema_that_names_them():
    source, target = Memory("primary"), Memory("backup")
    address = source.add("common-address", '{"type":"record","name":"Address","fields":[]}')
    order = source.add("orders-value", '{"type":"record","name":"Order","fields":[{"name":"a","type":"Address"}]}',
                       (Reference("Address", "common-address", 1),))
    sync = SchemaSync(flow="f", source=source, target=target, remote=lambda: REMOTE)
    assert sync.resolve(order) is not None  # a record met before any pass: its subject and references copied
    copied = target.subject_versions["primary.orders-value"][0]
    assert copied.references == (Reference("Address", "common-address", 1),)
    assert set(sync.ids) == {address, order}


def test_a_new_version_met_in_a_record_is_copied_before_the_record_is_written():
    source, target = Memory("primary"), Memory("backup")
    source.add("orders-value", '"int"')
    sync = SchemaSync(flow="f", source=source, target=target, remote=lambda: REMOTE)
    sync.run()
    newer = source.add("orders-value", '"long"')  # registered mid-stream on the source
    assert newer not in sync.ids
    assert sync.resolve(newer) == target.lookup("primary.orders-value", source.version("orders-value", 2))[0]
    assert sync.resolve(9_999) is None, "an id neither registry knows"


def test_only_the_chosen_subjects_are_copied_whole():
    source, target = Memory("primary"), Memory("backup")
    source.add("orders-value", '"int"')
    source.add("other-value", '"long"')
    SchemaSync(flow="f", source=source, target=target, remote=lambda: REMOTE,
               subjects=re.compile("orders-.*").fullmatch).run()
    assert target.subjects() == ["primary.orders-value"]


def test_a_registry_that_refuses_a_version_stops_the_pass_naming_it():
    source, target = Memory("primary"), Memory("backup")
    source.add("orders-value", '"int"')

    def refuse(subject, schema, references=None):
        raise OperationalError(f"schema registry of backup: subject {subject} refused: HTTP 409 incompatible")
    target.register = refuse  # type: ignore[method-assign]
    with pytest.raises(OperationalError, match=r"primary\.orders-value"):
        SchemaSync(flow="f", source=source, target=target, remote=lambda: REMOTE).run()


def test_the_sinks_message_names_the_id_and_an_unknown_one_fails_or_is_copied_as_the_setting_says():
    from mirrorspark.schemas.sync import unknown_schema_id
    text = ("io.mirrorspark.schema.UnknownSchemaIdException: flow primary->backup: schema id 42 of a record of "
            "primary.orders[3] (source offset 1207) is not in the flow's schema id map")
    assert unknown_schema_id(text) == (42, "primary.orders[3] (source offset 1207)")
    assert unknown_schema_id("java.io.IOException: writing to the target failed") is None
    source, target = Memory("primary"), Memory("backup")
    known = source.add("orders-value", '"int"')
    sync = SchemaSync(flow="f", source=source, target=target, remote=lambda: REMOTE)
    assert sync.handle_unknown(known, "here", fail_unresolved=True) is None and known in sync.ids
    failed = sync.handle_unknown(77, "primary.orders[3] (source offset 1207)", fail_unresolved=True)
    assert failed is not None and "schema id 77" in failed and "primary.orders[3]" in failed
    assert sync.handle_unknown(77, "there", fail_unresolved=False) is None
    assert sync.ids[77] == 77 and sync.unresolved == {77}, "copied unchanged from now on"
    assert "77:?" in sync.option().split(","), "the sink counts its records"


def test_only_the_chosen_topics_records_are_rewritten_never_the_heartbeats():
    from mirrorspark.pipeline.flow_assembly import _schema_topics
    from mirrorspark.policy.default import DefaultReplicationPolicy

    chosen = _schema_topics(DefaultReplicationPolicy(), None)
    sync = SchemaSync(flow="f", source=Memory("a"), target=Memory("b"), remote=lambda: REMOTE, topics=chosen)
    remote = {"orders": "primary.orders", "heartbeats": "primary.heartbeats", "raw": "primary.raw"}
    assert sync.topics_option(remote) == "primary.orders\nprimary.raw"
    narrow = _schema_topics(DefaultReplicationPolicy(), re.compile("orders").fullmatch)
    assert SchemaSync(flow="f", source=Memory("a"), target=Memory("b"), remote=lambda: REMOTE,
                      topics=narrow).topics_option(remote) == "primary.orders"


def test_the_audit_finds_the_copied_ids_without_writing_to_either_registry():
    source, target = Memory("primary"), Memory("backup", first_id=50)
    address = source.add("common-address", '{"type":"record","name":"Address","fields":[]}')
    order = source.add("orders-value", '{"type":"record","name":"Order","fields":[]}',
                       (Reference("Address", "common-address", 1),))
    late = source.add("orders-value", '"long"')
    SchemaSync(flow="f", source=source, target=target, remote=lambda: REMOTE).resolve(order)
    calls = len(target.calls)
    found = SchemaSync(flow="f", source=source, target=target, remote=lambda: REMOTE).copied_map()
    assert found == {address: 50, order: 51}, "the version never copied has no target id"
    assert late not in found and len(target.calls) == calls, "nothing written"


def test_ids_kept_as_the_source_numbers_them_or_the_flow_refused_naming_the_key():
    from mirrorspark.schemas.sync import IdsNotKept

    def source_with_a_gap() -> Memory:
        source = Memory("primary", first_id=1)
        source.add("orders-value", '"int"')      # id 1
        source.next_id = 3                        # id 2 was deleted on the source
        source.add("orders-value", '"long"')     # id 3
        source.add("payments-value", '"string"')  # id 4
        return source

    honours = Memory("backup")  # Confluent in IMPORT mode: each schema takes the id it is given
    sync = SchemaSync(flow="f", source=source_with_a_gap(), target=honours, remote=lambda: REMOTE, keep_ids=True)
    assert sync.run() == 3
    assert sync.ids == {1: 1, 3: 3, 4: 4} and sync.option() == "1:1,3:3,4:4"
    assert set(honours.modes.values()) == {"READWRITE"}, "no subject is left in IMPORT mode"
    assert sync.run() == 0, "a second pass copies nothing"

    numbers = Memory("backup", honours_ids=False)  # Apicurio: numbers as it goes, from 1
    contiguous = Memory("primary")
    contiguous.add("orders-value", '"int"')
    contiguous.add("payments-value", '"string"')
    contiguous.add("orders-value", '"long"')
    kept = SchemaSync(flow="f", source=contiguous, target=numbers, remote=lambda: REMOTE, keep_ids=True)
    kept.run()
    assert kept.ids == {1: 1, 2: 2, 3: 3}, "registered in the source's id order, across subjects"

    gap = SchemaSync(flow="f", source=source_with_a_gap(), target=Memory("backup", honours_ids=False),
                     remote=lambda: REMOTE, keep_ids=True)
    with pytest.raises(IdsNotKept) as refused:
        gap.run()
    assert refused.value.key == "mirrorspark.schemas.ids" and "id 2" in str(refused.value)
    assert 3 not in gap.ids, "no record is written with an id the target gave another schema"

    taken = Memory("backup", honours_ids=False)
    taken.add("unrelated", '"bytes"')  # the target is not empty: its id 1 is another schema
    occupied = SchemaSync(flow="f", source=contiguous, target=taken, remote=lambda: REMOTE, keep_ids=True)
    with pytest.raises(IdsNotKept):
        occupied.run()
