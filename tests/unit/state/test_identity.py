"""A flow's state folder: the clusters it belongs to, and its format. A folder of format 1 (the bare
map of cluster ids) is read and migrated in place; one of a newer format is refused naming the
version that wrote it; one of other clusters is refused as before."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from mirrorspark.errors import ConfigError
from mirrorspark.state import identity
from mirrorspark.state.files import LocalFiles


def admin(cluster: str):
    return SimpleNamespace(describe_cluster=lambda request_timeout: SimpleNamespace(
        result=lambda: SimpleNamespace(cluster_id=cluster)))


def check(folder: LocalFiles, source: str = "src-id", target: str = "tgt-id") -> None:
    identity.check_state_identity(folder, "a->b", "a", "b", admin(source), admin(target))  # type: ignore[arg-type]


def stored(tmp_path) -> dict:
    return json.loads((tmp_path / identity.FILE).read_text())


def test_first_use_writes_the_format_the_version_and_the_clusters(tmp_path):
    check(LocalFiles(tmp_path))
    assert stored(tmp_path) == {"format": identity.FORMAT, "written_by": identity.version(),
                                "clusters": {"a": "src-id", "b": "tgt-id"}}
    check(LocalFiles(tmp_path))  # the same clusters: accepted


def test_a_format_1_folder_is_migrated_in_place_and_still_checked(tmp_path):
    (tmp_path / identity.FILE).write_text(json.dumps({"a": "src-id", "b": "tgt-id", "c": "other-id"}))
    check(LocalFiles(tmp_path))
    assert stored(tmp_path)["format"] == identity.FORMAT
    assert stored(tmp_path)["clusters"] == {"a": "src-id", "b": "tgt-id", "c": "other-id"}
    (tmp_path / identity.FILE).write_text(json.dumps({"a": "someone-else", "b": "tgt-id"}))
    with pytest.raises(ConfigError, match="belongs to other clusters"):
        check(LocalFiles(tmp_path))


def test_a_newer_format_is_refused_naming_the_version_that_wrote_it(tmp_path):
    (tmp_path / identity.FILE).write_text(json.dumps({"format": identity.FORMAT + 1, "written_by": "9.0.0",
                                                      "clusters": {"a": "src-id", "b": "tgt-id"}}))
    with pytest.raises(ConfigError, match=r"written by mirrorspark 9\.0\.0") as refused:
        check(LocalFiles(tmp_path))
    assert refused.value.key == "mirrorspark.state.location"
    assert stored(tmp_path)["written_by"] == "9.0.0"  # nothing rewritten


def test_a_damaged_file_is_rewritten_not_a_traceback(tmp_path):
    (tmp_path / identity.FILE).write_text("{not json")
    check(LocalFiles(tmp_path))
    assert stored(tmp_path)["clusters"] == {"a": "src-id", "b": "tgt-id"}
