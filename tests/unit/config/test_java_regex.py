"""MM2's regexes read as java.util.regex reads them: the corpus whose verdicts JUnit keeps true to Java,
and the joined LIST semantics of MirrorUtils.compilePatternList."""
from __future__ import annotations

from pathlib import Path

import pytest

from mirrorspark.config.java_regex import JavaRegexError, compile_java, translate
from mirrorspark.config.values import compile_patterns
from mirrorspark.errors import ConfigError

CORPUS = Path(__file__).parents[2] / "data" / "java_regex" / "corpus.tsv"


def decode(text: str) -> str:
    """The corpus inputs' escapes, as JavaRegexCorpusTest decodes them (UTF-16 units, then joined)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            escape = text[i + 1]
            if escape == "u":
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append({"n": "\n", "r": "\r", "t": "\t"}.get(escape, escape))
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16")


def corpus() -> list[tuple[str, str, str]]:
    rows = [tuple(line.split("\t")) for line in CORPUS.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]
    assert len(rows) > 300 and all(len(row) == 3 for row in rows)
    return rows  # type: ignore[return-value]


def verdict(pattern: str, text: str) -> str:
    try:
        return "match" if compile_java(pattern).fullmatch(decode(text)) else "nomatch"
    except JavaRegexError:
        return "invalid"


def test_every_corpus_line_gets_javas_verdict():
    wrong = [(p, t, want, got) for p, t, want in corpus() if (got := verdict(p, t)) != want]
    assert wrong == []


def test_the_corpus_walks_each_kind_of_java_only_construct():
    patterns = {p for p, _, _ in corpus()}
    for construct in (r"\p{Digit}", "(?<", r"\Q", "&&", "++", "(?>", r"\k<", "(?i)", "(?x)", r"\p{IsLatin}",
                      r"\p{InGreek}", r"\p{javaLowerCase}", r"\h", r"\R", "{,"):
        assert any(construct in p for p in patterns), construct


def test_a_refusal_says_what_and_where_as_java_does():
    with pytest.raises(JavaRegexError) as caught:
        translate("orders-[a-z")
    assert caught.value.description == "Unclosed character class" and caught.value.index == 10
    with pytest.raises(JavaRegexError, match=r"Illegal repetition near index 1"):
        translate("a{x}")


def test_a_list_is_joined_with_a_bar_as_mm2_joins_it():
    # A leading (?i) reaches the later entries, and a group may span two entries.
    assert compile_patterns(["(?i)orders", "payments"], "topics").fullmatch("PAYMENTS")
    assert compile_patterns(["(eu", "us).orders"], "topics").fullmatch("us.orders")
    assert compile_patterns([], "topics") is None


def test_an_invalid_list_is_refused_naming_the_key():
    with pytest.raises(ConfigError) as caught:
        compile_patterns(["orders-\\y"], "primary->backup.topics")
    assert caught.value.key == "primary->backup.topics"
    assert "as Java reads it: Illegal/unsupported escape sequence near index 8" in str(caught.value)


def test_ascii_classes_and_case_stay_ascii_as_in_java():
    assert not compile_java(r"\w+").fullmatch("été")
    assert compile_java(r"(?U)\w+").fullmatch("été")
    assert not compile_java("(?i)k").fullmatch("\u212a")  # the Kelvin sign folds to k in Unicode only
    assert compile_java("(?iu)k").fullmatch("\u212a")
