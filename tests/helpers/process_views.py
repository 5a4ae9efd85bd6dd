"""What other local users can see of our processes: every command line (``ps``, ``/proc/<pid>/cmdline``)
is readable by anyone; ``/proc/<pid>/environ`` only by the process's own user."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path


def command_lines() -> dict[int, bytes]:
    """Every process's command line, as any local user reads it."""
    found = {}
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            found[int(cmdline.parent.name)] = cmdline.read_bytes()
        except OSError:
            continue
    return found


def descendants(pid: int) -> list[int]:
    """``pid``'s children, grandchildren...: e.g. the spark-submit launcher and the JVM it became."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        children = [child for child, ppid in parents.items() if ppid == parent]
        found += children
        todo += children
    return found


def assert_off_command_lines(secrets: Sequence[str]) -> None:
    """No process's command line shows any of ``secrets``, neither in ``ps`` nor in ``/proc``."""
    listing = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, check=True).stdout
    for secret in secrets:
        assert secret.encode() not in listing, f"{secret} is on a command line (ps)"
        shown = [pid for pid, line in command_lines().items() if secret.encode() in line]
        assert not shown, f"{secret} is on the command line of {shown}"


def assert_environ_private(pids: Sequence[int], without: Sequence[str] = ()) -> None:
    """The environment of each of ``pids`` is this user's and readable by nobody else; none holds any
    of ``without``."""
    for pid in pids:
        environ = Path(f"/proc/{pid}/environ")
        info = environ.stat()
        assert info.st_uid == os.getuid() and info.st_mode & 0o077 == 0, (pid, oct(info.st_mode))
        held = [secret for secret in without if secret.encode() in environ.read_bytes()]
        assert not held, f"the environment of {pid} holds {held}"
