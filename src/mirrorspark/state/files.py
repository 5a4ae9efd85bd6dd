"""Small text files of a flow's state: one interface, a local folder or a Hadoop URI behind it.

Every file is written whole or not at all (temporary file + rename), so a ``kill -9`` at any
moment leaves the previous version or the new one, never half of one. On a local folder the file
is also synced before the rename and the folder after it: without that, a power loss can keep the
rename but not the data, and a zero-length file replaces a good one.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from mirrorspark.errors import OperationalError
from mirrorspark.jvm_bridge import JvmError, JvmStateFiles, SparkJvm

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")


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


def _hadoop_call(what: str, uri: str, call: Callable[[], T]) -> T:
    try:
        return call()
    except JvmError as exc:
        raise StateError(f"state location: cannot {what} {uri}: {exc.kind}: {exc.detail}") from None


class HadoopFiles:
    """A folder under a Hadoop-compatible URI (file://, hdfs://, s3a://...), read and written by the
    driver JVM (``io.mirrorspark.state.StateFiles`` through the bridge)."""

    def __init__(self, uri: str, *, jvm: JvmStateFiles) -> None:
        self._uri = uri.rstrip("/")
        self._files = jvm  # one Hadoop configuration, shared by every child folder

    @classmethod
    def of(cls, uri: str, spark: SparkSession) -> HadoopFiles:
        return cls(uri, jvm=SparkJvm(session=spark).state_files())

    def child(self, name: str) -> HadoopFiles:
        return HadoopFiles(f"{self._uri}/{name}", jvm=self._files)

    def qualified(self) -> HadoopFiles:
        """This folder under its fully qualified URI, created and proven writable (JvmError if not)."""
        return HadoopFiles(self._files.probe(self._uri), jvm=self._files)

    def uri(self) -> str:
        return self._uri

    def read(self, name: str) -> str | None:
        uri = f"{self._uri}/{name}"
        return _hadoop_call("read", uri, lambda: self._files.read(uri))

    def write(self, name: str, text: str) -> None:
        uri = f"{self._uri}/{name}"
        _hadoop_call("write", uri, lambda: self._files.write(uri, text))

    def list(self) -> list[str]:
        return _hadoop_call("list", self._uri, lambda: self._files.list(self._uri))

    def delete(self, name: str) -> None:
        uri = f"{self._uri}/{name}"
        _hadoop_call("delete", uri, lambda: self._files.delete(uri))

    def set_aside(self, name: str, new_name: str) -> bool:
        uri = f"{self._uri}/{name}"
        return _hadoop_call("move", uri, lambda: self._files.rename(uri, f"{self._uri}/{new_name}"))
