"""The Kafka jars for ``mirrorspark local`` in an installed wheel: fetched on first use, verified, cached.

A source checkout gets them from Maven (scripts/setup.sh, build/kafka-libs). A wheel has no Maven and
must not carry 57 MB of broker jars for a command most users never run, so it ships only the list
(``jars/kafka-jars.tsv``, made by scripts/kafka_jar_list.py from the same pom, with sizes and checksums)
and downloads the files from Maven Central over HTTPS into a per-user cache, never into site-packages.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from mirrorspark.errors import OperationalError

LIST_FILE = Path(__file__).with_name("jars") / "kafka-jars.tsv"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
REPOSITORY_ENV = "MIRRORSPARK_MAVEN_REPOSITORY"
CACHE_ENV = "MIRRORSPARK_CACHE_DIR"
PARALLEL_DOWNLOADS = 4
TIMEOUT_S = 60.0


class KafkaJarsUnavailable(OperationalError):
    """The Kafka jars could not be fetched or verified; the message names the URL and the way out."""


@dataclass(frozen=True)
class Artifact:
    """One jar of the list: its Maven coordinates, size and checksums."""

    group: str
    artifact: str
    version: str
    size: int
    sha1: str
    sha256: str

    @property
    def file_name(self) -> str:
        """The name Maven's copy-dependencies gives it, so both layouts hold the same files."""
        return f"{self.artifact}-{self.version}.jar"

    def url(self, repository: str) -> str:
        group_path = self.group.replace(".", "/")
        return f"{repository.rstrip('/')}/{group_path}/{self.artifact}/{self.version}/{self.file_name}"


@dataclass(frozen=True)
class JarList:
    """The shipped list: the Kafka version it is for and its artifacts."""

    kafka_version: str
    artifacts: tuple[Artifact, ...]

    @property
    def total_bytes(self) -> int:
        return sum(a.size for a in self.artifacts)


def load_list(path: Path = LIST_FILE) -> JarList:
    """Parse the TSV written by scripts/kafka_jar_list.py."""
    version = ""
    artifacts = []
    for line in path.read_text().splitlines():
        if line.startswith("# kafka.version="):
            version = line.split("=", 1)[1].strip()
        if not line.strip() or line.startswith("#"):
            continue
        group, artifact, art_version, size, sha1, sha256 = line.split("\t")
        if not all(_SAFE.fullmatch(field) for field in (group, artifact, art_version, sha1, sha256)):
            raise KafkaJarsUnavailable(f"{path}: {line!r} is not a plain Maven coordinate with checksums")
        artifacts.append(Artifact(group, artifact, art_version, int(size), sha1, sha256))
    if not version or not artifacts:
        raise KafkaJarsUnavailable(f"{path} is not a Kafka jar list (no kafka.version or no jars)")
    return JarList(version, tuple(artifacts))


_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # no "/" or "..": names stay inside the cache folder


