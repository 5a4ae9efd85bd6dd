"""Java beside the tests: Kafka's jars on a classpath (real MM2's classes), a quiet log4j2 setup, and MM2
Java plug-ins compiled from tests/data/java-plugins against those jars (as a user builds a policy or filter
for MM2) into one jar."""
from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

from mirrorspark import jdk, paths

SOURCES = Path(__file__).resolve().parents[1] / "data" / "java-plugins"
# Java programs that the interop tests run against real MM2 classes.
INTEROP = Path(__file__).resolve().parents[1] / "integration" / "interop"
QUIET_LOG4J = "status = error\nrootLogger.level = ERROR\nrootLogger.appenderRef.out.ref = OUT\n" \
              "appender.out.type = Console\nappender.out.name = OUT\nappender.out.layout.type = PatternLayout\n" \
              "appender.out.layout.pattern = %d %p %c: %m%n\n"


def build_plugin_jar(folder: Path) -> Path:
    """``folder/plugins/example-plugins.jar`` holding the fixture classes; ``folder/plugins`` is a plugin.path entry."""
    javac = jdk.find_tool("javac")
    assert javac is not None, "javac (the JDK) is needed to build the test plug-ins"
    classes = folder / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    sources = sorted(str(p) for p in SOURCES.rglob("*.java"))
    subprocess.run([javac, "-Xlint:all", "-Werror", "-d", str(classes), "-cp", f"{paths.kafka_libs()}/*", *sources],
                   check=True, capture_output=True, text=True)
    jar = folder / "plugins" / "example-plugins.jar"
    jar.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(jar, "w") as out:
        for path in sorted(classes.rglob("*.class")):
            out.write(path, str(path.relative_to(classes)))
    return jar


def classpath(*extra: Path) -> str:
    return ":".join([*(str(p) for p in extra), f"{paths.kafka_libs()}/*"])
