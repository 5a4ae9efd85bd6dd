"""A flow another instance wrote since this state folder was saved: its copy position is set aside."""
from __future__ import annotations

import json

from mirrorspark.coordination.claims import Claim, instance_id
from mirrorspark.pipeline.flow import set_aside_if_stale
from mirrorspark.state.files import LocalFiles


def _folder_with_state(tmp_path) -> LocalFiles:
    folder = LocalFiles(tmp_path / "flows" / "a" / "b")
    checkpoint = folder.child("checkpoint")
    checkpoint.child("offsets").write("0", "v1\n{}\n{\"t\":{\"0\":5}}")
    checkpoint.child("commits").write("0", "v1\n{}")
    folder.write("write-marks.json", json.dumps({"source_next": {}}))
    folder.write("offset-ranges.json", "{}")
    folder.write("topic-ids.json", json.dumps({"source": {"t": "old-id"}, "source_ends": {"t": {"0": 900}}}))
    return folder


def _claim(instance: str) -> Claim:
    return Claim("a->b", instance, "host", 1, "/elsewhere", 0.0, "mirrorspark.a->b")


def test_state_is_kept_when_this_instance_claimed_the_flow_last_or_nobody_did(tmp_path):
    folder = _folder_with_state(tmp_path)
    assert not set_aside_if_stale(folder, "a->b", None, "me")
    assert not set_aside_if_stale(folder, "a->b", _claim("me"), "me")
    assert folder.child("checkpoint").child("offsets").read("0") is not None


def test_state_written_before_another_instance_took_over_is_set_aside_not_deleted(tmp_path, caplog):
    folder = _folder_with_state(tmp_path)
    assert set_aside_if_stale(folder, "a->b", _claim("other"), "me")
    assert folder.child("checkpoint").child("offsets").read("0") is None
    assert folder.read("write-marks.json") is None
    # The topic ids and ends this instance saw: compared with today's topics they would report the
    # re-creations the other writer saw and counted, again, as losses from offset 0.
    assert folder.read("topic-ids.json") is None
    assert folder.read("offset-ranges.json") == "{}"  # the exact mapping of what this instance wrote stays
    kept = sorted(p.name for p in folder.path.iterdir())
    assert any(name.startswith("checkpoint.stale-") for name in kept), kept
    assert "instance other (pid 1 on host" in caplog.text and "resumes after the last record the target holds" \
        in caplog.text
    assert not set_aside_if_stale(folder, "a->b", _claim("other"), "me")  # nothing left to set aside


def test_the_instance_id_belongs_to_the_state_location(tmp_path):
    root = LocalFiles(tmp_path)
    first = instance_id(root)
    assert instance_id(root) == first and len(first) == 32
    assert instance_id(LocalFiles(tmp_path / "other")) != first
