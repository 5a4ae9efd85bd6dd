"""One flow's schema sync: the source registry's subjects and versions copied to the target's, in
order and references first, under the subject the remote topic gives them (``subjects``), and the
source id -> target id map the sink rewrites records with (ADR 0028)."""
from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from typing import Protocol

from mirrorspark.errors import ConfigError
from mirrorspark.schemas.registry import Reference, RegistryError, SchemaVersion
from mirrorspark.schemas.subjects import target_subject

log = logging.getLogger(__name__)

# The sink's UnknownSchemaIdException (io.mirrorspark.schema): the batch failed before the record was sent.
_UNKNOWN = re.compile(r"schema id (\d+) of a record of (\S+) \(source offset (\d+)\) is not in the flow's "
                      r"schema id map")


def unknown_schema_id(text: str | None) -> tuple[int, str] | None:
    """The schema id a failed batch met that the map lacks, and where (``topic[partition] (source offset n)``)."""
    found = _UNKNOWN.search(text or "")
    return (int(found.group(1)), f"{found.group(2)} (source offset {found.group(3)})") if found else None


class SourceRegistry(Protocol):
    name: str

    def subjects(self) -> list[str]: ...

    def versions(self, subject: str) -> list[int]: ...

    def version(self, subject: str, version: int) -> SchemaVersion: ...

    def subjects_of_id(self, schema_id: int) -> list[tuple[str, int]]: ...

    def compatibility(self, subject: str) -> str | None: ...


class IdsNotKept(ConfigError):
    """``mirrorspark.schemas.ids = keep`` and the target registry gave a schema another id than the
    source's: records keeping their ids would name another schema there, or none. Not retried."""


class TargetRegistry(Protocol):
    name: str

    def register(self, subject: str, schema: SchemaVersion, references: tuple[Reference, ...] | None = None,
                 *, keep_id: bool = False) -> int: ...

    def set_mode(self, subject: str, mode: str) -> bool: ...

    def lookup(self, subject: str, schema: SchemaVersion, references: tuple[Reference, ...] | None = None
               ) -> tuple[int, int] | None: ...

    def compatibility(self, subject: str) -> str | None: ...

    def set_compatibility(self, subject: str, level: str) -> None: ...


