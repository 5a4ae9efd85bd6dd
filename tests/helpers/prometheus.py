"""A real Prometheus server for tests, and scraped samples as promtool ``input_series``.

The server is Debian's ``prometheus`` binary (scripts/setup.sh installs it) run as a process of the test,
with its own config, data folder and a free port on 127.0.0.1: never the package's own service. It scrapes
and evaluates rules every second, so an alert's ``for`` and a range window are the only waits. Labels that
Kubernetes discovery would put on a pod's series under Strimzi's PodMonitor (strimzi_io_kind,
strimzi_io_cluster, namespace, kubernetes_pod_name) are given as static labels of each target.
"""
from __future__ import annotations

import json
import math
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")


@dataclass(frozen=True)
class Target:
    """One scraped endpoint (``host:port``, path /metrics) and the labels its series get."""
    address: str
    labels: Mapping[str, str] = field(default_factory=dict)


def strimzi_labels(pod: str, cluster: str = "my-mirror", namespace: str = "kafka") -> dict[str, str]:
    """What a PodMonitor over a Strimzi KafkaMirrorMaker2 pod adds to its series."""
    return {"strimzi_io_kind": "KafkaMirrorMaker2", "strimzi_io_cluster": cluster, "namespace": namespace,
            "kubernetes_pod_name": pod}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrometheusServer:
    """``prometheus`` scraping ``targets`` every second, with ``rules`` (a rules file) evaluated as often."""

    def __init__(self, folder: Path, targets: Sequence[Target], rules: Path | None = None) -> None:
        assert PROMETHEUS is not None, "no prometheus on PATH (scripts/setup.sh installs Debian's package)"
        self.folder = folder
        self.targets = list(targets)
        self.rules = rules
        self.port = 0
        self.proc: subprocess.Popen | None = None
        folder.mkdir(parents=True, exist_ok=True)
        self.config = folder / "prometheus.yml"
        self.log = folder / "prometheus.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_config(self) -> None:
        config: dict[str, Any] = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [{"job_name": "mirrorspark", "metrics_path": "/metrics",
                                "static_configs": [{"targets": [t.address], "labels": dict(t.labels)}
                                                   for t in self.targets]}],
        }
        if self.rules is not None:
            config["rule_files"] = [str(self.rules)]
        self.config.write_text(yaml.safe_dump(config, sort_keys=False))

    def start(self, timeout: float = 60.0) -> PrometheusServer:
        """Start and wait for ``/-/ready``; a port taken between choosing and binding is chosen again."""
        self.write_config()
        for _ in range(3):
            self.port = free_port()
            with self.log.open("ab") as out:
                self.proc = subprocess.Popen(
                    [str(PROMETHEUS), f"--config.file={self.config}", f"--storage.tsdb.path={self.folder / 'data'}",
                     f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1d",
                     "--log.level=warn"], stdout=out, stderr=subprocess.STDOUT)
            if self._wait_ready(timeout):
                return self
        raise AssertionError(f"prometheus did not start:\n{self.log.read_text(errors='replace')[-3000:]}")

    def _wait_ready(self, timeout: float) -> bool:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False  # e.g. the port was taken: the caller tries another
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return True
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.2)
        self.stop()
        return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the HTTP API ---------------------------------------------------------------------------

    def api(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}{query}", timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        """An instant vector (``[{"metric": {...}, "value": [t, "v"]}]``); a scalar comes as one sample."""
        data = self.api("query", query=expr)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        return list(data["result"])

    def alerts(self) -> list[dict]:
        """Every pending or firing alert: ``labels``, ``annotations``, ``state``, ``value``."""
        return list(self.api("alerts")["alerts"])

    def firing(self, state: str = "firing") -> list[dict]:
        return [a for a in self.alerts() if a["state"] == state]

    def recorded(self, names: Iterable[str], start: float, end: float, step: float) -> list[dict[str, str]]:
        """What this server stored of the metric families ``names`` between ``start`` and ``end`` (Unix
        seconds), one value per ``step``, as promtool ``input_series`` entries: a real run's series, with
        the labels scraping gave them, for a ``promtool test rules`` file."""
        out: list[dict[str, str]] = []
        points = int((end - start) // step) + 1
        for name in names:
            data = self.api("query_range", query=f'{{__name__="{name}"}}', start=f"{start:.3f}",
                            end=f"{start + (points - 1) * step:.3f}", step=f"{step}")
            for row in sorted(data["result"], key=lambda r: series_key(r["metric"].pop("__name__"), r["metric"])):
                at = {round((float(t) - start) / step): float(v) for t, v in row["values"]}
                out.append({"series": series_key(name, row["metric"]),
                            "values": compress([at.get(i) for i in range(points)])})
        return out

    def rule_groups(self) -> list[dict]:
        return list(self.api("rules")["groups"])

    def targets_up(self) -> bool:
        active = self.api("targets")["activeTargets"]
        return len(active) == len(self.targets) and all(t["health"] == "up" for t in active)

    def wait_for_alert(self, name: str, timeout: float = 120.0, **labels: str) -> dict:
        """The first firing alert ``name`` whose labels include ``labels``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for alert in self.firing():
                if alert["labels"].get("alertname") == name and _includes(alert["labels"], labels):
                    return alert
            time.sleep(0.5)
        raise AssertionError(f"alert {name} {labels} did not fire within {timeout:.0f} s; alerts now: "
                             f"{[(a['labels'], a['state']) for a in self.alerts()]}")

    def wait_until_silent(self, name: str, timeout: float = 120.0, **labels: str) -> None:
        """Until no alert ``name`` with ``labels`` is pending or firing."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not [a for a in self.alerts() if a["labels"].get("alertname") == name
                    and _includes(a["labels"], labels)]:
                return
            time.sleep(0.5)
        raise AssertionError(f"alert {name} {labels} still active after {timeout:.0f} s")


def _includes(have: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    return all(have.get(k) == v for k, v in wanted.items())


# -- promtool: rules files and input series ---------------------------------------------------------

def promtool(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    assert PROMTOOL is not None, "no promtool on PATH (scripts/setup.sh installs Debian's prometheus package)"
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=timeout)


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text: str) -> dict[str, float]:
    """Prometheus text format as ``{'name{a="x",b="y"}': value}`` (labels sorted, comments dropped)."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            continue
        name, _, body, value, _ = match.groups()
        labels = sorted(_LABEL.findall(body or ""))
        samples[series_key(name, dict(labels))] = float(value)
    return samples


