"""Files MM2 runs that mirrorspark used to refuse: keys MM2 ignores (warnings, ``validate --strict``),
``auto.offset.reset = none`` and a non-idempotent target producer."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mirrorspark.cli.app import app
from mirrorspark.config import ConfigError, parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.pipeline.query_options import check_saved_positions, sink_options, source_options

BASE = ("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\n"
        "A->B.enabled = true\n")


def flow(extra: str):
    return parse_config(parse_properties(BASE + extra)).enabled_flows[0]


@pytest.mark.parametrize("strict, code", [(False, 0), (True, 2)])
def test_validate_strict_turns_the_warnings_into_exit_2(tmp_path, strict, code):
    path = tmp_path / "mm2.properties"
    path.write_text(BASE + "heartbeats.topic.retention.ms = 1000\n")
    args = ["validate", str(path), "--offline", *(["--strict"] if strict else [])]
    result = CliRunner().invoke(app, args)
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert result.exit_code == code, output
    assert "heartbeats.topic.retention.ms" in output and "MM2 ignores it too" in output
    assert ("--strict: 1 warning(s)" in output) == strict and "Traceback" not in output


def test_validate_strict_passes_a_file_without_warnings(tmp_path):
    path = tmp_path / "mm2.properties"
    path.write_text(BASE)
    assert CliRunner().invoke(app, ["validate", str(path), "--offline", "--strict"]).exit_code == 0


def test_auto_offset_reset_none_never_skips_records():
    none = flow("A.consumer.auto.offset.reset = none\n")
    assert none.fails_on_data_loss  # MM2's consumer never moves a position silently: a gap stops the flow
    options = source_options(none, "t")
    assert options["failOnDataLoss"] == "true" and options["startingOffsets"] == "earliest"
    assert not flow("").fails_on_data_loss
    assert flow("A.consumer.auto.offset.reset = none\nmirrorspark.data.loss = fail\n").fails_on_data_loss
    with pytest.raises(ConfigError) as err:
        source_options(flow("A.consumer.auto.offset.reset = none\nmirrorspark.data.loss = report\n"), "t")
    assert err.value.key == "A.consumer.auto.offset.reset" and "mirrorspark.data.loss = report" in str(err.value)
    with pytest.raises(ConfigError) as err:
        source_options(flow("A.consumer.auto.offset.reset = sometimes\n"), "t")
    assert err.value.key == "A.consumer.auto.offset.reset" and "earliest, latest or none" in str(err.value)


def test_auto_offset_reset_none_needs_a_saved_position_for_every_partition_at_the_first_start():
    check_saved_positions("A->B", "A.consumer.auto.offset.reset", {"t": 2}, {("t", 0): 5, ("t", 1): 0})
    with pytest.raises(ConfigError) as err:
        check_saved_positions("A->B", "A.consumer.auto.offset.reset", {"t": 2, "u": 8}, {("t", 0): 5})
    text = str(err.value)
    assert err.value.key == "A.consumer.auto.offset.reset"
    assert "9 source partition(s) have no saved position (t-1, u-0, u-1, u-2, u-3 and 4 more)" in text
    assert "migrate from-mm2" in text


def test_a_non_idempotent_target_producer_runs_with_one_request_in_flight_and_a_warning():
    config = parse_config(parse_properties(BASE + "B.producer.enable.idempotence = false\n"))
    off = config.enabled_flows[0]
    options = sink_options(off, report_offsets=True)
    assert options["kafka.max.in.flight.requests.per.connection"] == "1"
    assert options["kafka.enable.idempotence"] == "false"  # as the file says, with send order kept another way
    warning = [w for w in config.warnings if "B.producer.enable.idempotence = false" in w]
    assert len(warning) == 1 and "one request in flight" in warning[0] and "twice" in warning[0]
    assert "kafka.max.in.flight.requests.per.connection" not in sink_options(flow(""), report_offsets=True)
    with pytest.raises(ConfigError) as err:
        sink_options(flow("B.producer.enable.idempotence = false\n"
                          "B.producer.max.in.flight.requests.per.connection = 5\n"), report_offsets=True)
    assert err.value.key == "B.producer.max.in.flight.requests.per.connection"


IDENTITY = "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"


@pytest.mark.parametrize("topics", [
    ("na\\..*", "eu\\..*"),  # regional prefixes, the MM2 recipe
    ("orders", "payments"),
    ("orders, refunds", "eu\\..*"),
    ("orders", "orders2"),
])
def test_identity_both_ways_runs_when_the_topic_filters_keep_the_directions_apart(topics):
    there, back = topics
    mirror = parse_config(parse_properties(BASE + IDENTITY + f"A->B.topics = {there}\nB->A.enabled = true\n"
                                           f"B->A.topics = {back}\n"))
    assert [f.name for f in mirror.enabled_flows] == ["A->B", "B->A"]
    assert not any(f.same_names for f in mirror.enabled_flows)  # nothing to mark: no topic can come back


@pytest.mark.parametrize("topics", [
    ("orders", "orders"),  # the same name both ways: active/active on the same names
    ("na\\..*", ".*"),
    ("ord.*", "or.*"),
    ("orders|x", "orders"),
    ("a\\\\d+", "a1"),  # a\\d+ in the file: a\d+ once the properties escape is read
])
def test_identity_both_ways_runs_active_active_when_a_topic_could_come_back(topics):
    """MM2 would copy such a topic round and round; mirrorspark marks what each flow copies and skips
    it on the way back (the flows' ``same_names``)."""
    there, back = topics
    mirror = parse_config(parse_properties(BASE + IDENTITY + f"A->B.topics = {there}\nB->A.enabled = true\n"
                                           f"B->A.topics = {back}\n"))
    assert [(f.name, f.same_names) for f in mirror.enabled_flows] == [("A->B", True), ("B->A", True)]


THREE = ("clusters = A, B, C\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\n"
         "C.bootstrap.servers = 127.0.0.1:1\n" + IDENTITY)


def test_a_three_cluster_identity_ring_runs_plain_when_two_of_its_flows_are_apart_else_active_active():
    text = THREE + ("A->B.enabled = true\nB->C.enabled = true\nC->A.enabled = true\n"
                    "A->B.topics = a\\..*\nB->C.topics = .*\nC->A.topics = c\\..*\n")
    assert not any(f.same_names for f in parse_config(parse_properties(text)).enabled_flows)
    ring = parse_config(parse_properties(text.replace("C->A.topics = c\\..*", "C->A.topics = a\\.x")))
    assert all(f.same_names for f in ring.enabled_flows) and len(ring.enabled_flows) == 3


def test_a_same_name_mesh_is_refused_where_a_record_would_arrive_twice_unless_filters_keep_the_ways_apart():
    mesh = THREE + "".join(f"{s}->{t}.enabled = true\n" for s in "ABC" for t in "ABC" if s != t)
    with pytest.raises(ConfigError) as err:
        parse_config(parse_properties(mesh))
    assert err.value.key == "topics" and "reaches C along two paths" in str(err.value)
    apart = mesh + "".join(f"{s}->{t}.topics = {s.lower()}\\..*\n" for s in "ABC" for t in "ABC" if s != t)
    assert len(parse_config(parse_properties(apart)).enabled_flows) == 6


def test_a_pair_fed_by_a_third_cluster_marks_only_the_pair():
    text = THREE + "A->B.enabled = true\nB->C.enabled = true\nC->B.enabled = true\n"
    flows = {f.name: f.same_names for f in parse_config(parse_properties(text)).enabled_flows}
    assert flows == {"A->B": False, "B->C": True, "C->B": True}


def test_a_cycle_mixing_identity_and_renaming_flows_is_still_refused():
    with pytest.raises(ConfigError) as err:
        parse_config(parse_properties(BASE + "A->B." + IDENTITY.replace("\n", "\nB->A.enabled = true\n")))
    assert err.value.key == "A->B.replication.policy.class" and "form a cycle" in str(err.value)


NO_PREFIX = "replication.policy.separator =\nsource.cluster.alias =\ntarget.cluster.alias =\n"


def test_the_no_prefix_recipe_gives_the_names_mm2_gives_remote_and_internal():
    from mirrorspark.policy import policy_for_flow
    from mirrorspark.policy.topic_selection import TopicSelection

    mirror = parse_config(parse_properties(BASE + NO_PREFIX))
    one = mirror.enabled_flows[0]
    policy = policy_for_flow(one.settings, one.source.alias)
    selection = TopicSelection(one, policy)
    assert selection.remote_name("orders") == "orders"  # MM2: "" + "" + "orders"
    assert policy.offset_syncs_topic(one.target.alias) == "mm2-offset-syncsinternal"
    assert policy.checkpoints_topic(one.source.alias) == "checkpointsinternal"
    assert policy.is_internal_topic("mm2-offset-syncsinternal") and policy.is_internal_topic("checkpointsinternal")
    assert not policy.is_internal_topic("journal") and not policy.is_internal_topic("eternal")
    assert selection.should_replicate("orders") and selection.should_replicate("backup-logs")
    assert "no prefix" in " ".join(mirror.warnings) and "IdentityReplicationPolicy" in " ".join(mirror.warnings)


def test_an_empty_separator_alone_prefixes_with_the_alias_as_mm2_does():
    from mirrorspark.policy import policy_for_flow
    from mirrorspark.policy.topic_selection import TopicSelection

    one = parse_config(parse_properties(BASE + "replication.policy.separator =\n")).enabled_flows[0]
    policy = policy_for_flow(one.settings, one.source.alias)
    assert TopicSelection(one, policy).remote_name("orders") == "Aorders"
    assert policy.offset_syncs_topic("B") == "mm2-offset-syncsBinternal"
    assert policy.checkpoints_topic("A") == "Acheckpointsinternal"
    assert policy.topic_source("Aorders") == "A" and policy.upstream_topic("Aorders") == "orders"


def test_the_no_prefix_recipe_both_ways_runs_active_active_unless_filters_keep_them_apart():
    both = parse_config(parse_properties(BASE + NO_PREFIX + "B->A.enabled = true\n"))
    assert all(f.same_names for f in both.enabled_flows)
    apart = BASE + NO_PREFIX + "A->B.topics = na\\..*\nB->A.enabled = true\nB->A.topics = eu\\..*\n"
    assert not any(f.same_names for f in parse_config(parse_properties(apart)).enabled_flows)


def test_config_providers_are_resolved_at_load_as_mm2_resolves_them(tmp_path, monkeypatch):
    secrets = tmp_path / "access.properties"
    secrets.write_text("SRC_BROKERS = 127.0.0.1:1\n")
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "password").write_text("s3cret")
    monkeypatch.setenv("TGT_BROKERS", "127.0.0.1:2")
    text = ("config.providers = file, env, dir\n"
            "config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n"
            "config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n"
            "config.providers.dir.class = org.apache.kafka.common.config.provider.DirectoryConfigProvider\n"
            "clusters = A, B\nA->B.enabled = true\n"
            f"A.bootstrap.servers = ${{file:{secrets}:SRC_BROKERS}}\nB.bootstrap.servers = ${{env:TGT_BROKERS}}\n"
            f"A.ssl.key.password = ${{dir:{tmp_path / 'certs'}:password}}\n"
            "A.sasl.jaas.config = ${vault:secret/a:jaas}\n")  # an undeclared provider: left as written
    mirror = parse_config(parse_properties(text))
    assert mirror.clusters["A"].bootstrap_servers == "127.0.0.1:1"
    assert mirror.clusters["B"].bootstrap_servers == "127.0.0.1:2"
    assert mirror.clusters["A"].settings["ssl.key.password"] == "s3cret"
    assert mirror.clusters["A"].settings["sasl.jaas.config"] == "${vault:secret/a:jaas}"


