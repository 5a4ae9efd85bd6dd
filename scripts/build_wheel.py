#!/usr/bin/env python3
"""Build the mirrorspark wheel (``make dist``) with mirrorspark's JVM jars inside it.

The jars are build outputs of scripts/setup.sh (build/mirrorspark-jvm/mirrorspark.jar and
build/mirrorspark-clients/mirrorspark-clients.jar), so they are not committed: the sources are staged
in a temporary folder, the jars are copied in as package data (mirrorspark/jars/mirrorspark-jvm.jar,
mirrorspark/jars/mirrorspark-clients.jar) and pip builds the wheel from there. Staging also keeps
setuptools' own build/lib away from the checkout's build/ folder, where stale files could slip in.
Usage: build_wheel.py OUTPUT_DIR
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JARS = {ROOT / "build" / "mirrorspark-jvm" / "mirrorspark.jar": "mirrorspark-jvm.jar",
        ROOT / "build" / "mirrorspark-clients" / "mirrorspark-clients.jar": "mirrorspark-clients.jar"}
REQUIRED = (*(f"mirrorspark/jars/{name}" for name in JARS.values()), "mirrorspark/jars/kafka-jars.tsv")


def build(out: Path) -> Path:
    """Stage, build, check that the jars and the Kafka jar list are in the wheel; return its path."""
    for jar in JARS:
        if not jar.is_file():
            sys.exit(f"build_wheel: {jar} is missing; run `make setup` first")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mirrorspark-wheel-") as tmp:
        stage = Path(tmp)
        for name in ("pyproject.toml", "README.md", "LICENSE", "NOTICE"):
            shutil.copy2(ROOT / name, stage / name)
        shutil.copytree(ROOT / "src", stage / "src",
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.jar"))
        for jar, name in JARS.items():
            shutil.copy2(jar, stage / "src" / "mirrorspark" / "jars" / name)
        built = Path(tmp) / "wheel"
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check",
                        "-w", str(built), str(stage)], check=True)
        wheel = next(built.glob("mirrorspark-*.whl"))
        names = set(zipfile.ZipFile(wheel).namelist())
        version = wheel.name.split("-")[1]
        licenses = [f"mirrorspark-{version}.dist-info/licenses/{name}" for name in ("LICENSE", "NOTICE")]
        missing = [n for n in (*REQUIRED, *licenses) if n not in names]
        if missing:
            sys.exit(f"build_wheel: {wheel.name} lacks {', '.join(missing)}")
        target = out / wheel.name
        shutil.copy2(wheel, target)
    return target


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: build_wheel.py OUTPUT_DIR")
    started = time.monotonic()
    wheel = build(Path(sys.argv[1]))
    print(f"build_wheel: {wheel} ({wheel.stat().st_size / 1e3:.0f} kB) in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
