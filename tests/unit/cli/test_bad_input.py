"""Input that is no text ends ``validate`` with exit 2 and a message naming the key, never a traceback."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mirrorspark.cli.app import app

GOOD = "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\nA->B.enabled = true\n"
DIR = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"


def validate(path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(path), "--offline"])
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes is not None else "")


def test_a_lone_surrogate_in_a_topic_regex(tmp_path):
    path = tmp_path / "mm2.properties"
    path.write_text(GOOD + "A->B.topics = orders\\ud800\n")
    code, output = validate(path)
    assert code == 2, output
    assert "A->B.topics" in output and "unpaired UTF-16 surrogate" in output and "Traceback" not in output


@pytest.mark.parametrize("name, message", [
    ("secret.bin", "is not UTF-8 text"),
    ("../outside.txt", "is not under config.providers.d.param.allowed.paths"),
])
def test_a_bad_file_behind_the_directory_provider(tmp_path, name, message):
    (tmp_path / "allowed").mkdir()
    (tmp_path / "allowed" / "secret.bin").write_bytes(b"\x00\xff\xfe\x81")
    (tmp_path / "outside.txt").write_text("OUTSIDE-VALUE")
    path = tmp_path / "mm2.properties"
    path.write_text(f"config.providers = d\nconfig.providers.d.class = {DIR}\n"
                    f"config.providers.d.param.allowed.paths = {tmp_path / 'allowed'}\n" + GOOD +
                    f"A.client.id = ${{d:{tmp_path / 'allowed'}:{name}}}\n")
    code, output = validate(path)
    assert code == 2, output
    assert "A.client.id" in output and message in output
    assert "Traceback" not in output and "OUTSIDE-VALUE" not in output
