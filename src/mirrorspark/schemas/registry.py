"""A schema registry through the Confluent REST API (Confluent's own, Apicurio's ``/apis/ccompat/v7``,
Karapace): what the schema sync reads from the source registry and writes to the target's.

One HTTP request per call, no cache: the sync keeps what it learnt (ADR 0028). Credentials (basic
auth ``user:password``) go in a header only, never in a message. An HTTPS registry is trusted by the
system's CAs, or by the PEM file ``schema.registry.ssl.ca.location`` names; a client certificate and key
(PEM) answer a registry that asks for one."""
from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mirrorspark.errors import ClusterFailure, ConfigError

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class RegistryError(ClusterFailure):
    """A registry refused a request or did not answer; ``status`` is the HTTP status (0: no answer). Its
    message says all (a log line without the HTTP library's stack)."""

    def __init__(self, message: str, *, status: int = 0, code: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.code = code  # the registry's own error code (e.g. 40401 subject not found, 409 incompatible)


@dataclass(frozen=True)
class Reference:
    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class SchemaVersion:
    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = field(default_factory=tuple)


class Registry:
    """One registry, named by ``name`` (the cluster alias) in every message."""

    def __init__(self, *, name: str, url: str, user_info: str | None = None,
                 ssl_context: ssl.SSLContext | None = None, timeout: float = 15.0) -> None:
        self.name = name
        parts = urllib.parse.urlsplit(url.rstrip("/"))
        if parts.username is not None:  # https://user:password@host: credentials go in the header, never a message
            user_info = user_info or urllib.parse.unquote(f"{parts.username}:{parts.password or ''}")
            parts = parts._replace(netloc=parts.netloc.rsplit("@", 1)[1])
        self.url = urllib.parse.urlunsplit(parts)
        self._auth = ("Basic " + base64.b64encode(user_info.encode()).decode()) if user_info else None
        self._ssl = ssl_context
        self.timeout = timeout

    def subjects(self) -> list[str]:
        return [str(s) for s in self._call("GET", "/subjects")]

    def versions(self, subject: str) -> list[int]:
        return sorted(int(v) for v in self._call("GET", f"/subjects/{_quote(subject)}/versions", subject=subject))

    def version(self, subject: str, version: int) -> SchemaVersion:
        found = self._call("GET", f"/subjects/{_quote(subject)}/versions/{version}", subject=subject)
        return SchemaVersion(subject=subject, version=int(found["version"]), id=int(found["id"]),
                             schema=str(found["schema"]), schema_type=str(found.get("schemaType") or "AVRO"),
                             references=tuple(Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
                                              for r in found.get("references") or []))

    def subjects_of_id(self, schema_id: int) -> list[tuple[str, int]]:
        """The (subject, version) pairs that hold schema ``schema_id``."""
        try:
            found = self._call("GET", f"/schemas/ids/{schema_id}/versions")
        except RegistryError as exc:
            if exc.status == 404:
                return []  # no such schema
            raise
        return [(str(v["subject"]), int(v["version"])) for v in found]

    def register(self, subject: str, schema: SchemaVersion, references: tuple[Reference, ...] | None = None,
                 *, keep_id: bool = False) -> int:
        """Register ``schema`` under ``subject`` (its references renamed as given); the id the registry
        gives it, the existing one when the subject holds that schema already. ``keep_id``: asks for the
        source's id and version (honoured by a registry whose subject is in IMPORT mode; the caller checks)."""
        body: dict[str, Any] = {"schema": schema.schema}
        if keep_id:
            body["id"], body["version"] = schema.id, schema.version
        if schema.schema_type != "AVRO":
            body["schemaType"] = schema.schema_type
        refs = schema.references if references is None else references
        if refs:
            body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version} for r in refs]
        return int(self._call("POST", f"/subjects/{_quote(subject)}/versions", body, subject=subject)["id"])

    def lookup(self, subject: str, schema: SchemaVersion, references: tuple[Reference, ...] | None = None
               ) -> tuple[int, int] | None:
        """The (id, version) under which ``subject`` holds ``schema``; None when it does not."""
        body: dict[str, Any] = {"schema": schema.schema}
        if schema.schema_type != "AVRO":
            body["schemaType"] = schema.schema_type
        refs = schema.references if references is None else references
        if refs:
            body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version} for r in refs]
        try:
            found = self._call("POST", f"/subjects/{_quote(subject)}", body, subject=subject)
        except RegistryError as exc:
            if exc.status == 404:
                return None
            raise
        return int(found["id"]), int(found["version"])

    def compatibility(self, subject: str) -> str | None:
        """The subject's own compatibility level; None when it has none (the registry's default applies)."""
        try:
            found = self._call("GET", f"/config/{_quote(subject)}", subject=subject)
        except RegistryError as exc:
            if exc.status == 404:
                return None
            raise
        level = found.get("compatibilityLevel") or found.get("compatibility")
        return str(level) if level else None

    def set_compatibility(self, subject: str, level: str) -> None:
        self._call("PUT", f"/config/{_quote(subject)}", {"compatibility": level}, subject=subject)

    def set_mode(self, subject: str, mode: str) -> bool:
        """Put ``subject`` in ``mode`` (IMPORT: versions registered with given ids; READWRITE); False when
        the registry has no such API (it may still honour given ids, or not: the caller checks)."""
        try:
            self._call("PUT", f"/mode/{_quote(subject)}?force=true", {"mode": mode}, subject=subject)
        except RegistryError as exc:
            if exc.status in (404, 405, 422, 501):
                return False
            raise
        return True

    def _call(self, method: str, path: str, body: Any = None, *, subject: str | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Accept": CONTENT_TYPE, "Content-Type": CONTENT_TYPE})
        if self._auth:
            request.add_header("Authorization", self._auth)
        where = f"schema registry of {self.name} ({self.url})" + (f", subject {subject}" if subject else "")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self._ssl) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            detail, code = _error_detail(exc)
            hint = " (check the registry's credentials)" if exc.code in (401, 403) else ""
            raise RegistryError(f"{where}: {method} {path} refused: HTTP {exc.code} {detail}{hint}", status=exc.code,
                                code=code) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RegistryError(f"{where}: no answer to {method} {path}: {reason}") from None
        try:
            return json.loads(text) if text else None
        except ValueError:
            raise RegistryError(f"{where}: {method} {path} answered something that is not JSON") from None


