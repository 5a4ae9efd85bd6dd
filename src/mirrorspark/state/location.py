"""``mirrorspark.state.location``: one place for everything a flow needs to resume.

Per flow ``<location>/<source>/<target>/`` holds Spark's checkpoint (``checkpoint/``), the exact
offset ranges (``offset-ranges/``), the clusters the state belongs to (``clusters.json``) and the
re-copy marks (``write-marks.json``). A plain path is a folder of this machine; a URI with
a scheme (``file:///mnt/shared/...``, ``hdfs://...``, ``s3a://...``) goes through Hadoop's file
systems in the driver JVM, so a driver started on another machine with the same configuration
resumes from it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mirrorspark.errors import ConfigError
from mirrorspark.jvm_bridge import JvmError
from mirrorspark.state.files import HadoopFiles, LocalFiles, StateFiles

KEY = "mirrorspark.state.location"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class StateLocation:
    """The resolved location: ``uri`` with a scheme, or a local ``path``."""

    uri: str | None
    path: Path | None

    @classmethod
    def parse(cls, value: str | None, state_dir: Path) -> StateLocation:
        """``value`` from the config (None: ``<state_dir>/flows``)."""
        if value is None or not value.strip():
            return cls(None, state_dir / "flows")
        value = value.strip()
        if _SCHEME.match(value):
            return cls(value.rstrip("/"), None)
        if "://" in value or value.startswith(("file:", "hdfs:", "s3a:")):
            raise ConfigError(f"{KEY}={value!r} is neither a path nor a URI like file:///shared/mirrorspark, "
                              "hdfs://namenode/mirrorspark or s3a://bucket/mirrorspark", KEY)
        return cls(None, Path(value).expanduser().resolve())

    @property
    def needs_spark(self) -> bool:
        """A URI is read and written by the driver JVM, so Spark starts before the flows are prepared."""
        return self.uri is not None

    def describe(self) -> str:
        return self.uri if self.uri is not None else str(self.path)

    def open(self, spark=None) -> StateFiles:
        """The root folder, proven writable; errors name the key."""
        if self.uri is None:
            assert self.path is not None
            files = LocalFiles(self.path)
            try:
                self.path.mkdir(parents=True, exist_ok=True)
                files.write(".write-probe", "1")
                files.delete(".write-probe")
            except OSError as exc:
                raise ConfigError(f"{KEY}: cannot write state under {self.path}: {exc.strerror or exc}; "
                                  f"point {KEY} (or --state-dir) at a writable folder", KEY) from None
            return files
        return _qualified(self.uri, spark)


def _qualified(uri: str, spark) -> HadoopFiles:
    try:
        return HadoopFiles.of(uri, spark).qualified()
    except JvmError as exc:
        kind, text = exc.kind, exc.detail
        if kind == "UnsupportedFileSystemException" or "No FileSystem for scheme" in text:
            raise ConfigError(f"{KEY}={uri}: no Hadoop file system for this scheme ({text}); use file://, hdfs:// "
                              "or s3a:// (with its connector jars in spark.jars.packages)", KEY) from None
        raise ConfigError(f"{KEY}={uri}: cannot write state there: {kind}: {text}", KEY) from None
