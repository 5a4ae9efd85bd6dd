"""The bad-input corpus (tests/unit/config/bad_configs/): every file has one defect, and both ``validate --offline``
and ``run`` refuse it with exit code 2, a message naming the key, and no traceback, before ``run``
touches a cluster (every bootstrap server is 127.0.0.1:1, so reaching for one would show as exit 1).

No broker needed: the CLI runs in-process (typer's CliRunner), a few milliseconds per file.
"""
from __future__ import annotations

import logging
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorspark.cli.app import app
from mirrorspark.config import ConfigError, FlowConfig, parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.control.remote_topics import RemoteNames
from mirrorspark.pipeline.preflight import preflight

CORPUS = Path(__file__).with_name("bad_configs")
EXPECTED = dict(line.split(" ", 1) for line in (CORPUS / "expected.txt").read_text().splitlines()
                if line and not line.startswith("#"))
FILES = sorted(CORPUS.glob("*.properties"))
GOOD = ("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\n"
        "A->B.enabled = true\n")


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    return result, output


def check_refused(result, output: str, key: str) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"uncaught {type(result.exception).__name__}: {result.exception}\n{output}"
    assert "Traceback" not in output, output
    assert result.exit_code == 2, output
    assert key in output, f"the message does not name {key}: {output}"


def test_the_corpus_is_complete():
    assert len(FILES) >= 55
    assert {f.name for f in FILES} == set(EXPECTED)


# Defects of the machine, not of the file: validate --offline lists them as needed at run time (exit 0),
# --strict refuses them; run refuses them as any other.
MACHINE = {"46-truststore-missing.properties"}


@pytest.mark.parametrize("file", FILES, ids=lambda f: f.stem)
def test_validate_offline_refuses(file: Path):
    if file.name in MACHINE:
        listed, output = invoke("validate", "--offline", str(file))
        assert listed.exit_code == 0 and f"needed at run time: {EXPECTED[file.name].strip()}" in output, output
        result, output = invoke("validate", "--offline", "--strict", str(file))
    else:
        result, output = invoke("validate", "--offline", str(file))
    check_refused(result, output, EXPECTED[file.name].strip())


@pytest.mark.parametrize("file", FILES, ids=lambda f: f.stem)
def test_run_refuses_the_same_before_touching_a_cluster(file: Path, tmp_path: Path):
    result, output = invoke("run", str(file), "--state-dir", str(tmp_path / "state"))
    logging.getLogger().handlers.clear()  # run installs its log handlers on every in-process call
    check_refused(result, output, EXPECTED[file.name].strip())
    assert not (tmp_path / "state").exists(), "run wrote state before refusing the file"