class SchemaSync:
    """Copies what the flow's records need; safe to call from the control thread and a batch's retry."""

    def __init__(self, *, flow: str, source: SourceRegistry, target: TargetRegistry,
                 remote: Callable[[], Mapping[str, str]], subjects: Callable[[str], object] | None = None,
                 topics: Callable[[str], object] | None = None, keep_ids: bool = False) -> None:
        """``remote``: the flow's source topic -> remote topic names now; ``subjects``: whether a source
        subject is copied whole (a regex's ``fullmatch``; None: all); others are copied when a record or a
        reference needs them. ``topics``: whether a source topic's records are in the wire format (None: all).
        ``keep_ids``: each schema registered with its source id (the subject in IMPORT mode meanwhile), in
        the order of the source's ids; a registry that gives another id raises ``IdsNotKept``."""
        self.flow = flow
        self.keep_ids = keep_ids
        self.topics = topics
        self.source = source
        self.target = target
        self.remote = remote
        self.subjects = subjects
        self.ids: dict[int, int] = {}  # source schema id -> target schema id
        self._copied: dict[tuple[str, int], tuple[str, int]] = {}  # (subject, version) -> target's
        self.unresolved: set[int] = set()  # ids neither registry knows, copied unchanged (``copy``)
        self._levels: set[str] = set()  # subjects whose compatibility level was copied
        self._lock = threading.RLock()

    def run(self) -> int:
        """One pass over the source's subjects; returns how many versions were copied."""
        with self._lock:
            before = len(self._copied)
            chosen = [subject for subject in sorted(self.source.subjects())
                      if self.subjects is None or self.subjects(subject)]
            if self.keep_ids:  # in the source's id order: a registry that numbers as it goes gives the same ids
                pending = sorted((self.source.version(subject, version).id, subject, version) for subject in chosen
                                 for version in self.source.versions(subject) if (subject, version) not in self._copied)
                for _, subject, version in pending:
                    self._subject(subject, version)
            for subject in chosen:
                self._subject(subject, None)
            return len(self._copied) - before

    def resolve(self, schema_id: int) -> int | None:
        """The target id of source schema ``schema_id``, copying the versions that hold it first;
        None when the source registry does not know it either."""
        with self._lock:
            if schema_id in self.ids:
                return self.ids[schema_id]
            for subject, version in self.source.subjects_of_id(schema_id):
                self._subject(subject, version)
            return self.ids.get(schema_id)

    def handle_unknown(self, schema_id: int, where: str, *, fail_unresolved: bool) -> str | None:
        """A batch met ``schema_id`` (at ``where``): copied to the target so the batch can run again
        (None); when the source registry does not know it either, the reason the flow fails, or (copy)
        the id kept as it is, said once. Raises RegistryError when a registry does not answer."""
        if self.resolve(schema_id) is not None:
            return None
        if fail_unresolved:
            return (f"flow {self.flow}: the record at {where} carries schema id {schema_id}, which the schema registry "
                    f"of {self.source.name} does not know: it cannot be written with the target registry's id "
                    "(mirrorspark.schemas.unresolved = fail; `copy` copies such records unchanged)")
        with self._lock:
            self.ids[schema_id] = schema_id
            self.unresolved.add(schema_id)
        log.warning("flow %s: the record at %s carries schema id %d, which the schema registry of %s does not know: "
                    "records with it are copied unchanged and counted (mirrorspark.schemas.unresolved = copy)",
                    self.flow, where, schema_id, self.source.name)
        return None

    def copied_map(self) -> dict[int, int]:
        """The target ids of the source's schemas the target registry holds, found without writing
        anything (``audit``): each version looked up under its renamed subject, references renamed."""
        found: dict[int, int] = {}
        versions: dict[tuple[str, int], tuple[str, int] | None] = {}

        def target_version(subject: str, version: int) -> tuple[str, int] | None:
            if (subject, version) not in versions:
                versions[(subject, version)] = None  # a reference cycle ends here
                schema = self.source.version(subject, version)
                refs = []
                for ref in schema.references:
                    held = target_version(ref.subject, ref.version)
                    if held is None:
                        return None
                    refs.append(Reference(ref.name, *held))
                name = target_subject(subject, self.remote())
                hit = self.target.lookup(name, schema, tuple(refs))
                if hit is not None:
                    found.setdefault(schema.id, hit[0])
                    versions[(subject, version)] = (name, hit[1])
            return versions[(subject, version)]

        for subject in self.source.subjects():
            for version in self.source.versions(subject):
                target_version(subject, version)
        return found

    def topics_option(self, remote: Mapping[str, str]) -> str:
        """The sink's ``schemaTopics`` option: the remote topics whose records are rewritten."""
        return "\n".join(sorted(name for source, name in remote.items() if self.topics is None or self.topics(source)))

    def option(self) -> str:
        """The sink's ``schemaIds`` option; ``id:?`` for an id copied unchanged, whose records the sink counts."""
        with self._lock:
            return ",".join(f"{s}:?" if s in self.unresolved else f"{s}:{t}" for s, t in sorted(self.ids.items()))

    def _subject(self, subject: str, up_to: int | None) -> None:
        """Copy ``subject``'s versions in order, up to ``up_to`` (None: all)."""
        for version in self.source.versions(subject):
            if up_to is not None and version > up_to:
                break
            if (subject, version) not in self._copied:
                self._version(subject, version)

    def _version(self, subject: str, version: int) -> None:
        schema = self.source.version(subject, version)
        references = []
        for ref in schema.references:  # references first: the target must hold what a schema names
            self._subject(ref.subject, ref.version)
            target_ref, target_version = self._copied[(ref.subject, ref.version)]
            references.append(Reference(ref.name, target_ref, target_version))
        name = target_subject(subject, self.remote())
        refs = tuple(references)
        if self.keep_ids:
            self.target.set_mode(name, "IMPORT")
            try:
                target_id = self.target.register(name, schema, refs, keep_id=True)
            finally:
                self.target.set_mode(name, "READWRITE")
            if target_id != schema.id:
                raise IdsNotKept(f"flow {self.flow}: mirrorspark.schemas.ids = keep, but the schema registry of "
                                 f"{self.target.name} gave {name} version {version} id {target_id}, which is id "
                                 f"{schema.id} on {self.source.name} (a target registry that held other schemas, one "
                                 "that ignores IMPORT mode, or ids the source left unused): records keeping their "
                                 "ids would name another schema there; use `rewrite`", "mirrorspark.schemas.ids")
        else:
            target_id = self.target.register(name, schema, refs)
        if subject not in self._levels:  # the subject's compatibility, once it exists (a first version needs none)
            level = self.source.compatibility(subject)
            if level and self.target.compatibility(name) != level:
                self.target.set_compatibility(name, level)
            self._levels.add(subject)
        found = self.target.lookup(name, schema, refs)
        if found is None or found[0] != target_id:
            raise RegistryError(f"schema registry of {self.target.name}: subject {name} does not hold the schema it "
                              f"just registered as id {target_id}")
        self._copied[(subject, version)] = (name, found[1])
        if self.ids.get(schema.id, target_id) != target_id:
            log.warning("flow %s: source schema id %d is registered as %d and %d on %s: records take %d",
                        self.flow, schema.id, self.ids[schema.id], target_id, self.target.name, self.ids[schema.id])
        self.ids.setdefault(schema.id, target_id)
        log.info("flow %s: schema %s version %d (id %d on %s) copied as %s version %d (id %d on %s)", self.flow,
                 subject, version, schema.id, self.source.name, name, found[1], target_id, self.target.name)
