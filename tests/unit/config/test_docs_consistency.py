"""docs/configuration.md says what the tool does: every key it calls refused is refused by the checks
`validate` and `run` use, and every Connect key it calls ignored passes without an error or a warning."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from mirrorspark.config.validation import check_flow_or_top
from mirrorspark.errors import ConfigError

DOC = (Path(__file__).resolve().parents[3] / "docs" / "configuration.md").read_text()


def refused_keys() -> list[str]:
    table = DOC.split("Refused at top level", 1)[1].split("\n\n", 2)[1]
    return re.findall(r"^\| `([^`]+)` \|", table, flags=re.MULTILINE)


def ignored_prefixes() -> list[str]:
    sentence = DOC.split("Accepted and ignored, as they configure a Connect worker", 1)[1].split("\n", 1)[0]
    return re.findall(r"`([^`]+)`", sentence)


def test_the_lists_are_found():
    assert len(refused_keys()) >= 5 and "errors.tolerance" in refused_keys()
    assert "offset.storage" in ignored_prefixes() and "transforms" not in ignored_prefixes()


@pytest.mark.parametrize("key", refused_keys())
@pytest.mark.parametrize("top_level", [True, False])
def test_every_key_called_refused_is_refused_with_a_value_other_than_mm2s_default(key, top_level):
    where = key if top_level else f"A->B.{key}"
    with pytest.raises(ConfigError) as refused:
        check_flow_or_top(key, "a-value-mm2-does-not-default-to", where, [], top_level)
    assert refused.value.key == where


@pytest.mark.parametrize("prefix", ignored_prefixes())
def test_every_prefix_called_ignored_passes_without_a_word(prefix):
    warnings: list[str] = []
    check_flow_or_top(f"{prefix}.some.setting" if not prefix.endswith(".") else f"{prefix}some.setting", "x",
                      "A->B.x", warnings, top_level=False)
    assert warnings == []
