"""A query's kept first positions (``sources/0/mirrorspark-initial-offsets``): the grouped source starts
from them while no batch is planned, so a start with other explicit positions (a takeover moved by a
remote topic's deletion since an earlier start of the query) sets them first; partitions given no
offset keep what was resolved ("latest" does not move); once a batch is planned nothing changes."""
from __future__ import annotations

import json

from mirrorspark.integrity.spark_offsets import KEPT_START, SparkOffsetLog
from mirrorspark.state.files import LocalFiles

KEPT = {"t": {"0": 500, "1": 70}, "heartbeats": {"0": 12}}


def _kept(tmp_path) -> None:
    folder = tmp_path / "sources" / "0"
    folder.mkdir(parents=True)
    (folder / KEPT_START).write_text(json.dumps(KEPT))
    (folder / f".{KEPT_START}.crc").write_bytes(b"crc")


def _read(tmp_path) -> dict:
    return json.loads((tmp_path / "sources" / "0" / KEPT_START).read_text())


def test_the_positions_given_now_replace_the_kept_ones_before_a_first_batch(tmp_path):
    _kept(tmp_path)
    log = SparkOffsetLog(LocalFiles(tmp_path))
    assert log.align_first_positions(json.dumps({"t": {"0": 0, "1": -1}, "heartbeats": {"0": -2}}))
    assert _read(tmp_path) == {"t": {"0": 0, "1": 70}, "heartbeats": {"0": 12}}  # -1/-2 keep what was resolved
    assert not (tmp_path / "sources" / "0" / f".{KEPT_START}.crc").exists()
    assert not log.align_first_positions(json.dumps({"t": {"0": 0}}))  # the same again: nothing to change


def test_once_a_batch_is_planned_the_kept_positions_stay(tmp_path):
    _kept(tmp_path)
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / "0").write_text('v1\n{}\n{"t":{"0":510}}')
    assert not SparkOffsetLog(LocalFiles(tmp_path)).align_first_positions(json.dumps({"t": {"0": 0}}))
    assert _read(tmp_path) == KEPT


def test_a_checkpoint_without_kept_positions_is_left_as_it_is(tmp_path):
    assert not SparkOffsetLog(LocalFiles(tmp_path)).align_first_positions(json.dumps({"t": {"0": 0}}))
    assert not (tmp_path / "sources").exists()
