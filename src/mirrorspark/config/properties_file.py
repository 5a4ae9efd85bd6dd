"""Java ``.properties`` syntax, as ``java.util.Properties.load`` reads it (MM2 uses that loader).

Supports ``=``, ``:`` or whitespace separators, ``#``/``!`` comments, backslash line continuation
and the escapes ``\\t \\n \\r \\f \\uXXXX``. Later duplicates win, like Java.
"""
from __future__ import annotations

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f") if pending is not None else raw
        if pending is None and line.lstrip(" \t\f")[:1] in ("#", "!"):
            continue
        if pending is None and not line.strip(" \t\f"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        continued = trailing % 2 == 1
        if continued:
            line = line[:-1]
        pending = line if pending is None else pending + line
        if not continued:
            lines.append(pending)
            pending = None
    if pending is not None:
        lines.append(pending)
    return lines


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and i + 6 <= len(text):
            try:
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            except ValueError:
                pass
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    # Java's strings are UTF-16: ``\ud83d\ude00`` is one character there, so join such pairs here too.
    # An unpaired one stays (and is refused by the loader).
    return "".join(out).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _split(line: str) -> tuple[str, str]:
    line = line.lstrip(" \t\f")
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":") and (i == len(line) or line[i] in " \t\f"):
        rest = rest[1:].lstrip(" \t\f")
    elif i < len(line) and line[i] in "=:":
        rest = line[i + 1 :].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def parse_properties(text: str) -> dict[str, str]:
    """Key/value pairs of a properties text, in file order (later duplicates win)."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        props[key] = value
    return props


_CONTROL = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f", "\\": "\\\\"}


def escape_value(value: str) -> str:
    """``value`` written so that ``parse_properties`` (and Java's Properties.load) reads it back unchanged."""
    out = "".join(_CONTROL.get(ch, ch) for ch in value)
    return "\\" + out if out.startswith((" ", "\t", "\f")) else out


def escape_key(key: str) -> str:
    """``key`` written so that it is read back whole: separators and comment marks escaped too."""
    return "".join(_CONTROL.get(ch) or ("\\" + ch if ch in " =:#!" else ch) for ch in key)
