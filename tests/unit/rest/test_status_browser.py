"""The status page in a real headless Chromium, offline (every non-loopback request to a dead proxy),
from a real uvicorn server: the DOM it builds, and a screenshot whose pixels are checked: each state
badge drawn in its colour (green running, amber degraded, grey standby), badge-sized, in the flows'
order down the page, and the charts' lines drawn."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from helpers.chromium import browser, chromium
from helpers.png import decode, hex_colour
from helpers.status_flows import SECRET, StatusController, hour_of_samples
from prometheus_client import CollectorRegistry

from mirrorspark.rest.app import create_app
from mirrorspark.rest.status_page import BADGES, CHART_LINES

WINDOW = (1280, 2800)  # tall enough for the three flows at a device scale of 1
BADGE_PIXELS = 2000  # a badge is 120 x 30 px; its label and rounded corners take a few hundred
LINE_PIXELS = 300  # a line across the 464 px wide plot
TOLERANCE = 2  # PNG is lossless; a few levels of colour management at most


def serve(token: str | None) -> tuple[uvicorn.Server, threading.Thread, str]:
    controller = StatusController(now=time.time())
    app = create_app(controller, CollectorRegistry(), token, history=hour_of_samples(controller, controller.now))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    return server, thread, f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"


@pytest.fixture
def binary() -> str:
    found = browser()
    if found is None:
        pytest.skip("no chromium on PATH (scripts/setup.sh installs it where apt-get is available)")
    return found


@pytest.fixture
def address() -> Iterator[str]:
    """An open page (``mirrorspark.rest.auth = none``): a browser on the command line sends no token."""
    server, thread, url = serve(token=None)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(10)


def test_dom_in_chromium(binary, address, tmp_path):
    dumped = chromium(binary, f"{address}/", "--dump-dom", f"--user-data-dir={tmp_path / 'profile'}")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout  # "/" redirected to /status
    for flow, role, state in (("primary-&gt;backup", "writer", "running"), ("backup-&gt;primary", "writer", "degraded"),
                              ("primary-&gt;dr", "standby", "standby")):
        assert f'data-flow="{flow}" data-state="{state}" data-role="{role}"' in dom, dom[:3000]
    assert dom.count("<polyline") == 6 and dom.count('class="chart chart-') == 6
    assert "&lt;script&gt;alert(" in dom and "<script" not in dom.lower() and SECRET not in dom
    assert 'data-exact="no"><td>reports</td>' in dom


def colour_boxes(image, colour: str) -> tuple[int, tuple[int, int, int, int]]:
    """How many pixels have ``colour``, and their bounding box (left, top, right, bottom)."""
    found = image.matching(hex_colour(colour), TOLERANCE)
    if not found:
        return 0, (0, 0, 0, 0)
    xs, ys = [x for x, _ in found], [y for _, y in found]
    return len(found), (min(xs), min(ys), max(xs), max(ys))


def test_screenshot_shows_each_badge_in_its_colour_and_the_charts(binary, address, tmp_path):
    shot = Path(tmp_path / "status.png")
    taken = chromium(binary, f"{address}/status", f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                     "--hide-scrollbars", "--force-device-scale-factor=1", f"--user-data-dir={tmp_path / 'profile'}")
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    image = decode(shot.read_bytes())
    assert (image.width, image.height) == WINDOW
    tops = []
    for state in ("running", "degraded", "standby"):
        count, (left, top, right, bottom) = colour_boxes(image, BADGES[state][0])
        assert count > BADGE_PIXELS, (state, count)
        # One badge of that colour: a box of the badge's size, at the left of its flow's card.
        assert 110 <= right - left + 1 <= 130 and 24 <= bottom - top + 1 <= 36, (state, left, top, right, bottom)
        assert left < WINDOW[0] // 4, (state, left)
        tops.append(top)
    assert tops == sorted(tops) and tops[1] - tops[0] > 300, tops  # each below the previous flow's card
    for kind, colour in CHART_LINES.items():
        drawn = image.matching(hex_colour(colour), TOLERANCE)
        running = [y for _, y in drawn if tops[0] < y < tops[1]]  # in the running flow's card
        assert len(running) > LINE_PIXELS, (kind, len(running), len(drawn))
        assert max(running) - min(running) > 20, (kind, min(running), max(running))  # a line that moves
    print(f"screenshot {shot}: badges at y={tops}")


def test_without_the_token_chromium_shows_the_form(binary, tmp_path):
    server, thread, url = serve(token="browser-test-token")
    try:
        dumped = chromium(binary, f"{url}/status", "--dump-dom", f"--user-data-dir={tmp_path / 'profile'}")
    finally:
        server.should_exit = True
        thread.join(10)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    assert '<form method="post" action="/status/login">' in dumped.stdout and "data-flow" not in dumped.stdout
