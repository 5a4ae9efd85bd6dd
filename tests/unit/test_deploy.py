"""deploy/: the Kubernetes manifests are valid Kubernetes (the API's own JSON schemas, through
kubernetes-validate, strict: no unknown field) and hold what the guide promises (a writer and a standby,
non-root, probes on /ready and /health, each instance's own state volume); their mm2.properties passes
`mirrorspark validate --offline` with only what a pod has (environment, mounted stores) left for run time;
the Containerfile runs as the same non-root user with the state and config as volumes. No Kubernetes
cluster runs them here; the image itself is built and run by `make image-test`."""
from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import yaml
from typer.testing import CliRunner

from mirrorspark.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes" / "mirrorspark.yaml"


def documents() -> list[dict]:
    return [d for d in yaml.safe_load_all(MANIFESTS.read_text()) if d]


def test_every_manifest_is_valid_kubernetes():
    version = kubernetes_validate.latest_version()
    for doc in documents():
        kubernetes_validate.validate(doc, version, strict=True)  # raises on any schema error


def test_a_writer_and_a_standby_non_root_probed_each_with_its_own_state():
    (sts,) = [d for d in documents() if d["kind"] == "StatefulSet"]
    spec = sts["spec"]
    assert spec["replicas"] == 2 and spec["volumeClaimTemplates"][0]["metadata"]["name"] == "state"
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] == 10001
    (container,) = pod["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert {"name": "state", "mountPath": "/var/lib/mirrorspark"} in container["volumeMounts"]
    labels = spec["template"]["metadata"]["labels"]
    assert labels["strimzi.io/kind"] == "KafkaMirrorMaker2"  # Strimzi's PodMonitor and MM2 dashboard find it


def test_the_manifests_configuration_passes_validate(tmp_path):
    (config_map,) = [d for d in documents() if d["kind"] == "ConfigMap"]
    config = tmp_path / "mm2.properties"
    config.write_text(config_map["data"]["mm2.properties"])
    result = CliRunner().invoke(app, ["validate", str(config), "--offline"])
    assert result.exit_code == 0, result.output
    pending = [line for line in result.output.splitlines() if line.startswith("needed at run time:")]
    assert pending and all("environment variable" in line or "/etc/mirrorspark/tls/" in line for line in pending)


def test_the_containerfile_runs_as_that_user_with_state_and_config_as_volumes():
    text = (ROOT / "deploy" / "Containerfile").read_text()
    assert "USER 10001" in text and 'VOLUME ["/var/lib/mirrorspark", "/etc/mirrorspark"]' in text
    assert "ARG BASE=" in text and "EXPOSE 8083" in text and "openjdk-17-jre-headless" in text
