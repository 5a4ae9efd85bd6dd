"""``promote``'s preflight judges a flow that is starting (or restarting: real-time mode restarts its
query for a topic added) once it runs, asking its instance again each second up to ``STARTING_WAIT``."""
from __future__ import annotations

from pathlib import Path

from mirrorspark.cli import promote_command


def _views(monkeypatch, states: list[str]) -> list[float]:
    clock, asked = [0.0], []

    def view(*_args):
        asked.append(clock[0])
        return {"name": "a->b", "state": states[min(len(asked), len(states)) - 1]}, ""

    monkeypatch.setattr(promote_command, "_view", view)
    monkeypatch.setattr(promote_command.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(promote_command.time, "sleep", lambda seconds: clock.__setitem__(0, clock[0] + seconds))
    return asked


def test_a_starting_flow_is_asked_again_until_it_runs(monkeypatch):
    asked = _views(monkeypatch, ["starting", "starting", "running"])
    view, _ = promote_command._running_view("a->b", Path("s"), None, None, None)
    assert view is not None and view["state"] == "running" and asked == [0.0, 1.0, 2.0]


def test_a_flow_still_starting_after_the_wait_is_judged_as_it_is(monkeypatch):
    asked = _views(monkeypatch, ["starting"])
    view, _ = promote_command._running_view("a->b", Path("s"), None, None, None)
    assert view is not None and view["state"] == "starting" and asked[-1] == promote_command.STARTING_WAIT


def test_a_running_or_paused_flow_is_asked_once(monkeypatch):
    for state in ("running", "paused"):
        asked = _views(monkeypatch, [state])
        assert promote_command._running_view("a->b", Path("s"), None, None, None)[0]["state"] == state
        assert asked == [0.0]
