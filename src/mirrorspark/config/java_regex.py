"""Java regular expressions (``java.util.regex``, as MM2 compiles ``topics``, ``groups``, their
excludes and ``config.properties.exclude``) translated into the ``regex`` module's syntax.

MM2 joins a LIST of regexes with ``|`` and asks ``matcher(name).matches()``; a name is selected by
mirrorspark exactly when MM2 would select it. Java and Python differ where it matters for real
files: ``\\p{Digit}`` and the other POSIX and ``java*`` classes, ``(?<name>...)``, ``\\Q...\\E``,
class union and intersection (``[a-z&&[^aeiou]]``), ASCII-only ``\\w``/``\\d``/``\\s`` and case
folding, flags that last to the end of their group across ``|``, ``{`` that is not a quantifier
(an error in Java), backreferences to groups not there (never match in Java). Each construct is
parsed here and written out in a form that means the same; what has no equivalent is refused
with Java's own description and index. The corpus ``tests/data/java_regex/corpus.tsv`` is checked
against ``java.util.regex`` by a JUnit test and against this translation by a Python one
(docs/adr/0026-java-regex-semantics.md lists what differs).
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

import regex

from mirrorspark.errors import ConfigError

_LINE_ENDS = "\\n\\r\\u0085\\u2028\\u2029"
_MAX = 0x10FFFF


class JavaRegexError(ConfigError):
    """Java would refuse the pattern (PatternSyntaxException); ``index`` is where, as Java says it."""

    def __init__(self, description: str, pattern: str, index: int) -> None:
        super().__init__(f"{description} near index {index}: {pattern}")
        self.description = description
        self.index = index


@dataclass
class CharSet:
    """One character class: code point ranges plus ``\\p{...}`` tokens (usable inside ``[...]``), or,
    when union with a negation or an intersection is involved, one single-character expression."""

    ranges: list[tuple[int, int]] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    expression: str | None = None

    def body(self) -> str:
        return "".join(_range_text(lo, hi) for lo, hi in _merged(self.ranges)) + "".join(self.tokens)

    def text(self) -> str:
        """A regex matching one character of the set."""
        if self.expression is not None:
            return self.expression
        body = self.body()
        return f"[{body}]" if body else "(?!)"

    def negated(self) -> CharSet:
        if self.expression is None and not self.tokens:
            return CharSet(ranges=_complement(self.ranges))
        if self.expression is None and not self.ranges and len(self.tokens) == 1 and self.tokens[0][:3] in ("\\p{",
                                                                                                            "\\P{"):
            token = self.tokens[0]
            return CharSet(tokens=[("\\P" if token[1] == "p" else "\\p") + token[2:]])
        return CharSet(expression=f"(?:(?!{self.text()})(?s:.))")


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out


def _complement(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, start = [], 0
    for lo, hi in _merged(ranges):
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= _MAX:
        out.append((start, _MAX))
    return out


def _char(cp: int) -> str:
    ch = chr(cp)
    if ch.isalnum() and cp < 128:
        return ch
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


def _range_text(lo: int, hi: int) -> str:
    return _char(lo) if lo == hi else f"{_char(lo)}-{_char(hi)}"


def _union(sets: list[CharSet]) -> CharSet:
    if all(s.expression is None for s in sets):
        return CharSet(ranges=[r for s in sets for r in s.ranges], tokens=[t for s in sets for t in s.tokens])
    return CharSet(expression="(?:" + "|".join(s.text() for s in sets) + ")")


def _intersection(sets: list[CharSet]) -> CharSet:
    if len(sets) == 1:
        return sets[0]
    return CharSet(expression="(?:" + "".join(f"(?={s.text()})" for s in sets[:-1]) + sets[-1].text() + ")")


def _ascii(*spans: str) -> CharSet:
    return CharSet(ranges=[(ord(s[0]), ord(s[-1])) for s in spans])


# Java's predefined and POSIX classes are ASCII unless UNICODE_CHARACTER_CLASS (?U) is on.
_ASCII_CLASSES: dict[str, CharSet] = {
    "Lower": _ascii("az"), "Upper": _ascii("AZ"), "ASCII": CharSet(ranges=[(0, 0x7F)]),
    "Alpha": _ascii("az", "AZ"), "Digit": _ascii("09"), "Alnum": _ascii("az", "AZ", "09"),
    "Punct": _ascii("!/", ":@", "[`", "{~"), "Graph": _ascii("!~"), "Print": _ascii(" ~"),
    "Blank": CharSet(ranges=[(32, 32), (9, 9)]), "Cntrl": CharSet(ranges=[(0, 0x1F), (0x7F, 0x7F)]),
    "XDigit": _ascii("09", "af", "AF"), "Space": CharSet(ranges=[(32, 32), (9, 13)]),
}
_UNICODE_CLASSES: dict[str, list[str]] = {
    "Lower": ["\\p{Lowercase}"], "Upper": ["\\p{Uppercase}"], "Alpha": ["\\p{Alphabetic}"], "Digit": ["\\p{Nd}"],
    "Alnum": ["\\p{Alphabetic}", "\\p{Nd}"], "Punct": ["\\p{P}"], "Blank": ["\\p{Zs}", "\\t"],
    "Cntrl": ["\\p{Cc}"], "XDigit": ["\\p{Nd}", "\\p{Hex_Digit}"], "Space": ["\\p{White_Space}"],
}
_JAVA_CLASSES: dict[str, list[str]] = {  # java.lang.Character's predicates
    "javaLowerCase": ["\\p{Lowercase}"], "javaUpperCase": ["\\p{Uppercase}"], "javaTitleCase": ["\\p{Lt}"],
    "javaDigit": ["\\p{Nd}"], "javaLetter": ["\\p{L}"], "javaLetterOrDigit": ["\\p{L}", "\\p{Nd}"],
    "javaAlphabetic": ["\\p{Alphabetic}"], "javaIdeographic": ["\\p{Ideographic}"],
    "javaSpaceChar": ["\\p{Zs}", "\\p{Zl}", "\\p{Zp}"], "javaISOControl": ["\\x00-\\x1f", "\\x7f-\\x9f"],
    "javaMirrored": ["\\p{Bidi_Mirrored}"], "javaDefined": ["\\P{Cn}"],
}
_BINARY = {  # \p{IsX}: Unicode binary properties Java knows
    "alphabetic": "Alphabetic", "ideographic": "Ideographic", "letter": "L", "lowercase": "Lowercase",
    "uppercase": "Uppercase", "titlecase": "Lt", "punctuation": "P", "control": "Cc", "white_space": "White_Space",
    "whitespace": "White_Space", "digit": "Nd", "hex_digit": "Hex_Digit", "hexdigit": "Hex_Digit",
    "join_control": "Join_Control", "joincontrol": "Join_Control", "noncharacter_code_point":
    "Noncharacter_Code_Point", "noncharactercodepoint": "Noncharacter_Code_Point", "assigned": "Assigned",
    "emoji": "Emoji", "emoji_presentation": "Emoji_Presentation", "emoji_modifier": "Emoji_Modifier",
    "emoji_modifier_base": "Emoji_Modifier_Base", "emoji_component": "Emoji_Component",
    "extended_pictographic": "Extended_Pictographic",
}
_CATEGORIES = {"L", "Lu", "Ll", "Lt", "Lm", "Lo", "LC", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No", "P", "Pc",
               "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl", "Zp", "C", "Cc",
               "Cf", "Cs", "Co", "Cn"}
_ESCAPED_CONTROL = {"t": 9, "n": 10, "r": 13, "f": 12, "a": 7, "e": 27}
_FLAGS = set("idmsuxU")


class _Parser:
    """One pass over a Java pattern, writing the ``regex`` module's equivalent."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.flags: set[str] = set()
        self.groups = 0  # capturing groups opened so far (Java numbers back references by them)
        self.closed: set[int] = set()
        self.names: dict[str, int] = {}
        self.lookbehind = 0

    def fail(self, description: str, index: int | None = None) -> JavaRegexError:
        return JavaRegexError(description, self.p, self.i if index is None else index)

    def peek(self) -> str:
        self._skip_comments()
        return self.p[self.i] if self.i < len(self.p) else ""

    def _skip_comments(self) -> None:
        if "x" not in self.flags:
            return
        while self.i < len(self.p):
            ch = self.p[self.i]
            if ch in " \t\n\x0b\f\r":
                self.i += 1
            elif ch == "#":
                while self.i < len(self.p) and self.p[self.i] not in "\n\r\u0085\u2028\u2029":
                    self.i += 1
            else:
                return

    def take(self) -> str:
        ch = self.peek()
        self.i += 1
        return ch

    # -- structure ------------------------------------------------------------------------------
    def parse(self) -> str:
        out = self.alternation()
        if self.i < len(self.p):
            raise self.fail("Unmatched closing ')'", self.i - 1 if self.i else 0)
        return out

    def alternation(self) -> str:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        return "|".join(branches)

    def sequence(self) -> str:
        out: list[str] = []
        while True:
            ch = self.peek()
            if ch in ("", "|", ")"):
                return "".join(out)
            start = self.i
            atoms = self.atom()
            if atoms is None:
                continue  # a flag change: nothing to write
            quantifier = self.quantifier()
            if quantifier and not atoms:
                raise self.fail(f"Dangling meta character '{self.p[self.i - len(quantifier)]}'")
            if quantifier:
                unbounded = quantifier[0] in "*+" or quantifier.rstrip("?+").endswith(",}")
                if self.lookbehind and unbounded and self.p[start] == "(":  # Java bounds one character's repeat
                    raise self.fail("Look-behind group does not have an obvious maximum length")
                atoms[-1] += quantifier  # each atom is one unit: a class, a group or one escaped character
            out.extend(atoms)

    def quantifier(self) -> str:
        ch = self.peek()
        if ch in ("*", "+", "?"):
            self.i += 1
            q = ch
        elif ch == "{":
            start = self.i
            self.i += 1
            low = self._digits()
            if low == "":
                raise self.fail("Illegal repetition", start)
            q = "{" + low
            if self.i < len(self.p) and self.p[self.i] == ",":
                self.i += 1
                high = self._digits()
                q += "," + high
                if high and int(high) < int(low):
                    raise self.fail("Illegal repetition range", start)
            if self.i >= len(self.p) or self.p[self.i] != "}":
                raise self.fail("Unclosed counted closure", self.i)
            self.i += 1
            q += "}"
        else:
            return ""
        if self.i < len(self.p) and self.p[self.i] in "?+":
            q += self.p[self.i]
            self.i += 1
        nxt = self.peek()
        if nxt in ("*", "+", "?"):
            raise self.fail(f"Dangling meta character '{nxt}'")
        return q

    def _digits(self) -> str:
        start = self.i
        while self.i < len(self.p) and self.p[self.i].isdigit() and self.p[self.i].isascii():
            self.i += 1
        return self.p[start:self.i]

    def atom(self) -> list[str] | None:
        """The regex text of the next element (a list: ``\\Q..\\E`` is one per character, so that a
        quantifier after it takes the last one only, as in Java); None for a bare flag group."""
        start = self.i
        ch = self.take()
        if ch == "(":
            return self.group(start)
        if ch == "[":
            return [self.char_class(start).text()]
        if ch == "\\":
            return self.escape(start)
        if ch in ("*", "+", "?"):
            raise self.fail(f"Dangling meta character '{ch}'", start)
        if ch == "{":
            raise self.fail("Illegal repetition", start)
        if ch == ".":
            if "s" in self.flags:
                return ["(?s:.)"]
            return ["[^\\n]" if "d" in self.flags else f"[^{_LINE_ENDS}]"]
        if ch == "^":
            if "m" not in self.flags:
                return ["\\A"]
            if "d" in self.flags:
                return ["(?:\\A|(?<=\\n)(?!\\Z))"]
            return ["(?:\\A|(?<=[\\n\\u0085\\u2028\\u2029])(?!\\Z)|(?<=\\r)(?!\\n|\\Z))"]
        if ch == "$":
            if "d" in self.flags:
                return ["(?=\\n|\\Z)" if "m" in self.flags else "(?=\\n?\\Z)"]
            if "m" in self.flags:
                return [f"(?:(?=[{_LINE_ENDS}]|\\Z)(?!(?<=\\r)\\n))"]
            return [f"(?:(?=(?:\\r\\n|[{_LINE_ENDS}])?\\Z)(?!(?<=\\r)\\n\\Z))"]
        return [self.literal(ord(ch))]

    def literal(self, cp: int) -> str:
        return self.char_set(CharSet(ranges=[(cp, cp)])).text()

    def char_set(self, chars: CharSet) -> CharSet:
        """Case-insensitive matching as Java does it: ASCII only, unless UNICODE_CASE (u) is on too."""
        if "i" not in self.flags:
            return chars
        if "u" in self.flags:
            return CharSet(expression=f"(?i:{chars.text()})")
        extra = []
        for lo, hi in chars.ranges:
            for a, b, shift in ((ord("a"), ord("z"), -32), (ord("A"), ord("Z"), 32)):
                if lo <= b and hi >= a:
                    extra.append((max(lo, a) + shift, min(hi, b) + shift))
        return CharSet(ranges=chars.ranges + extra, tokens=chars.tokens, expression=chars.expression)

    def group(self, start: int) -> list[str] | None:
        saved = set(self.flags)
        lookbehind = False
        if self.i < len(self.p) and self.p[self.i] == "?":
            self.i += 1
            kind = self.p[self.i] if self.i < len(self.p) else ""
            if kind in (":", "=", "!", ">"):
                self.i += 1
                opening = "(?:" if kind == ":" else f"(?{kind}"
            elif kind == "<":
                self.i += 1
                nxt = self.p[self.i] if self.i < len(self.p) else ""
                if nxt in ("=", "!"):
                    self.i += 1
                    opening, lookbehind = f"(?<{nxt}", True
                else:
                    name = self._group_name()
                    if name in self.names:
                        raise self.fail(f"Named capturing group <{name}> is already defined")
                    self.groups += 1
                    self.names[name] = self.groups
                    opening = f"(?P<{name}>"
                    return self._close(opening, saved, self.groups, start)
            else:
                on, off, end = self._flags()
                if end == ")":
                    self.flags = (self.flags | on) - off  # to the end of the enclosing group
                    return None
                opening = "(?:"
                self.flags = (self.flags | on) - off
        else:
            self.groups += 1
            return self._close("(", saved, self.groups, start)
        if lookbehind:
            self.lookbehind += 1
        try:
            return self._close(opening, saved, None, start)
        finally:
            if lookbehind:
                self.lookbehind -= 1

    def _close(self, opening: str, saved: set[str], number: int | None, start: int) -> list[str]:
        body = self.alternation()
        if self.i >= len(self.p) or self.p[self.i] != ")":
            raise self.fail("Unclosed group", len(self.p))
        self.i += 1
        self.flags = saved
        if number is not None:
            self.closed.add(number)
        return [f"{opening}{body})"]

    def _group_name(self) -> str:
        start = self.i
        while self.i < len(self.p) and self.p[self.i].isascii() and self.p[self.i].isalnum():
            self.i += 1
        name = self.p[start:self.i]
        if not name or not name[0].isalpha():
            raise self.fail("capturing group name does not start with a Latin letter", start)
        if self.i >= len(self.p) or self.p[self.i] != ">":
            raise self.fail("named capturing group is missing trailing '>'")
        self.i += 1
        return name

    def _flags(self) -> tuple[set[str], set[str], str]:
        on: set[str] = set()
        off: set[str] = set()
        into = on
        while self.i < len(self.p):
            ch = self.p[self.i]
            self.i += 1
            if ch in _FLAGS:
                into.add(ch)
            elif ch == "-":
                into = off
            elif ch in (":", ")"):
                return on, off, ch
            else:
                raise self.fail("Unknown inline modifier", self.i - 1)
        raise self.fail("Unknown inline modifier", self.i)

    # -- escapes --------------------------------------------------------------------------------
    def escape(self, start: int) -> list[str]:
        if self.i >= len(self.p):
            raise self.fail("Unexpected internal error", self.i)
        ch = self.p[self.i]
        self.i += 1
        if ch == "Q":
            end = self.p.find("\\E", self.i)
            text = self.p[self.i:] if end < 0 else self.p[self.i:end]
            self.i = len(self.p) if end < 0 else end + 2
            return [self.literal(ord(c)) for c in text]
        if ch.isdigit() and ch != "0":
            return [self._backreference(int(ch))]
        if ch == "k":
            if self.i >= len(self.p) or self.p[self.i] != "<":
                raise self.fail("\\k is not followed by '<' for named capturing group")
            self.i += 1
            name = self._group_name()
            if name not in self.names:
                raise self.fail(f"named capturing group <{name}> does not exist")
            number = self.names[name]
            return [f"(?i:(?P={name}))" if "i" in self.flags else f"(?P={name})"] if number in self.closed \
                else ["(?!)"]
        anchors = {"b": "\\b", "B": "\\B", "A": "\\A", "z": "\\Z", "G": "\\G", "X": "\\X",
                   "Z": f"(?:(?=(?:\\r\\n|[{_LINE_ENDS}])?\\Z)(?!(?<=\\r)\\n\\Z))",
                   "R": "(?>\\r\\n|[\\n\\x0b\\x0c\\r\\u0085\\u2028\\u2029])"}
        if ch in anchors:
            if ch == "b" and self.i < len(self.p) and self.p[self.i] == "{":
                raise self.fail("\\b{g} is not supported by mirrorspark", start)
            return [anchors[ch]]
        found = self._class_escape(ch)
        if found is not None:
            return [found.text()]
        return [self.literal(self._char_escape(ch, start))]

    def _backreference(self, number: int) -> str:
        while self.i < len(self.p) and self.p[self.i].isascii() and self.p[self.i].isdigit():
            bigger = number * 10 + int(self.p[self.i])
            if bigger > self.groups:
                break
            number = bigger
            self.i += 1
        if number not in self.closed:
            return "(?!)"  # Java: a group not (yet) matched never matches
        return f"(?i:\\{number})" if "i" in self.flags else f"(?:\\{number})"

    def _class_escape(self, ch: str) -> CharSet | None:
        unicode = "U" in self.flags
        simple = {
            "d": CharSet(tokens=["\\p{Nd}"]) if unicode else _ascii("09"),
            "w": CharSet(tokens=["\\p{Alphabetic}", "\\p{Mn}", "\\p{Me}", "\\p{Mc}", "\\p{Nd}", "\\p{Pc}",
                                 "\\p{Join_Control}"]) if unicode else _ascii("az", "AZ", "09", "__"),
            "s": CharSet(tokens=["\\p{White_Space}"]) if unicode else CharSet(ranges=[(32, 32), (9, 13)]),
            "h": CharSet(ranges=[(32, 32), (9, 9), (0xA0, 0xA0), (0x1680, 0x1680), (0x180E, 0x180E),
                                 (0x2000, 0x200A), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000)]),
            "v": CharSet(ranges=[(10, 13), (0x85, 0x85), (0x2028, 0x2029)]),
        }
        if ch in simple:
            return simple[ch]
        if ch.lower() in simple:
            return simple[ch.lower()].negated()
        if ch in ("p", "P"):
            found = self._property()
            return found.negated() if ch == "P" else found
        return None

    def _property(self) -> CharSet:
        start = self.i
        if self.i < len(self.p) and self.p[self.i] == "{":
            end = self.p.find("}", self.i)
            if end < 0:
                raise self.fail("Unclosed character family", len(self.p))
            name = self.p[self.i + 1:end]
            self.i = end + 1
        elif self.i < len(self.p):
            name = self.p[self.i]
            self.i += 1
        else:
            raise self.fail("Illegal/unsupported escape sequence", self.i)
        found = _property_set(name, "U" in self.flags)
        if found is None:
            raise self.fail(f"Unknown character property name {{{name}}}", start)
        return self.char_set(found) if name in ("Lower", "Upper") and "i" in self.flags else found

    def _char_escape(self, ch: str, start: int) -> int:
        if ch in _ESCAPED_CONTROL:
            return _ESCAPED_CONTROL[ch]
        if ch == "0":
            digits = ""
            while self.i < len(self.p) and len(digits) < 3 and self.p[self.i] in "01234567":
                if len(digits) == 2 and digits[0] > "3":
                    break
                digits += self.p[self.i]
                self.i += 1
            if not digits:
                raise self.fail("Illegal octal escape sequence", self.i)
            return int(digits, 8)
        if ch == "x":
            if self.i < len(self.p) and self.p[self.i] == "{":
                end = self.p.find("}", self.i)
                digits = self.p[self.i + 1:end] if end > 0 else ""
                if not digits or any(c not in "0123456789abcdefABCDEF" for c in digits) or int(digits, 16) > _MAX:
                    raise self.fail("Illegal hexadecimal escape sequence", self.i)
                self.i = end + 1
                return int(digits, 16)
            return self._hex(2)
        if ch == "u":
            cp = self._hex(4)
            if 0xD800 <= cp < 0xDC00 and self.p.startswith("\\u", self.i):  # a surrogate pair, as Java reads it
                saved = self.i
                self.i += 2
                low = self._hex(4)
                if 0xDC00 <= low < 0xE000:
                    return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
                self.i = saved
            return cp
        if ch == "c":
            if self.i >= len(self.p):
                raise self.fail("Illegal control escape sequence", self.i)
            self.i += 1
            return ord(self.p[self.i - 1]) ^ 64
        if ch == "N":
            if self.i >= len(self.p) or self.p[self.i] != "{" or "}" not in self.p[self.i:]:
                raise self.fail("Unknown character name", self.i)
            end = self.p.index("}", self.i)
            name = self.p[self.i + 1:end]
            self.i = end + 1
            try:
                return ord(unicodedata.lookup(name))
            except KeyError:
                raise self.fail(f"Unknown character name [{name}]", start) from None
        if ch.isascii() and ch.isalnum():
            raise self.fail("Illegal/unsupported escape sequence", self.i - 1)
        return ord(ch)

    def _hex(self, count: int) -> int:
        digits = self.p[self.i:self.i + count]
        if len(digits) != count or any(c not in "0123456789abcdefABCDEF" for c in digits):
            raise self.fail("Illegal hexadecimal escape sequence" if count == 2 else "Illegal Unicode escape sequence",
                            self.i)
        self.i += count
        return int(digits, 16)

    # -- character classes ----------------------------------------------------------------------
    def char_class(self, start: int) -> CharSet:
        """``[...]`` after its ``[``: unions (nested classes) intersected by ``&&``; ``^`` negates the whole."""
        negate = self.i < len(self.p) and self.p[self.i] == "^"
        if negate:
            self.i += 1
        operands: list[CharSet] = []
        union: list[CharSet] = []
        first = True
        while True:
            ch = self.peek()
            if ch == "":
                raise self.fail("Unclosed character class", len(self.p) - 1)
            if ch == "]" and not first:
                self.i += 1
                break
            first = False
            if ch == "[":
                self.i += 1
                union.append(self.char_class(self.i - 1))
                continue
            if ch == "&" and self.p.startswith("&&", self.i):
                self.i += 2
                if union:
                    operands.append(_union(union))
                union = []
                continue
            union.append(self._class_item())
        if union:
            operands.append(_union(union))
        found = _intersection(operands) if operands else CharSet()
        return found.negated() if negate else found

    def _class_item(self) -> CharSet:
        lo = self._class_char()
        if isinstance(lo, CharSet):
            return lo
        if self.peek() == "-" and self.i + 1 < len(self.p) and self.p[self.i + 1] not in "][":
            if self.p.startswith("&&", self.i + 1):
                raise self.fail("Illegal character range", self.i)
            self.i += 1
            hi = self._class_char()
            if isinstance(hi, CharSet) or hi < lo:
                raise self.fail("Illegal character range", self.i - 1)
            return self.char_set(CharSet(ranges=[(lo, hi)]))
        return self.char_set(CharSet(ranges=[(lo, lo)]))

    def _class_char(self) -> int | CharSet:
        start = self.i
        ch = self.take()
        if ch != "\\":
            return ord(ch)
        if self.i >= len(self.p):
            raise self.fail("Unclosed character class", self.i)
        esc = self.p[self.i]
        self.i += 1
        if esc == "Q":
            end = self.p.find("\\E", self.i)
            text = self.p[self.i:] if end < 0 else self.p[self.i:end]
            self.i = len(self.p) if end < 0 else end + 2
            return self.char_set(CharSet(ranges=[(ord(c), ord(c)) for c in text]))
        found = self._class_escape(esc)
        if found is not None:
            return found
        if (esc.isdigit() and esc != "0") or esc in "bBAzZGXRk":
            raise self.fail("Illegal/unsupported escape sequence", self.i - 1)
        return self._char_escape(esc, start)