TLS_KEYS = ("schema.registry.ssl.ca.location", "schema.registry.ssl.certificate.location",
            "schema.registry.ssl.key.location")


def registry_of(*, alias: str, settings: Mapping[str, str]) -> Registry:
    """The registry a cluster's ``schema.registry.*`` keys name (checked present when the file is read)."""
    return Registry(name=alias, url=settings["schema.registry.url"].strip(),
                    user_info=(settings.get("schema.registry.basic.auth.user.info") or "").strip() or None,
                    ssl_context=tls_context(alias=alias, settings=settings))


def tls_context(*, alias: str, settings: Mapping[str, str]) -> ssl.SSLContext | None:
    """The TLS context of a cluster's registry keys (None: the system's defaults); a file that cannot be
    read or is not PEM is refused naming its key."""
    ca, cert, key = ((settings.get(name) or "").strip() or None for name in TLS_KEYS)
    if ca is None and cert is None and key is None:
        return None
    if (cert is None) != (key is None):
        missing = TLS_KEYS[2] if key is None else TLS_KEYS[1]
        raise ConfigError(f"{alias}.{missing} is needed with {alias}.{TLS_KEYS[1 if key is None else 2]}: a client "
                          "certificate goes with its key", f"{alias}.{missing}")
    try:
        context = ssl.create_default_context()
    except ssl.SSLError as exc:  # pragma: no cover - the interpreter's own trust store
        raise ConfigError(f"the system's CA certificates cannot be read for {alias}'s registry: {exc}") from None
    for name, load in ((TLS_KEYS[0], lambda: context.load_verify_locations(cafile=ca) if ca else None),
                       (TLS_KEYS[1], lambda: context.load_cert_chain(cert, key) if cert and key else None)):
        try:
            load()
        except (OSError, ssl.SSLError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(f"{alias}.{name}: cannot be read as PEM ({reason})", f"{alias}.{name}") from None
    return context


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _error_detail(exc: urllib.error.HTTPError) -> tuple[str, int]:
    try:
        found = json.loads(exc.read() or b"{}")
        return str(found.get("message", "")).strip()[:300], int(found.get("error_code", 0) or 0)
    except (ValueError, OSError, TypeError):
        return "", 0
