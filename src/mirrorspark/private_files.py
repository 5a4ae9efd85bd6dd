"""Files and folders that hold secrets, private to this user from the moment they exist.

Writing a file and then ``chmod``-ing it leaves a window in which another user may open it (and
keep the descriptor); so secret files are created with ``O_CREAT | O_EXCL`` and mode 0600, and
folders for secret material with mode 0700, before anything is written into them.
"""
from __future__ import annotations

import os
from pathlib import Path


def write_private(path: Path, data: str | bytes) -> None:
    """Create ``path`` with mode 0600 from the start, replacing an older file (never following a
    symlink planted in its place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data.encode() if isinstance(data, str) else data)


def private_dir(path: Path) -> Path:
    """``path`` as a folder only this user can enter (created 0700; an existing one is tightened,
    which is safe because its files were created private as well)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not path.is_dir() or path.is_symlink():
            raise
        os.chmod(path, 0o700)
    return path
