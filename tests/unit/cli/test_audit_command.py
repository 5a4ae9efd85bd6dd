"""``mirrorspark audit``: bad input exits 2 with a message, before any cluster is contacted."""
from __future__ import annotations

import pytest
from helpers.processes import run_cli

FLOW = "primary->backup"


def offline_config(tmp_path):
    """A configuration whose clusters are never contacted: bad input is refused before that."""
    path = tmp_path / "mm2.properties"
    path.write_text("clusters = primary, backup\nprimary.bootstrap.servers = 127.0.0.1:1\n"
                    f"backup.bootstrap.servers = 127.0.0.1:2\n{FLOW}.enabled = true\n")
    return path


@pytest.mark.parametrize("args, message", [
    (("--flow", "primary->elsewhere"), "--flow 'primary->elsewhere' is not a flow of this configuration"),
    (("--flow", FLOW, "--topics", "orders("), "--topics 'orders(' is not a valid regular expression"),
    (("--flow", FLOW), f"no offset ranges for flow {FLOW}"),
])
def test_bad_input_exits_2_with_a_message(tmp_path, args, message):
    done = run_cli("audit", str(offline_config(tmp_path)), *args, "--state-dir", str(tmp_path / "state"))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
