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