def cache_root() -> Path:
    """Per-user cache: ``MIRRORSPARK_CACHE_DIR``, else ``$XDG_CACHE_HOME/mirrorspark``, else ~/.cache/mirrorspark."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "mirrorspark"


def complete(folder: Path, jars: JarList) -> bool:
    """Every listed jar present with its listed size (checksums were verified when it was written)."""
    try:
        return all((folder / a.file_name).stat().st_size == a.size for a in jars.artifacts)
    except OSError:
        return False


def ensure(root: Path | None = None, jars: JarList | None = None) -> Path:
    """The folder holding the Kafka jars, downloading what is missing the first time (one process at a
    time: others wait on a lock and then find the folder complete)."""
    jars = jars or load_list()
    root = root or cache_root()
    target = root / f"kafka-{jars.kafka_version}"
    if complete(target, jars):
        return target
    try:
        root.mkdir(parents=True, exist_ok=True)
        with (root / f"kafka-{jars.kafka_version}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not complete(target, jars):
                _download_into(target, jars)
    except OSError as exc:
        raise KafkaJarsUnavailable(f"cannot write the Kafka jar cache {root}: {exc.strerror or exc} "
                                   f"(set {CACHE_ENV} to a writable folder)") from None
    return target


def _download_into(target: Path, jars: JarList) -> None:
    """Fetch the missing jars into ``<target>.partial`` (kept across failures, so a retry resumes), then
    rename it into place: the target folder appears only when complete."""
    repository = os.environ.get(REPOSITORY_ENV) or MAVEN_CENTRAL
    partial = target.with_name(target.name + ".partial")
    if target.is_dir():  # incomplete (a jar removed by hand): re-use what is there
        for jar in target.glob("*.jar"):
            partial.mkdir(exist_ok=True)
            shutil.move(str(jar), partial / jar.name)
        shutil.rmtree(target)
    partial.mkdir(exist_ok=True)
    listed = {a.file_name for a in jars.artifacts}
    for stray in partial.glob("*.jar"):  # only listed, verified jars go on the brokers' classpath
        if stray.name not in listed:
            stray.unlink()
    missing = [a for a in jars.artifacts if not _verified(partial / a.file_name, a)]
    progress = _Progress(sum(a.size for a in missing), len(missing), jars, repository, target)
    if missing:
        progress.start()
        with ThreadPoolExecutor(PARALLEL_DOWNLOADS) as pool:
            for _ in pool.map(lambda a: _fetch(a, repository, partial, progress), missing):
                pass
        progress.done()
    partial.rename(target)


def _verified(path: Path, artifact: Artifact) -> bool:
    return path.is_file() and path.stat().st_size == artifact.size and _sha256(path) == artifact.sha256


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fetch(artifact: Artifact, repository: str, folder: Path, progress: _Progress) -> None:
    """Download one jar to a .part file, check size, SHA-1 and SHA-256, then rename it into place."""
    url = artifact.url(repository)
    part = folder / (artifact.file_name + ".part")
    sha1, sha256, size = hashlib.sha1(), hashlib.sha256(), 0
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response, part.open("wb") as out:
            for chunk in iter(lambda: response.read(1 << 16), b""):
                out.write(chunk)
                sha1.update(chunk)
                sha256.update(chunk)
                size += len(chunk)
                progress.add(len(chunk))
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        part.unlink(missing_ok=True)
        reason = getattr(exc, "reason", None) or exc
        raise KafkaJarsUnavailable(
            f"could not download {url}: {reason}. The Kafka jars for `mirrorspark local` come from Maven Central, "
            f"which must be reachable (or set {REPOSITORY_ENV} to a mirror); alternatively place the jars listed in "
            f"{LIST_FILE} into {folder.with_name(folder.name.removesuffix('.partial'))}") from None
    if size != artifact.size or sha1.hexdigest() != artifact.sha1 or sha256.hexdigest() != artifact.sha256:
        part.unlink(missing_ok=True)
        raise KafkaJarsUnavailable(f"{url} does not match its listed size and checksums ({artifact.size} bytes, "
                                   f"sha256 {artifact.sha256}); not using it")
    part.rename(folder / artifact.file_name)


class _Progress:
    """One progress line on stderr: rewritten in place on a terminal, a start and an end line otherwise."""

    def __init__(self, total: int, count: int, jars: JarList, repository: str, target: Path) -> None:
        self.total, self.count, self.jars, self.repository, self.target = total, count, jars, repository, target
        self.received = 0
        self.started = time.monotonic()
        self.shown = -1
        self.lock = threading.Lock()
        self.tty = sys.stderr.isatty()

    def start(self) -> None:
        where = "Maven Central" if self.repository == MAVEN_CENTRAL else self.repository
        self._line(f"mirrorspark: first use: fetching {self.count} Kafka {self.jars.kafka_version} jars "
                   f"({self.total / 1e6:.1f} MB) from {where} into {self.target}", end="\n")

    def add(self, n: int) -> None:
        with self.lock:
            self.received += n
            percent = self.received * 100 // max(self.total, 1)
            if self.tty and percent != self.shown:
                self.shown = percent
                self._line(f"\rmirrorspark: {percent:3d}% ({self.received / 1e6:.1f} of {self.total / 1e6:.1f} MB)")

    def done(self) -> None:
        elapsed = time.monotonic() - self.started
        prefix = "\r" if self.tty else ""
        self._line(f"{prefix}mirrorspark: fetched {self.received / 1e6:.1f} MB of Kafka jars "
                   f"in {elapsed:.1f} s, verified (SHA-1, SHA-256)", end="\n")

    @staticmethod
    def _line(text: str, end: str = "") -> None:
        sys.stderr.write(text + end)
        sys.stderr.flush()
