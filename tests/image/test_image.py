"""The container image (deploy/Containerfile), built with buildah and run on this machine (`make image-test`).

Built by scripts/build_image.sh: the wheel, a Debian 12 base made with debootstrap (no image registry is
reachable here), then the Containerfile. Run with `buildah run --isolation chroot` (the sandbox refuses
`podman run`: its runtimes cannot set rlimits), sharing the host's network, so the mirrorspark inside
replicates between two real local clusters. Also: started without a configuration it fails at once with
one line. The image's size and the time from `run` to the first record copied are printed.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from helpers.config import write_config
from helpers.kafka import create_topic, produce, wait_for_count
from helpers.records import records

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "localhost/mirrorspark:test"
pytestmark = [pytest.mark.broker, pytest.mark.image,
              pytest.mark.skipif(shutil.which("buildah") is None, reason="no buildah (apt-get install buildah)")]


def buildah(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["buildah", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def image() -> str:
    started = time.monotonic()
    # This machine's extra CAs (a TLS-inspecting proxy in front of PyPI and Maven Central) go into the image.
    extra = " ".join(str(p) for p in sorted(Path("/usr/local/share/ca-certificates").glob("*.crt")))
    done = subprocess.run(["bash", str(ROOT / "scripts" / "build_image.sh")], cwd=ROOT, capture_output=True,
                          text=True, timeout=3600, env={**os.environ, "IMAGE": IMAGE, "EXTRA_CA_CERTS": extra})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    print(f"image built in {time.monotonic() - started:.0f} s: {done.stdout.strip().splitlines()[-1]}")
    return IMAGE


def container(image: str) -> str:
    made = buildah("from", "--quiet", image)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def test_the_image_replicates_between_two_local_clusters(image, clusters, unique, tmp_path):
    topic = f"image-{unique}"
    create_topic(clusters["primary"], topic, 2)
    produce(clusters["primary"], topic, records(200, 2, unique))
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    write_config(config_dir / "mm2.properties", clusters, f"primary->backup.enabled = true\n"
                                                          f"primary->backup.topics = {topic}\n")
    config_dir.chmod(0o755)
    (config_dir / "mm2.properties").chmod(0o644)
    ctr = container(image)
    started = time.monotonic()
    run = subprocess.Popen(["buildah", "run", "--isolation", "chroot", "-v", f"{config_dir}:/etc/mirrorspark:ro",
                            ctr, "--", "mirrorspark", "run", "/etc/mirrorspark/mm2.properties"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        wait_for_count(clusters["backup"], f"primary.{topic}", 200, timeout=300)
        print(f"first run to 200 records copied: {time.monotonic() - started:.0f} s")
        whoami = buildah("run", "--isolation", "chroot", ctr, "--", "id", "-u")
        assert whoami.stdout.strip() == "10001"  # not root
    finally:
        os.killpg(run.pid, 15)
        try:
            output, _ = run.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, 9)
            output, _ = run.communicate()
        buildah("rm", ctr)
    assert "downloading https://" not in output, output[-3000:]  # the connector's jars came with the image


def test_the_image_without_a_configuration_fails_at_once_with_one_line(image):
    ctr = container(image)
    try:
        started = time.monotonic()
        done = buildah("run", "--isolation", "chroot", ctr, "--", "mirrorspark", "run",
                       "/etc/mirrorspark/mm2.properties", timeout=120)
    finally:
        buildah("rm", ctr)
    buildahs_own = ("subprocess exited with status", "Error: exit status")  # buildah run's report of the exit
    lines = [line for line in (done.stdout + done.stderr).splitlines()
             if line.strip() and not line.startswith(buildahs_own)]
    assert done.returncode == 2 and len(lines) == 1, lines
    assert "/etc/mirrorspark/mm2.properties" in lines[0] and time.monotonic() - started < 60
