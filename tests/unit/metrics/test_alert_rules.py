"""The shipped alert rules and dashboard, checked by Prometheus's own promtool: the rules file is valid,
each alert fires on the series of its fault (recorded from real runs, tests/data/prometheus/) and stays
silent on a healthy writer and its standby; every dashboard expression is valid PromQL."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers.prometheus import PROMTOOL, dashboard_expressions, promtool

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "docs" / "prometheus" / "mirrorspark-alerts.yml"
RULE_TESTS = ROOT / "tests" / "data" / "prometheus" / "mirrorspark-alerts-test.yml"

pytestmark = pytest.mark.skipif(PROMTOOL is None, reason="no promtool on PATH (scripts/setup.sh installs Debian's "
                                                          "prometheus package where apt-get is available)")


def alert_names() -> set[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["alert"] for group in groups for rule in group["rules"] if "alert" in rule}


def test_the_rules_file_is_valid():
    done = promtool("check", "rules", str(RULES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alert_names())} rules found" in done.stdout, done.stdout


def test_each_alert_fires_on_its_fault_and_stays_silent_on_a_healthy_writer_and_standby():
    tests = yaml.safe_load(RULE_TESTS.read_text())
    tested = {alert["alertname"] for case in tests["tests"] for alert in case.get("alert_rule_test", [])}
    fired = {alert["alertname"] for case in tests["tests"] for alert in case.get("alert_rule_test", [])
             if alert.get("exp_alerts")}
    assert tested == alert_names(), "every alert is evaluated in some case"
    assert fired == alert_names(), "every alert is made to fire in some case"
    done = promtool("test", "rules", str(RULE_TESTS))
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_dashboard_expression_is_valid_promql(tmp_path):
    """promtool checks PromQL inside a rules file only: each expression becomes a recording rule."""
    expressions = dashboard_expressions(ROOT / "docs" / "grafana" / "mirrorspark.json")
    assert expressions
    rules = {"groups": [{"name": "dashboard", "rules": [{"record": f"dashboard:expr_{i}", "expr": e}
                                                        for i, e in enumerate(expressions)]}]}
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump(rules))
    done = promtool("check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
