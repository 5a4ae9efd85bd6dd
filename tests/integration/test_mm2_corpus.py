"""Real MM2 files from public repositories (tests/data/mm2_corpus, each with its source and SOURCES.md),
judged by MirrorMaker 2's own configuration classes (MirrorMakerConfig, each pair's worker config and
connectors' ``validate()``, Maven Central jars) and by ``mirrorspark validate --offline``.

What MM2 refuses, mirrorspark refuses. What MM2 accepts, mirrorspark accepts, except the files listed
in ``REFUSED_ON_PURPOSE``, each with the words its refusal must contain: a feature mirrorspark does not
implement and would otherwise ignore, changing what is copied. No broker is needed.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.java import INTEROP, QUIET_LOG4J, classpath
from typer.testing import CliRunner

from mirrorspark.cli.app import app
from mirrorspark.local.cluster import java_executable

CORPUS = Path(__file__).resolve().parents[1] / "data" / "mm2_corpus"
FILES = sorted(CORPUS.glob("*.properties"))

# file -> what mirrorspark's refusal names (a feature it does not implement)
REFUSED_ON_PURPOSE: dict[str, str] = {
    # a Java ReplicationPolicy whose jar is not here (MM2 and mirrorspark load it from plugin.path; neither has it)
    "010-bimoqi-kafka-mm2.properties": "CustomMM2ReplicationPolicy",
    # source->target enabled while clusters lists only `source`: the flow the file asks for cannot run
    "012-bunyaminonum-deploy-cp-kafka-docker.properties": "which is not in clusters",
    # invalid Java regexes too (`*`): MM2's filters fail when they compile them at start
    "016-charlie-charlie-kafka-mm2-poc.properties": "invalid regular expression",
    "059-swetalight-final-project.properties": "invalid regular expression",
    # an unfilled template (`clusters = <source-kafka-cluster-name>, ...`)
    "019-cloudtechner-ct-kafka-mm-k8s-setup.properties": "not a valid alias",
    # a truststore that exists on its author's machine only: MM2 fails when it connects
    "031-hifly81-mirror-maker2-tests.properties": "does not exist",
    "058-subhamproject-kafka-with-mirrormaker2.properties": "does not exist",
    "061-tpham305-kafka-migration-ccloud.properties": "does not exist",
    "070-zyoma-yandex-kafka7.properties": "does not exist",
    # no flow enabled (MM2 and mirrorspark emit heartbeats only), and a truststore on its author's machine only
    "051-rca0-kafka-mm2.properties": "does not exist",
}


def mm2_verdicts(tmp_path: Path) -> dict[str, tuple[str, str]]:
    classes = tmp_path / "classes"
    javac = shutil.which("javac") or str(Path(java_executable()).with_name("javac"))
    subprocess.run([javac, "-d", str(classes), "-cp", classpath(), str(INTEROP / "Mm2ConfigCheck.java")],
                   check=True, capture_output=True)
    (tmp_path / "log4j2.properties").write_text(QUIET_LOG4J)
    log4j = f"-Dlog4j2.configurationFile={tmp_path / 'log4j2.properties'}"
    done = subprocess.run([java_executable(), "-Xmx256m", log4j, "-cp", classpath(classes), "Mm2ConfigCheck",
                           *map(str, FILES)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    verdicts = {}
    for line in done.stdout.splitlines():
        if line.startswith("VERDICT\t"):
            _, file, verdict, *why = line.split("\t")
            verdicts[Path(file).name] = (verdict, " ".join(why))
    assert len(verdicts) == len(FILES)
    return verdicts


def mirrorspark_verdict(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(path), "--offline"])
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert result.exception is None or isinstance(result.exception, SystemExit), f"{path.name}: {output}"
    assert "Traceback" not in output, f"{path.name}: {output}"
    # MM2's config classes read the provider files and stores of this machine: so does `run`, and what
    # `--offline` lists as needed at run time is what `run` refuses here.
    if result.exit_code == 0 and "needed at run time: " in output:
        return 2, output
    return result.exit_code, output


@pytest.mark.skipif(not FILES, reason="no corpus files")
def test_what_mm2_runs_mirrorspark_runs_and_what_mm2_refuses_it_refuses(tmp_path):
    verdicts = mm2_verdicts(tmp_path)
    rows, wrong = [], []
    for path in FILES:
        mm2, why = verdicts[path.name]
        code, output = mirrorspark_verdict(path)
        rows.append(f"{path.name}: MM2 {mm2}, mirrorspark exit {code}")
        if mm2 == "REFUSE":
            if code != 2:
                wrong.append(f"{path.name}: MM2 refuses ({why}) but mirrorspark exits {code}")
        elif path.name in REFUSED_ON_PURPOSE:
            if code != 2 or REFUSED_ON_PURPOSE[path.name] not in output:
                wrong.append(f"{path.name}: should be refused naming {REFUSED_ON_PURPOSE[path.name]!r}: "
                             f"{output[-600:]}")
        elif code != 0:
            wrong.append(f"{path.name}: MM2 runs it, mirrorspark exits {code}: {output[-600:]}")
    accepted_by_mm2 = [p for p in FILES if verdicts[p.name][0] == "ACCEPT"]
    print(f"corpus: {len(FILES)} files; MM2 accepts {len(accepted_by_mm2)}; mirrorspark accepts "
          f"{len(accepted_by_mm2) - len([p for p in accepted_by_mm2 if p.name in REFUSED_ON_PURPOSE])} of them")
    assert not wrong, "\n".join(wrong)