def _property_set(name: str, unicode: bool) -> CharSet | None:
    """Java's ``\\p{name}`` as a set, or None when Java does not know the name."""
    if name in _ASCII_CLASSES:
        if unicode and name in _UNICODE_CLASSES:
            return CharSet(tokens=list(_UNICODE_CLASSES[name]))
        if unicode and name not in ("ASCII",):
            return None
        return _ASCII_CLASSES[name]
    if name in _JAVA_CLASSES:
        return CharSet(tokens=list(_JAVA_CLASSES[name]))
    key, _, value = name.partition("=")
    if value:
        kind = key.lower()
        if kind in ("sc", "script"):
            return _checked(f"\\p{{Script={value}}}")
        if kind in ("blk", "block"):
            return _checked(f"\\p{{Block={value}}}")
        if kind in ("gc", "general_category") and value in _CATEGORIES:
            return CharSet(tokens=[f"\\p{{{value}}}"])
        return None
    if name.startswith("In"):
        return _checked(f"\\p{{Block={name[2:]}}}")
    if name.startswith("Is"):
        rest = name[2:]
        if rest in _CATEGORIES:
            return CharSet(tokens=[f"\\p{{{rest}}}"])
        if rest.lower() in _BINARY:
            return CharSet(tokens=[f"\\p{{{_BINARY[rest.lower()]}}}"])
        return _checked(f"\\p{{Script={rest}}}")
    if name in _CATEGORIES:
        return CharSet(tokens=[f"\\p{{{name}}}"])
    return None


def _checked(token: str) -> CharSet | None:
    try:
        regex.compile(token)
    except regex.error:
        return None
    return CharSet(tokens=[token])


def translate(pattern: str) -> str:
    """The ``regex`` module's text for Java ``pattern``; raises JavaRegexError where Java would refuse it."""
    return _Parser(pattern).parse()


@lru_cache(maxsize=512)
def compile_java(pattern: str) -> regex.Pattern[str]:
    """Java ``pattern`` compiled for ``fullmatch`` (Java's ``matches()``); cached: filters are built per flow."""
    text = translate(pattern)
    try:
        return regex.compile(text, regex.VERSION0)
    except regex.error as exc:  # a construct the translation let through that regex refuses
        raise JavaRegexError(f"Unsupported construct ({exc})", pattern, 0) from None