@pytest.mark.parametrize("reference, message", [
    ("${file:/nowhere/access.properties:SRC}", "cannot read properties file /nowhere/access.properties"),
    ("${env:MIRRORSPARK_TEST_UNSET_VARIABLE}", "environment variable 'MIRRORSPARK_TEST_UNSET_VARIABLE'"),
])
def test_a_provider_reference_that_cannot_be_resolved_is_refused_naming_the_key(reference, message):
    text = ("config.providers = file, env\n"
            "config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n"
            "config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n"
            f"clusters = A, B\nA->B.enabled = true\nA.bootstrap.servers = {reference}\nB.bootstrap.servers = b:1\n")
    with pytest.raises(ConfigError) as err:
        parse_config(parse_properties(text))
    assert err.value.key == "A.bootstrap.servers" and message in str(err.value)


def test_an_unknown_provider_class_is_refused():
    with pytest.raises(ConfigError) as err:
        parse_config(parse_properties("config.providers = vault\nconfig.providers.vault.class = com.x.Vault\n" + BASE))
    assert err.value.key == "config.providers.vault.class"


def test_flow_keys_of_clusters_not_in_clusters_are_ignored_with_a_warning_unless_they_enable_a_flow():
    mirror = parse_config(parse_properties(BASE + "X->Y.sync.group.offsets.enabled = true\n"))
    assert any(w.startswith("X->Y.sync.group.offsets.enabled names cluster 'X'") and "MM2 ignores it too" in w
               for w in mirror.warnings)
    with pytest.raises(ConfigError) as err:
        parse_config(parse_properties(BASE + "A->C.enabled = true\n"))
    assert err.value.key == "A->C.enabled"


def test_a_file_that_is_not_utf8_is_read_as_iso_8859_1_as_mm2_reads_it(tmp_path):
    from mirrorspark.config import load_config
    path = tmp_path / "mm2.properties"
    path.write_bytes(b"# r\xe9plication\n" + BASE.encode())
    mirror = load_config(path)
    assert mirror.enabled_flows[0].name == "A->B" and "ISO-8859-1" in mirror.warnings[0]


def test_exactly_once_gives_the_sink_one_transactional_id_per_task_under_the_flows_prefix():
    eos = flow("B.exactly.once.source.support = enabled\n")
    options = sink_options(eos, report_offsets=True)
    assert options["transactionalIdPrefix"] == "mirrorspark-A->B-#task-"  # the sink appends the task's index
    assert options["transactionalIdPrefix"].startswith(eos.transactional_id_prefix)  # what the ACLs name
    assert "transactionalIdPrefix" not in sink_options(flow(""), report_offsets=True)