def test_one_real_process_exits_2_without_a_traceback():
    import subprocess

    file = next(CORPUS.glob("*-bad-regex-config-exclude.properties"))
    done = subprocess.run([sys.executable, "-m", "mirrorspark", "validate", "--offline", str(file)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "config.properties.exclude" in done.stderr


def config(extra: str = "", base: str = GOOD):
    return parse_config(parse_properties(base + extra))


@pytest.mark.parametrize("extra", [
    "topic.filter.class = org.apache.kafka.connect.mirror.DefaultTopicFilter\n",
    "A.group.filter.class = org.apache.kafka.connect.mirror.DefaultGroupFilter\n",
    "A->B.config.property.filter.class = org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter\n",
    "errors.tolerance = none\n",
    "B.exactly.once.source.support = disabled\n",
    "exactly.once.support = requested\n",
    "B.exactly.once.source.support = enabled\n",
    "B.exactly.once.source.support = preparing\nA->B.exactly.once.support = requested\n",
    "B.exactly.once.source.support = enabled\nA->B.exactly.once.support = required\ntransaction.boundary = poll\n",
    "transforms =\n",
    "replication.factor = -1\n",
    "heartbeats.topic.replication.factor = 32767\n",
    "refresh.topics.enabled = false\n",
    "topic.map = orders:A.orders\n",  # the policy's own name for the same topic
    "B->A.enabled = true\n",  # active/active with the default policy
])
def test_mm2_defaults_and_safe_settings_are_accepted(extra):
    preflight(config(extra))


def test_a_bom_is_stripped(tmp_path: Path):
    file = tmp_path / "mm2.properties"
    file.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    result, output = invoke("validate", "--offline", str(file))
    assert result.exit_code == 0, output
    assert "A->B: enabled" in output


def test_validate_never_imports_a_custom_policy(tmp_path: Path, monkeypatch):
    package = tmp_path / "sideeffect_policy"
    package.mkdir()
    marker = tmp_path / "imported"
    (package / "__init__.py").write_text(textwrap.dedent(f"""
        from pathlib import Path
        Path({str(marker)!r}).write_text("imported")
        from mirrorspark.policy import DefaultReplicationPolicy
        class Policy(DefaultReplicationPolicy):
            pass
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    file = tmp_path / "mm2.properties"
    file.write_text(GOOD + "replication.policy.class = sideeffect_policy.Policy\n")
    result, output = invoke("validate", "--offline", str(file))
    assert result.exit_code == 0, output
    assert "custom" in output and not marker.exists()
    from mirrorspark.policy import policy_for_flow

    flow = config("replication.policy.class = sideeffect_policy:Policy\n").enabled_flows[0]
    assert type(policy_for_flow(flow.settings, "A")).__name__ == "Policy" and marker.exists()
    sys.modules.pop("sideeffect_policy", None)


def _flow(text: str, name: str) -> FlowConfig:
    return next(f for f in parse_config(parse_properties(text)).flows if f.name == name)


def test_two_flows_into_one_remote_topic_are_refused_at_plan_time():
    text = ("clusters = A, B, C\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nC.bootstrap.servers = c:1\n"
            "A->C.enabled = true\nB->C.enabled = true\n"
            "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n")
    names = RemoteNames()
    names.claim(_flow(text, "A->C"), {"orders": "orders", "audit": "audit"})
    names.claim(_flow(text, "A->C"), {"orders": "orders"})  # a flow's new plan replaces its old one
    with pytest.raises(ConfigError) as err:
        names.claim(_flow(text, "B->C"), {"payments": "payments", "orders": "orders"})
    message = str(err.value)
    assert err.value.key == "topic.map" and "A->C" in message and "B->C" in message and "'orders'" in message
    names.claim(_flow(text, "B->C"), {"audit": "audit"})  # released by A->C's newer plan


def test_a_map_onto_a_replicated_topic_of_the_same_flow_is_refused_at_plan_time():
    names = RemoteNames()
    flow = _flow(GOOD + "A->B.topic.map = x:y\nreplication.policy.class = IdentityReplicationPolicy\n", "A->B")
    with pytest.raises(ConfigError) as err:
        names.claim(flow, {"x": "y", "y": "y"})
    assert err.value.key == "A->B.topic.map" and "x" in str(err.value) and "y" in str(err.value)


def test_a_full_mesh_of_default_policy_flows_is_accepted_quickly():
    import time

    aliases = [f"C{i}" for i in range(10)]
    text = (f"clusters = {', '.join(aliases)}\n" + "".join(f"{a}.bootstrap.servers = 127.0.0.1:1\n" for a in aliases)
            + "".join(f"{a}->{b}.enabled = true\n" for a in aliases for b in aliases if a != b)
            + "C0->C1.topic.map = orders:orders-from-c0\n")
    started = time.monotonic()
    preflight(parse_config(parse_properties(text)))
    assert time.monotonic() - started < 5


def test_maps_chained_round_three_clusters_are_refused():
    text = ("clusters = A, B, C\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nC.bootstrap.servers = c:1\n"
            "A->B.enabled = true\nB->C.enabled = true\nC->A.enabled = true\n"
            "A->B.topic.map = x:y\nB->C.topic.map = y:z\nC->A.topic.map = z:x\n")
    with pytest.raises(ConfigError, match="loop") as err:
        parse_config(parse_properties(text))
    assert err.value.key == "A->B.topic.map"


def test_a_cycle_through_a_custom_policy_runs_as_in_mm2_when_its_names_carry_their_source(tmp_path, monkeypatch):
    """MM2 runs a cycle of flows whose custom policy it cannot inspect, trusting the policy's topicSource;
    validate accepts it (without importing the policy) and run checks the imported policy before any
    cluster is touched: one whose remote names do not say where they came from is refused."""
    package = tmp_path / "cycle_policies"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent("""
        from mirrorspark.policy import DefaultReplicationPolicy
        class Marked(DefaultReplicationPolicy):
            def format_remote_topic(self, source_cluster_alias, topic):
                return f"{source_cluster_alias}_{topic}"
            def topic_source(self, topic):
                return topic.split("_", 1)[0] if "_" in topic else None
        class Unmarked(DefaultReplicationPolicy):
            def topic_source(self, topic):
                return None
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    cycle = GOOD + "B->A.enabled = true\n"
    from mirrorspark.pipeline.runner import Replicator

    for policy, refused in (("Marked", False), ("Unmarked", True)):
        file = tmp_path / f"{policy}.properties"
        file.write_text(cycle + f"replication.policy.class = cycle_policies.{policy}\n")
        result, output = invoke("validate", "--offline", str(file))
        assert result.exit_code == 0, output
        replicator = Replicator(parse_config(parse_properties(file.read_text())), tmp_path / "state")
        if refused:
            with pytest.raises(ConfigError, match="form a cycle, and A->B's policy names a remote topic") as caught:
                replicator._check()
            assert caught.value.key == "replication.policy.class"
        else:
            replicator._check()  # what run checks before touching a cluster
    sys.modules.pop("cycle_policies", None)
