"""One place that hides secrets in anything mirrorspark prints, serves or logs.

Hiding by key name alone misses copies: a keystore password repeated inside
``spark.driver.extraJavaOptions`` (``-Djavax.net.ssl.keyStorePassword=...``), the password inside a
JAAS entry, or an error message that echoes a value. A ``Redactor`` therefore knows every secret
value of the configuration and replaces each occurrence in any text, and also hides Java
system-property-style ``...password=VALUE`` fragments whatever their value. ``validate``, the REST
``/config`` view and flow states, log lines and CLI error messages all go through the process-wide redactor
(``current()``), installed once the configuration is loaded.
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from typing import Any

HIDDEN = "[hidden]"

# Key names whose values are secrets (Kafka, Schema Registry, Spark/Hadoop credential settings).
SECRET = re.compile(r"(password|passwd|secret|jaas\.config|credentials?|token|basic\.auth\.user\.info|"
                    r"ssl\.key(store\.key|\.pem|\.password)?$|\.key$|private|"
                    r"account\.key|\.sas\.|sas\.token|keyfile|access\.key|oauth2\.client\.secret)", re.IGNORECASE)

# ``name=value`` / ``name: value`` fragments whose name says "secret", e.g.
# ``-Djavax.net.ssl.keyStorePassword=abc`` or ``password="abc"`` inside a JAAS entry.
_FRAGMENT = re.compile(r"""(?P<name>[\w.\-]*(?:password|passwd|secret|token|user\.info)[\w.\-]*\s*[=:]\s*)"""
                       r"""(?P<value>"(?:[^"\\]|\\.)*"|'[^']*'|[^\s,;&"']+)""", re.IGNORECASE)
_MIN_EMBEDDED = 4  # shorter values are hidden only when a whole value equals them


_SECRET_WORDS = ("password", "passwd", "secret", "token", "credentials")
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def is_secret(key: str) -> bool:
    """True for keys whose value must never be shown (by name), misspelt or not: a user's
    ``ssl.truststore.pasword`` is a password whatever Kafka calls it, ``...tokn`` a token and
    ``...kye`` key material. A word one typing slip from a secret word counts, unless it is a word
    of a key mirrorspark knows (``spark.jars`` is no misspelt ``jaas``)."""
    if SECRET.search(key):
        return True
    words = [w.lower() for w in _WORD.findall(key)]
    known = _known_words()
    for word in words:
        if "pass" in word or "pwd" in word or "jaas" in word or word in ("jass", "jas", "pw"):
            return True
        if len(word) >= 5 and difflib.get_close_matches(word, _SECRET_WORDS, n=1, cutoff=0.75):
            return True
        if len(word) >= 3 and word not in known and any(_one_slip(word, s) for s in _SLIP_WORDS):
            return True
    last = words[-1] if words else ""
    # Key material: a last word that is, or ends in, "key" (``apikey``, ``private.key``), or one slip from it.
    return last.endswith("key") or (last not in known and 2 <= len(last) <= 4 and _one_slip(last, "key"))


_SLIP_WORDS = ("token", "secret", "jaas", "passwd", "password", "credentials")


def _one_slip(word: str, target: str) -> bool:
    """``word`` is ``target`` with one letter added, dropped, changed, or two neighbours swapped."""
    if word == target or abs(len(word) - len(target)) > 1:
        return False
    if len(word) == len(target):
        diff = [i for i, (a, b) in enumerate(zip(word, target, strict=True)) if a != b]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and word[diff[0]] == target[diff[1]] and word[diff[1]] == target[diff[0]])
    short, long = (word, target) if len(word) < len(target) else (target, word)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))


_KNOWN: set[str] = set()


def _known_words() -> set[str]:
    """The words of every key mirrorspark knows, and of Spark's close to a secret word (read once)."""
    if not _KNOWN:
        from mirrorspark.config.keys import KEYS

        _KNOWN.update(w.lower() for k in KEYS for w in _WORD.findall(k.name))
        _KNOWN.update(("jars", "taken"))  # spark.jars and the like: words of Spark's and Kafka's own keys
    return _KNOWN


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def secret_values(maps: Iterable[Mapping[str, str]]) -> set[str]:
    """Every value under a secret-looking key, plus the secrets inside them (a JAAS entry's
    password, the password of ``user:password``), so copies elsewhere can be found."""
    found: set[str] = set()
    for settings in maps:
        for key, value in settings.items():
            if not value:
                continue
            if is_secret(key):
                found.add(value)
                if key.endswith("basic.auth.user.info") and ":" in value:
                    found.add(value.split(":", 1)[1])
            for match in _FRAGMENT.finditer(value):
                inner = _unquote(match.group("value"))
                if inner:
                    found.add(inner)
    return {value for value in found if value.strip()}


class Redactor:
    """Hides known secret values and ``...password=VALUE`` fragments in text and settings."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.exact = frozenset(secrets)
        # Longest first, so a secret containing another is hidden whole.
        self.embedded = sorted((s for s in self.exact if len(s) >= _MIN_EMBEDDED), key=len, reverse=True)

    @classmethod
    def of(cls, maps: Iterable[Mapping[str, str]]) -> Redactor:
        return cls(secret_values(maps))

    def text(self, text: str) -> str:
        """``text`` with every known secret and every secret-named fragment hidden."""
        if text in self.exact:
            return HIDDEN
        for secret in self.embedded:
            if secret in text:
                text = text.replace(secret, HIDDEN)
        return _FRAGMENT.sub(lambda m: m.group("name") + HIDDEN if _unquote(m.group("value")) != HIDDEN
                             else m.group(0), text)

    def value(self, value: Any) -> Any:
        """``value`` with every string in it (at any depth of dicts, lists and tuples) passed through
        ``text``: a flow's error or reason may quote a setting, a JAAS entry or a client's message."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        return value

    def settings(self, settings: Mapping[str, str]) -> dict[str, str]:
        """``settings`` with secret keys' values hidden and secrets inside other values hidden too."""
        return {k: HIDDEN if is_secret(k) else self.text(v) for k, v in settings.items()}


_current = Redactor()


def install(redactor: Redactor) -> Redactor:
    """Make ``redactor`` the process-wide one (the CLI does this once the config is loaded)."""
    global _current
    _current = redactor
    return redactor


def current() -> Redactor:
    """The process-wide redactor: knows the loaded config's secrets (none before it is loaded)."""
    return _current


def redact(settings: Mapping[str, str]) -> dict[str, str]:
    """``settings`` as safe to show: the process-wide redactor plus the secrets of ``settings`` itself."""
    own = secret_values([settings])
    redactor = _current if own <= _current.exact else Redactor(_current.exact | own)
    return redactor.settings(settings)
