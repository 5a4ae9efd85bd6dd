"""What executors in other JVMs, possibly on other machines, need from the driver.

Jars travel with ``spark.jars`` (spark_session) and GC options with
``spark.executor.extraJavaOptions``. Files that client settings point at on the driver's disk
(truststores, keystores: every ``*.location`` setting) are shipped with ``spark.files`` and the
setting becomes ``${mirrorspark-file:DIR:NAME}``, which ``ShippedFileProvider`` resolves in each
Kafka client: the original path on the driver, the shipped copy on every executor.
Before any query starts, a small JVM job checks every executor can load the connector, the Kafka
client and mirrorspark's jar, and sees the shipped files.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mirrorspark.config.model import FlowConfig
from mirrorspark.errors import ConfigError, NeededAtRunTime, OperationalError
from mirrorspark.jvm_bridge import JvmError, SparkJvm

PROVIDER = "mirrorspark-file"
PROVIDER_CLASS = "io.mirrorspark.kafka.ShippedFileProvider"


class ExecutorSetupError(OperationalError):
    """An executor lacks a jar or a file; the message names it."""


def is_local(master: str) -> bool:
    return master.strip().startswith("local")


def _file_settings(settings: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in settings.items() if k.endswith(".location") and v and "${" not in v}


def files_to_ship(flows: Iterable[FlowConfig]) -> list[Path]:
    """Every file a flow's source consumer or target producer points at; names must be unique
    because shipped files land in one folder per executor."""
    by_name: dict[str, tuple[Path, str]] = {}
    for flow in flows:
        for role, settings in ((flow.source.alias, flow.source_consumer()),
                               (flow.target.alias, flow.target_producer())):
            for key, value in _file_settings(settings).items():
                path = Path(value)
                if not path.is_file():
                    raise NeededAtRunTime(f"{role}.{key}={value}: no such file on the driver", f"{role}.{key}")
                seen = by_name.get(path.name)
                if seen is not None and seen[0] != path:
                    raise ConfigError(f"{role}.{key}={value} and {seen[1]}={seen[0]} have the same file name; "
                                      "executors receive shipped files in one folder: rename one of them",
                                      f"{role}.{key}")
                by_name[path.name] = (path, f"{role}.{key}")
    return [path for path, _ in by_name.values()]


def through_provider(settings: Mapping[str, str]) -> dict[str, str]:
    """Client settings whose file paths resolve on every executor (see the module docstring)."""
    files = _file_settings(settings)
    out = dict(settings)
    if not files:
        return out
    for key, value in files.items():
        path = Path(value)
        out[key] = f"${{{PROVIDER}:{path.parent}:{path.name}}}"
    providers = [p.strip() for p in out.get("config.providers", "").split(",") if p.strip()]
    out["config.providers"] = ",".join([*providers, PROVIDER])
    out[f"config.providers.{PROVIDER}.class"] = PROVIDER_CLASS
    return out


def check_executors(spark, shipped: list[Path], timeout: float = 120.0) -> list[str]:
    """Run the JVM probe on the executors; returns their ids, raises ExecutorSetupError naming what
    lacks, or saying that no executor came within ``timeout`` (Spark itself would wait forever)."""
    jvm = SparkJvm(session=spark)
    outcome: dict[str, Any] = {}  # "report": the JVM's answer, or "error": the JvmError

    def probe() -> None:
        spark.sparkContext.setJobGroup("mirrorspark-preflight", "mirrorspark: executor check", True)
        try:
            outcome["report"] = jvm.preflight(p.name for p in shipped)
        except JvmError as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=probe, name="mirrorspark-preflight", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        spark.sparkContext.cancelJobGroup("mirrorspark-preflight")
        raise ExecutorSetupError(
            f"no Spark executor ran the check within {timeout:.0f} s on {spark.conf.get('spark.master')}: do the "
            "workers offer the cores and memory asked for (spark.executor.cores, spark.executor.memory, "
            "spark.cores.max)? The master's web UI shows why the application waits")
    report: str = outcome.get("report", "")
    exc: JvmError | None = outcome.get("error")
    if exc is not None:
        text = exc.text
        # The job's closure holds only mirrorspark's probe: an executor that cannot load it fails with
        # ClassNotFoundException, or with a ClassCastException on the SerializedLambda wrapping it.
        missing_class = "io.mirrorspark" in text and ("ClassNotFound" in text or "NoClassDefFound" in text)
        if missing_class or "SerializedLambda" in text:
            raise ExecutorSetupError(
                "executors cannot load mirrorspark's jar (io.mirrorspark classes): it is shipped with spark.jars "
                f"({spark.conf.get('spark.jars', '')}); check that executors can fetch files from the driver "
                "(spark.driver.host / spark.driver.port reachable from the workers)") from None
        first = text.strip().splitlines()[0][:500] if text.strip() else exc.kind
        raise ExecutorSetupError(f"the executor check job failed: {first}") from None
    executors, problems = [], []
    for line in report.splitlines():
        executor, _, missing = line.partition("\t")
        executors.append(executor)
        if missing:
            problems.append(f"executor {executor}: {missing}")
    if problems:
        raise ExecutorSetupError("; ".join(problems))
    return sorted(set(executors))
