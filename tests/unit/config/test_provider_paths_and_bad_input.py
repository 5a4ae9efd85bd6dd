"""Config providers read only what ``allowed.paths`` (or the env provider's ``allowlist.pattern``)
lets them, and input that is no text (a binary secret file, an unpaired surrogate escape) is
refused as a ConfigError naming the key, never a traceback."""
from __future__ import annotations

from pathlib import Path

import pytest

from mirrorspark.config import ConfigError, parse_config
from mirrorspark.config.properties_file import parse_properties

BASE = ("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\n"
        "A->B.enabled = true\n")
DIR = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
FILE = "org.apache.kafka.common.config.provider.FileConfigProvider"
ENV = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"


def with_provider(kind: str, extra: str, allowed: Path | None = None, param: str = "") -> str:
    text = f"config.providers = p\nconfig.providers.p.class = {kind}\n{param}"
    if allowed is not None:
        text += f"config.providers.p.param.allowed.paths = {allowed}\n"
    return text + BASE + extra


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    """``allowed/`` with a good secret, and a file outside it that no reference may reach."""
    (tmp_path / "allowed").mkdir()
    (tmp_path / "allowed" / "token").write_text("fine")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "file").write_text("OUTSIDE-SECRET")
    (tmp_path / "allowed" / "link").symlink_to(tmp_path / "outside" / "file")
    return tmp_path


def test_a_directory_provider_name_inside_allowed_paths_is_read(secrets):
    mirror = parse_config(parse_properties(with_provider(DIR, "A.client.id = ${p:%s:token}\n" % (secrets / "allowed"),
                                                         secrets / "allowed")))
    assert mirror.clusters["A"].settings["client.id"] == "fine"


@pytest.mark.parametrize("name", ["../outside/file", "link", "{outside}/file", "./../outside/file"])
def test_a_directory_provider_name_cannot_leave_allowed_paths(secrets, name):
    name = name.format(outside=secrets / "outside")
    text = with_provider(DIR, f"A.client.id = ${{p:{secrets / 'allowed'}:{name}}}\n", secrets / "allowed")
    with pytest.raises(ConfigError, match=r"is not under config\.providers\.p\.param\.allowed\.paths") as err:
        parse_config(parse_properties(text))
    assert err.value.key == "A.client.id" and "OUTSIDE-SECRET" not in str(err.value)


def test_a_file_provider_path_through_a_link_or_dots_cannot_leave_allowed_paths(secrets):
    (secrets / "outside" / "access.properties").write_text("TOKEN = OUTSIDE-SECRET\n")
    (secrets / "allowed" / "props").symlink_to(secrets / "outside" / "access.properties")
    for path in (secrets / "allowed" / ".." / "outside" / "access.properties", secrets / "allowed" / "props"):
        with pytest.raises(ConfigError, match="is not under") as err:
            parse_config(parse_properties(with_provider(FILE, f"A.client.id = ${{p:{path}:TOKEN}}\n",
                                                        secrets / "allowed")))
        assert err.value.key == "A.client.id"


def test_the_env_provider_reads_only_names_its_allowlist_pattern_matches(monkeypatch):
    monkeypatch.setenv("MS_TEST_ALLOWED", "ok")
    monkeypatch.setenv("MS_TEST_OTHER", "OUTSIDE-SECRET")
    param = "config.providers.p.param.allowlist.pattern = MS_TEST_ALLOWED|TGT_.*\n"
    mirror = parse_config(parse_properties(with_provider(ENV, "A.client.id = ${p:MS_TEST_ALLOWED}\n", param=param)))
    assert mirror.clusters["A"].settings["client.id"] == "ok"
    with pytest.raises(ConfigError, match=r"does not match config\.providers\.p\.param\.allowlist\.pattern") as err:
        parse_config(parse_properties(with_provider(ENV, "A.client.id = ${p:MS_TEST_OTHER}\n", param=param)))
    assert err.value.key == "A.client.id"
    with pytest.raises(ConfigError) as bad:
        parse_config(parse_properties(with_provider(ENV, "A.client.id = ${p:X}\n",
                                                    param="config.providers.p.param.allowlist.pattern = (\n")))
    assert bad.value.key == "config.providers.p.param.allowlist.pattern"


def test_a_binary_file_behind_the_directory_provider_is_refused_naming_the_key(tmp_path):
    (tmp_path / "password").write_bytes(b"\xff\xfe\x00\x81binary")
    text = with_provider(DIR, f"A.ssl.key.password = ${{p:{tmp_path}:password}}\n", tmp_path)
    with pytest.raises(ConfigError, match="is not UTF-8 text") as err:
        parse_config(parse_properties(text))
    assert err.value.key == "A.ssl.key.password"


@pytest.mark.parametrize("line, key", [
    ("A->B.topics = orders\\ud800.*\n", "A->B.topics"),
    ("A->B.topics.exclude = x\\udfff\n", "A->B.topics.exclude"),
    ("A.client.id = \\ude00\\ud83d\n", "A.client.id"),  # the halves of a pair in the wrong order
])
def test_an_unpaired_surrogate_is_refused_naming_the_key(line, key):
    with pytest.raises(ConfigError, match="unpaired UTF-16 surrogate") as err:
        parse_config(parse_properties(BASE + line))
    assert err.value.key == key


def test_an_unpaired_surrogate_from_an_environment_variable_is_refused(monkeypatch):
    monkeypatch.setenv("MS_TEST_BYTES", "x\udcff")  # how os.environ shows bytes that are not UTF-8
    with pytest.raises(ConfigError, match="unpaired UTF-16 surrogate") as err:
        parse_config(parse_properties(with_provider(ENV, "A.client.id = ${p:MS_TEST_BYTES}\n")))
    assert err.value.key == "A.client.id"


def test_an_escaped_surrogate_pair_is_one_character_as_in_java():
    assert parse_properties("k = a\\ud83d\\ude00b\n") == {"k": "a\U0001f600b"}