def series_key(name: str, labels: Mapping[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}"


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return repr(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


def compress(values: Sequence[float | None]) -> str:
    """promtool's value notation: a run of equal steps as ``a+bxn``, a missing scrape as ``_``."""
    out: list[str] = []
    i = 0
    while i < len(values):
        current = values[i]
        if current is None:
            out.append("_")
            i += 1
            continue
        j = i + 1
        step = None
        while j < len(values) and values[j] is not None:
            diff = values[j] - values[j - 1]  # type: ignore[operator]
            if step is None:
                step = diff
            elif diff != step:
                break
            j += 1
        repeats = j - i - 1
        if repeats >= 2 and step is not None:
            sign = "+" if step >= 0 else "-"
            out.append(f"{_number(current)}{sign}{_number(abs(step))}x{repeats}")
            i = j
        else:
            out.append(_number(current))
            i += 1
    return " ".join(out)


def input_series(scrapes: Sequence[Mapping[str, float]], names: Iterable[str],
                 extra_labels: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """Scrapes (``parse_exposition`` results, one per interval) of the metric families ``names`` as
    promtool ``input_series`` entries, ``extra_labels`` (job, instance, pod labels) added to each."""
    wanted = tuple(names)
    keys = sorted({k for scrape in scrapes for k in scrape if k.split("{", 1)[0] in wanted})
    out = []
    for key in keys:
        name, body = key.split("{", 1)
        labels = dict(_LABEL.findall(body.rstrip("}")))
        labels.update(extra_labels or {})
        out.append({"series": series_key(name, labels), "values": compress([s.get(key) for s in scrapes])})
    return out


# -- the Grafana dashboard ------------------------------------------------------------------------

def dashboard_expressions(dashboard: Path) -> list[str]:
    """Every panel target's expression, Grafana's variables replaced as Grafana would expand them."""
    panels = json.loads(dashboard.read_text())["panels"]
    return [grafana_expanded(t["expr"]) for p in panels for t in p.get("targets", [])]


def grafana_expanded(expr: str) -> str:
    """``$source``/``$target`` as "All" (``.*``), ``$__rate_interval`` as one minute."""
    expr = expr.replace("$__rate_interval", "1m").replace("$__interval", "15s")
    return re.sub(r"\$\{?(source|target)\}?", ".*", expr)
