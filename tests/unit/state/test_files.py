"""A local state folder survives a power loss: each file is synced before it replaces the old one,
and the folder after the rename, so no zero-length file can take a good one's place."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mirrorspark.state.files import LocalFiles


@pytest.fixture
def durability_calls(monkeypatch) -> list[tuple[str, ...]]:
    """os.fsync and os.replace calls in order, each fsync naming the synced path and its kind."""
    calls: list[tuple[str, ...]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        kind = "folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        calls.append(("fsync", kind, os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(source, target) -> None:
        calls.append(("replace", str(source), str(target)))
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return calls


def test_write_syncs_the_file_before_the_rename_and_the_folder_after(tmp_path: Path, durability_calls):
    files = LocalFiles(tmp_path / "flow")
    files.write("write-marks.json", "{}")
    durability_calls.clear()
    files.write("write-marks.json", '{"batch": 1}')
    replaces = [i for i, call in enumerate(durability_calls) if call[0] == "replace"]
    assert len(replaces) == 1
    replace = durability_calls[replaces[0]]
    assert replace[2] == str(tmp_path / "flow" / "write-marks.json")
    before, after = durability_calls[:replaces[0]], durability_calls[replaces[0] + 1:]
    assert ("fsync", "file", replace[1]) in before
    assert ("fsync", "folder", str(tmp_path / "flow")) in after
    assert files.read("write-marks.json") == '{"batch": 1}'


def test_a_new_folder_is_synced_in_its_parent(tmp_path: Path, durability_calls):
    LocalFiles(tmp_path / "a" / "b").write("x.json", "1")
    synced = {call[2] for call in durability_calls if call[:2] == ("fsync", "folder")}
    assert {str(tmp_path), str(tmp_path / "a"), str(tmp_path / "a" / "b")} <= synced


def test_set_aside_and_delete_sync_the_folder(tmp_path: Path, durability_calls):
    files = LocalFiles(tmp_path)
    (tmp_path / "checkpoint").mkdir()
    (tmp_path / "old.json").write_text("1")
    durability_calls.clear()
    assert files.set_aside("checkpoint", "checkpoint.stale")
    assert durability_calls[-1] == ("fsync", "folder", str(tmp_path))
    durability_calls.clear()
    assert not files.set_aside("missing", "missing.stale")
    files.delete("old.json")
    assert [call for call in durability_calls if call[0] == "fsync"] == [("fsync", "folder", str(tmp_path))]
    assert not (tmp_path / "old.json").exists() and (tmp_path / "checkpoint.stale").is_dir()
