"""Small text files of a flow's state: one interface, a local folder or a Hadoop URI behind it.

Every file is written whole or not at all (temporary file + rename), so a ``kill -9`` at any
moment leaves the previous version or the new one, never half of one. On a local folder the file
is also synced before the rename and the folder after it: without that, a power loss can keep the
rename but not the data, and a zero-length file replaces a good one.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from mirrorspark.errors import OperationalError


class StateFiles(Protocol):
    """A folder of the state location."""

    def child(self, name: str) -> StateFiles: ...

    def uri(self) -> str: ...

    def read(self, name: str) -> str | None: ...

    def write(self, name: str, text: str) -> None: ...

    def list(self) -> list[str]: ...

    def delete(self, name: str) -> None: ...

    def set_aside(self, name: str, new_name: str) -> bool: ...


class LocalFiles:
    """A folder on this machine (plain path)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def child(self, name: str) -> LocalFiles:
        return LocalFiles(self.path / name)

    def uri(self) -> str:
        return str(self.path)

    def read(self, name: str) -> str | None:
        try:
            return (self.path / name).read_text()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def write(self, name: str, text: str) -> None:
        _make_folder(self.path)
        tmp = self.path / f".{name}.tmp"
        with tmp.open("w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path / name)
        _sync_folder(self.path)

    def list(self) -> list[str]:
        try:
            return sorted(p.name for p in self.path.iterdir() if not p.name.startswith(".") and p.is_file())
        except (FileNotFoundError, NotADirectoryError):
            return []

    def delete(self, name: str) -> None:
        try:
            (self.path / name).unlink()
        except FileNotFoundError:
            return
        _sync_folder(self.path)

    def set_aside(self, name: str, new_name: str) -> bool:
        """Move the file or folder ``name`` to ``new_name``; False when there is none."""
        try:
            os.replace(self.path / name, self.path / new_name)
        except FileNotFoundError:
            return False
        _sync_folder(self.path)
        return True


def _sync_folder(path: Path) -> None:
    """Make the folder's entries (a rename, a new or removed file) survive a power loss."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_folder(path: Path) -> None:
    """Create ``path`` and its missing parents, each one's entry synced in its parent."""
    if path.is_dir():
        return
    _make_folder(path.parent)
    try:
        path.mkdir()
    except FileExistsError:
        return  # made meanwhile by another thread; a file of that name fails the write that follows
    _sync_folder(path.parent)


class StateError(OperationalError):
    """The state location failed a read or a write; the message names the file and the cause."""


def java_cause(exc) -> tuple[str, str]:
    """(simple class name, message) of the Java exception behind a ``Py4JJavaError``."""
    cause = exc.java_exception
    return str(cause.getClass().getSimpleName()), str(cause.getMessage())


def _hadoop_call(what: str, uri: str, call, *args):
    from py4j.protocol import Py4JJavaError

    try:
        return call(*args)
    except Py4JJavaError as exc:
        kind, text = java_cause(exc)
        raise StateError(f"state location: cannot {what} {uri}: {kind}: {text}") from None


class HadoopFiles:
    """A folder under a Hadoop-compatible URI (file://, hdfs://, s3a://...), read and written by the
    driver JVM (``io.mirrorspark.state.StateFiles``)."""

    def __init__(self, uri: str, java, conf) -> None:
        """``java``: the ``StateFiles`` class over py4j; ``conf``: one Hadoop configuration, built once
        and shared by every child folder (building one copies the whole session configuration)."""
        self._uri = uri.rstrip("/")
        self._java = java
        self._conf = conf

    @classmethod
    def of(cls, uri: str, spark) -> HadoopFiles:
        return cls(uri, spark._jvm.io.mirrorspark.state.StateFiles, spark._jsparkSession.sessionState().newHadoopConf())

    def child(self, name: str) -> HadoopFiles:
        return HadoopFiles(f"{self._uri}/{name}", self._java, self._conf)

    def qualified(self) -> HadoopFiles:
        """This folder under its fully qualified URI, created and proven writable (Py4JJavaError if not)."""
        return HadoopFiles(str(self._java.probe(self._uri, self._conf)), self._java, self._conf)

    def uri(self) -> str:
        return self._uri

    def read(self, name: str) -> str | None:
        uri = f"{self._uri}/{name}"
        return _hadoop_call("read", uri, self._java.read, uri, self._conf)

    def write(self, name: str, text: str) -> None:
        uri = f"{self._uri}/{name}"
        _hadoop_call("write", uri, self._java.write, uri, text, self._conf)

    def list(self) -> list[str]:
        return [n for n in _hadoop_call("list", self._uri, self._java.list, self._uri, self._conf).split("\n") if n]

    def delete(self, name: str) -> None:
        uri = f"{self._uri}/{name}"
        _hadoop_call("delete", uri, self._java.delete, uri, self._conf)

    def set_aside(self, name: str, new_name: str) -> bool:
        uri = f"{self._uri}/{name}"
        return bool(_hadoop_call("move", uri, self._java.rename, uri, f"{self._uri}/{new_name}", self._conf))
