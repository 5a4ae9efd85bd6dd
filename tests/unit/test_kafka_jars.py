"""Installed-wheel jar handling without brokers: the shipped Kafka jar list matches what Maven resolved,
the first-use download verifies and caches, and paths falls back from build/ to the wheel's resources."""
from __future__ import annotations

import hashlib
from importlib.metadata import version
from pathlib import Path

import pytest

from mirrorspark import kafka_jars, paths
from mirrorspark.kafka_jars import Artifact, JarList, KafkaJarsUnavailable
from mirrorspark.pipeline.spark_session import spark_conf


def test_shipped_list_matches_the_jars_maven_resolved():
    """tests run after scripts/setup.sh; if this fails, the pom changed: run scripts/kafka_jar_list.py."""
    listed = kafka_jars.load_list()
    folder = paths.build_dir() / "kafka-libs"
    assert sorted(a.file_name for a in listed.artifacts) == sorted(p.name for p in folder.glob("*.jar"))
    for artifact in listed.artifacts:
        data = (folder / artifact.file_name).read_bytes()
        assert (len(data), hashlib.sha1(data).hexdigest()) == (artifact.size, artifact.sha1), artifact.file_name
    assert (folder / f"kafka_2.13-{listed.kafka_version}.jar").is_file()


def test_the_client_jvms_own_code_is_compiled_against_the_kafka_and_jackson_it_runs_with():
    """jvm/clients (share groups) is compiled against the versions of the client JVM's classpath."""
    import re

    pom = (Path(__file__).parents[2] / "jvm" / "clients" / "pom.xml").read_text()
    folder = paths.build_dir() / "kafka-libs"
    kafka = re.search(r"<kafka.version>([^<]+)<", pom).group(1)
    jackson = re.search(r"<jackson.version>([^<]+)<", pom).group(1)
    assert kafka == kafka_jars.load_list().kafka_version
    assert (folder / f"kafka-clients-{kafka}.jar").is_file() and (folder / f"jackson-databind-{jackson}.jar").is_file()


def _fake_repo(tmp_path: Path) -> tuple[str, JarList]:
    """Two small 'jars' in a Maven layout under a file:// repository (urllib reads it like HTTPS)."""
    repo = tmp_path / "repo"
    artifacts = []
    for artifact, body in (("alpha", b"alpha-bytes" * 100), ("beta", b"beta" * 3000)):
        folder = repo / "org" / "example" / artifact / "1.0"
        folder.mkdir(parents=True)
        (folder / f"{artifact}-1.0.jar").write_bytes(body)
        artifacts.append(Artifact("org.example", artifact, "1.0", len(body), hashlib.sha1(body).hexdigest(),
                                  hashlib.sha256(body).hexdigest()))
    return repo.as_uri(), JarList("9.9.9", tuple(artifacts))


def test_first_use_download_is_verified_cached_and_reused(tmp_path, monkeypatch, capsys):
    url, jars = _fake_repo(tmp_path)
    monkeypatch.setenv(kafka_jars.REPOSITORY_ENV, url)
    folder = kafka_jars.ensure(tmp_path / "cache", jars)
    assert folder == tmp_path / "cache" / "kafka-9.9.9"
    assert sorted(p.name for p in folder.iterdir()) == ["alpha-1.0.jar", "beta-1.0.jar"]
    err = capsys.readouterr().err
    assert "fetching 2 Kafka 9.9.9 jars" in err and "verified" in err
    assert kafka_jars.ensure(tmp_path / "cache", jars) == folder  # second use: no download, no output
    assert capsys.readouterr().err == ""


def test_a_jar_that_does_not_match_its_checksum_is_refused(tmp_path, monkeypatch, capsys):
    url, jars = _fake_repo(tmp_path)
    bad = Artifact(**{**jars.artifacts[1].__dict__, "sha256": "0" * 64})
    monkeypatch.setenv(kafka_jars.REPOSITORY_ENV, url)
    with pytest.raises(KafkaJarsUnavailable, match="does not match its listed size and checksums"):
        kafka_jars.ensure(tmp_path / "cache", JarList("9.9.9", (jars.artifacts[0], bad)))
    assert not (tmp_path / "cache" / "kafka-9.9.9").exists()
    # the good jar stays in the partial folder, so the retry only fetches what is missing
    capsys.readouterr()
    assert kafka_jars.ensure(tmp_path / "cache", jars) == tmp_path / "cache" / "kafka-9.9.9"
    assert "fetching 1 Kafka 9.9.9 jar" in capsys.readouterr().err


def test_an_unreachable_repository_names_the_url_and_the_way_out(tmp_path, monkeypatch):
    _, jars = _fake_repo(tmp_path)
    monkeypatch.setenv(kafka_jars.REPOSITORY_ENV, (tmp_path / "nowhere").as_uri())
    with pytest.raises(KafkaJarsUnavailable) as caught:
        kafka_jars.ensure(tmp_path / "cache", jars)
    message = str(caught.value)
    assert "nowhere/org/example/" in message and "Maven Central" in message
    assert str(tmp_path / "cache" / "kafka-9.9.9") in message  # where to place the jars by hand


def test_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(kafka_jars.CACHE_ENV, str(tmp_path / "c"))
    assert kafka_jars.cache_root() == tmp_path / "c"
    monkeypatch.delenv(kafka_jars.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert kafka_jars.cache_root() == tmp_path / "xdg" / "mirrorspark"


def test_checkout_uses_build_and_an_install_uses_packages_and_its_own_jar(tmp_path, monkeypatch):
    checkout = paths.spark_dependencies()
    assert not checkout.packages and any("spark-sql-kafka" in p.name for p in checkout.jars)

    jar = tmp_path / "mirrorspark-jvm.jar"
    jar.write_bytes(b"jar")
    monkeypatch.setenv("MIRRORSPARK_BUILD_DIR", str(tmp_path / "no-build"))  # as in site-packages
    monkeypatch.setattr(paths, "PACKAGED_JAR", jar)
    installed = paths.spark_dependencies()
    assert installed.jars == (jar,)
    connector = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version('pyspark')}"  # matches Spark's version
    assert installed.packages == (connector, paths.CONNECT_TRANSFORMS)  # MM2's transforms for the sink
    conf = spark_conf({"spark.jars.packages": "org.example:user:1.0"})
    assert conf["spark.jars.packages"] == f"org.example:user:1.0,{connector},{paths.CONNECT_TRANSFORMS}"
    assert "org.apache.hadoop:hadoop-client-runtime" in conf["spark.jars.excludes"]
    assert conf["spark.jars"] == str(jar)

    monkeypatch.setattr(paths, "PACKAGED_JAR", tmp_path / "absent.jar")
    with pytest.raises(paths.SetupMissing, match="make dist"):
        paths.mirrorspark_jar()
