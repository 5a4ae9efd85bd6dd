"""The status page over a fake controller: what it shows of a running writer, a degraded writer and a
standby, that every text is escaped and redacted, that it references nothing outside itself, and that
an error building it is a page, not a stopped flow. Token rules: test_status_auth.py."""
from __future__ import annotations

import re
import time
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient
from helpers.status_flows import ERROR, NOW, SECRET, StatusController, hour_of_samples
from prometheus_client import CollectorRegistry

from mirrorspark.config.redaction import Redactor, current, install
from mirrorspark.rest.app import create_app
from mirrorspark.rest.history import History
from mirrorspark.rest.status_page import BADGES, render_status

BASE = "http://127.0.0.1:8083"


class Sections(HTMLParser):
    """Each flow section's data attributes, and every tag and attribute of the page."""

    def __init__(self) -> None:
        super().__init__()
        self.flows: list[dict[str, str | None]] = []
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes.extend(attrs)
        found = dict(attrs)
        if tag == "section" and found.get("class") == "flow":
            self.flows.append(found)


def parse(page: str) -> Sections:
    parser = Sections()
    parser.feed(page)
    return parser


@pytest.fixture
def controller() -> StatusController:
    return StatusController(now=time.time())  # the app renders with the real clock


@pytest.fixture
def page(controller: StatusController) -> str:
    """The page as the app serves it: through the process's redactor, which knows ``SECRET``."""
    before = current()
    install(Redactor([SECRET]))
    try:
        api = TestClient(create_app(controller, CollectorRegistry(), token=None,
                                    history=hour_of_samples(controller, controller.now)), base_url=BASE)
        answer = api.get("/status")
    finally:
        install(before)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in answer.headers["content-security-policy"]
    return answer.text


def test_each_flow_with_its_role_state_and_figures(page):
    sections = parse(page).flows
    assert [(s["data-flow"], s["data-role"], s["data-state"]) for s in sections] == [
        ("primary->backup", "writer", "running"), ("backup->primary", "writer", "degraded"),
        ("primary->dr", "standby", "standby")]
    running = page[page.index('data-flow="primary-&gt;backup"'):page.index('data-flow="backup-&gt;primary"')]
    for shown in ("123,456", "records lost</th><td class=\"n\">7", "records re-copied</th><td class=\"n\">3",
                  "lag (records)</th><td class=\"n\">42", "lag (seconds)</th><td class=\"n\">1.5"):
        assert shown in running, shown
    # Lag per source topic, a topic name escaped.
    assert "<td>orders</td><td class=\"n\">40</td><td class=\"n\">1.5</td>" in running
    assert "payments&lt;b&gt;" in running and "payments<b>" not in page
    # The last checkpoint and the per-group verdicts.
    assert re.search(r"last checkpoint emitted: \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(2[01] s ago\); 2 group\(s\) in "
                     r"primary\.checkpoints\.internal", running)
    assert re.search(r'data-exact="yes"><td>billing</td><td class="exact">exact</td>', running)
    assert re.search(r'data-exact="no"><td>reports</td><td class="inexact">not exact</td>', running)
    assert "40 of them not replicated yet" in running
    # The rate of the last sample interval: (100 + 5 * 360) records in 10 s.
    assert "records/s</th><td class=\"n\">190.0" in running
    degraded = page[page.index('data-flow="backup-&gt;primary"'):page.index('data-flow="primary-&gt;dr"')]
    assert "not written by this instance yet" in degraded
    standby = page[page.index('data-flow="primary-&gt;dr"'):]
    assert "the instance that writes this flow shows its checkpoints" in standby


def test_badges_in_their_colours(page):
    for state in ("running", "degraded", "standby"):
        background, _ = BADGES[state]
        assert f'<span class="badge" style="background:{background};' in page
        assert f">{state}</span>" in page
    assert len({BADGES[s][0] for s in ("running", "degraded", "standby")}) == 3


def test_every_text_escaped_and_redacted(page):
    assert SECRET not in page
    assert "<script" not in page.lower() and "script" not in parse(page).tags
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "failed &amp; refused" in page
    assert "SaslAuthenticationException" in page and "SaslAuthenticationException" in ERROR


def test_charts_are_inline_svg_polylines_of_the_last_hour(page):
    charts = re.findall(r'<svg class="chart chart-(rate|lag)"', page)
    assert charts == ["rate", "lag"] * 3
    running = page[:page.index('data-flow="backup-&gt;primary"')]
    lines = re.findall(r'<polyline [^>]*points="([^"]+)"', running)
    assert len(lines) == 2
    rate_points = [tuple(map(float, p.split(","))) for p in lines[0].split()]
    assert len(rate_points) >= 358  # one rate per pair of the 361 samples, the oldest at the hour's edge
    xs = [x for x, _ in rate_points]
    assert xs == sorted(xs) and ys_rise([y for _, y in rate_points])


def ys_rise(ys: list[float]) -> bool:
    """A rising rate is drawn going up: SVG's y shrinks."""
    return ys[0] > ys[-1]


def test_nothing_outside_the_page(page):
    """No URL of any kind: no src/href, no url(), no @import, no scheme anywhere; no script."""
    attributes = parse(page).attributes
    assert not [a for a in attributes if a[0] in ("src", "href", "srcset", "xlink:href", "data")], attributes
    assert not re.search(r"https?:|//[a-z]|url\(|@import|@font-face", page, re.IGNORECASE)
    assert [a for a in attributes if a[0] == "http-equiv"] == [("http-equiv", "refresh")]


def test_without_samples_the_charts_wait():
    controller = StatusController(now=NOW)
    page = render_status(controller.status(), History(flows=controller.flows).series, now=NOW)
    assert page.count("collecting samples") == 6 and "<polyline" not in page


def test_a_page_error_is_a_page_and_the_flows_go_on(controller):
    controller.fail = RuntimeError(f"boom with password={SECRET}")
    api = TestClient(create_app(controller, CollectorRegistry(), token=None), base_url=BASE,
                     raise_server_exceptions=False)
    answer = api.get("/status")
    assert answer.status_code == 500 and "could not be built" in answer.text and SECRET not in answer.text
    controller.fail = None
    assert api.get("/status").status_code == 200 and api.get("/flows").status_code == 200
