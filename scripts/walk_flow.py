"""Follow one flow's settings through the code while a flow is assembled, and count the detours.

The structure check of docs/adr/0008 (issue 15): start where the runner assembles a flow, record every call
that receives the flow's configuration (the ``FlowConfig``, its raw settings mapping or its typed settings),
or is a method of an object that keeps it,
and look at the sequence of files those calls live in. A file entered again after the walk left it is a
*return*; a call into a package the walk had already left (e.g. a component going back to ``config/`` to
re-read a string) is a *climb back up*. Fewer of both means each component got what it needs once.

Needs two running clusters (``mirrorspark local up A B``); it prepares the flow (topics, offsets, state)
but never starts Spark or copies a record::

    .venv/bin/python scripts/walk_flow.py A=127.0.0.1:9092 B=127.0.0.1:9093 [--show]
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

SRC = str(Path(__file__).resolve().parent.parent / "src" / "mirrorspark") + "/"
SHOW_FUNCTIONS = "--functions" in sys.argv
ENTRIES = ("_prepare_flow", "assemble_flow")  # before / after the runner split


def _followed(flow: Any) -> list[Any]:
    values = [flow, flow.settings]
    for name in ("options", "typed"):
        if hasattr(flow, name):
            values.append(getattr(flow, name))
    return values


def walk(bootstraps: dict[str, str]) -> list[str]:
    from mirrorspark.config import parse_config
    from mirrorspark.pipeline import runner

    state = Path(tempfile.mkdtemp(prefix="walk-flow-"))
    props = {"clusters": ", ".join(bootstraps), "A->B.enabled": "true", "mirrorspark.rest.enabled": "false",
             "replication.factor": "1", "heartbeats.topic.replication.factor": "1",
             "checkpoints.topic.replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
             "emit.heartbeats.enabled": "false"}
    props.update({f"{alias}.bootstrap.servers": address for alias, address in bootstraps.items()})
    config = parse_config(props)
    flow = config.enabled_flows[0]
    followed = [id(v) for v in _followed(flow)]
    files: list[str] = []
    depth = [0]

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            if event == "return" and frame.f_code.co_name in ENTRIES:
                depth[0] -= 1
            return
        if frame.f_code.co_name in ENTRIES:
            depth[0] += 1
        if not depth[0] or not frame.f_code.co_filename.startswith(SRC):
            return
        args = frame.f_code.co_varnames[:frame.f_code.co_argcount + frame.f_code.co_kwonlyargcount]
        values = [frame.f_locals.get(name) for name in args]
        held = getattr(values[0], "__dict__", {}).values() if values and args[0] == "self" else ()
        if any(id(v) in followed for v in [*values, *held]):
            files.append(frame.f_code.co_filename[len(SRC):] + (f":{frame.f_code.co_name}" if SHOW_FUNCTIONS else ""))

    replicator = runner.Replicator(config, state)
    sys.setprofile(profile)
    try:
        replicator.prepare()
    finally:
        sys.setprofile(None)
        replicator.stop()
    return files


def measure(files: list[str]) -> tuple[int, int, int, list[str]]:
    """(files entered, climbs back up, returns, the walk with consecutive repeats folded)."""
    path = [f for i, f in enumerate(files) if i == 0 or files[i - 1] != f]
    units = [f.split(":")[0] for f in path]  # a file is the unit, with or without --functions
    seen_files: set[str] = set()
    seen_packages: set[str] = set()
    climbs = returns = 0
    for i, file in enumerate(units):
        package = file.split("/")[0]
        if file in seen_files and units[i - 1] != file:
            returns += 1
        if i and package in seen_packages and units[i - 1].split("/")[0] != package:
            climbs += 1
        seen_files.add(file)
        seen_packages.add(package)
    return len(seen_files), climbs, returns, path


def main(argv: list[str]) -> None:
    bootstraps = dict(arg.split("=", 1) for arg in argv if "=" in arg)
    entered, climbs, returns, path = measure(walk(bootstraps))
    if "--show" in argv:
        print("\n".join(path))
    print(f"files entered {entered}, climbs back up {climbs}, returns to a file {returns} ({len(path)} steps)")


if __name__ == "__main__":
    main(sys.argv[1:])
