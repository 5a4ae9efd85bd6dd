"""The status page of real instances against real brokers: a writer copying a topic and a second
instance of the same file waiting as its standby, each page loaded in headless Chromium (offline):
the writer's shows writer/running with the consumer group's failover verdict, the standby's shows
standby; their screenshots carry the green and the grey badge."""
from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from helpers.chromium import browser, chromium
from helpers.config import write_config
from helpers.kafka import create_topic, produce_backlog, wait_for_count
from helpers.png import decode, hex_colour
from helpers.processes import kill9, start

from mirrorspark.rest.status_page import BADGES

pytestmark = [pytest.mark.broker, pytest.mark.long]  # two instances and Chromium: about a minute, in `make drills`

FLOW = "primary->backup"
RECORDS = 200
BADGE_PIXELS = 2000  # a 120 x 30 px badge, less its label


def get(state: Path, path: str) -> str:
    """GET ``path`` from that instance (``mirrorspark.rest.auth = none``: no token)."""
    url = json.loads((state / "rest.json").read_text())["url"]
    with urllib.request.urlopen(f"{url}{path}", timeout=10) as response:
        return response.read().decode()


def wait_role(state: Path, role: str, limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if any(row["name"] == FLOW and row["role"] == role for row in json.loads(get(state, "/flows"))):
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.5)
    raise AssertionError(f"{FLOW} not {role} in {state}:\n{(state / 'run.log').read_text(errors='replace')[-4000:]}")


def wait_page(state: Path, wanted: str, limit: float) -> str:
    """The page once it shows ``wanted`` (the verdicts are read in the background, first asked by a request)."""
    deadline = time.monotonic() + limit
    page = ""
    while time.monotonic() < deadline:
        page = get(state, "/status")
        if wanted in page:
            return page
        time.sleep(2)
    raise AssertionError(f"{wanted!r} not on the page of {state}:\n{page[-3000:]}")


def consume_and_commit(bootstrap: str, topic: str, group: str) -> None:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                       "enable.auto.commit": False})
    reader.subscribe([topic])
    seen, deadline = 0, time.monotonic() + 60
    while seen < RECORDS and time.monotonic() < deadline:
        seen += len([m for m in reader.consume(500, 1.0) if m.error() is None])
    reader.commit(asynchronous=False)
    reader.close()
    assert seen == RECORDS


def badge_pixels(shot: Path, state: str) -> int:
    return len(decode(shot.read_bytes()).matching(hex_colour(BADGES[state][0]), 2))


def test_status_pages_of_a_writer_and_its_standby_in_chromium(clusters, unique, tmp_path):
    binary = browser()
    if binary is None:
        pytest.skip("no chromium on PATH")
    topic, group = f"status-{unique}", f"status-group-{unique}"
    create_topic(clusters["primary"], topic, 2)
    produce_backlog(clusters["primary"], topic, RECORDS, 2)
    consume_and_commit(clusters["primary"], topic, group)
    config = write_config(tmp_path / "mm2.properties", clusters,
                          f"{FLOW}.enabled = true\n{FLOW}.topics = {topic}\nmirrorspark.rest.auth = none\n"
                          f"mirrorspark.flow.lease.group = status-page-{unique}\n"
                          "emit.checkpoints.interval.seconds = 5\n")
    writer, standby = tmp_path / "writer", tmp_path / "standby"
    started: list[subprocess.Popen] = []
    try:
        started.append(start(config, writer))
        wait_role(writer, "writer", 120)
        wait_for_count(clusters["backup"], f"primary.{topic}", RECORDS)
        started.append(start(config, standby))
        wait_role(standby, "standby", 120)
        wait_page(writer, f'data-exact="yes"><td>{group}</td>', 180)

        pages = {}
        for name, state in (("writer", writer), ("standby", standby)):
            url = json.loads((state / "rest.json").read_text())["url"]
            dumped = chromium(binary, f"{url}/status", "--dump-dom", f"--user-data-dir={tmp_path / f'dom-{name}'}")
            assert dumped.returncode == 0, dumped.stderr[-2000:]
            pages[name] = dumped.stdout
            shot = tmp_path / f"{name}.png"
            taken = chromium(binary, f"{url}/status", f"--screenshot={shot}", "--window-size=1280,1200",
                             "--hide-scrollbars", "--force-device-scale-factor=1",
                             f"--user-data-dir={tmp_path / f'shot-{name}'}")
            assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
        flow = FLOW.replace(">", "&gt;")
        assert f'data-flow="{flow}" data-state="running" data-role="writer"' in pages["writer"], pages["writer"][:3000]
        assert f'<td>{group}</td><td class="exact">exact</td>' in pages["writer"]
        assert "last checkpoint emitted: 20" in pages["writer"]
        assert f'data-flow="{flow}" data-state="standby" data-role="standby"' in pages["standby"], \
            pages["standby"][:3000]
        assert badge_pixels(tmp_path / "writer.png", "running") > BADGE_PIXELS
        assert badge_pixels(tmp_path / "writer.png", "standby") == 0
        assert badge_pixels(tmp_path / "standby.png", "standby") > BADGE_PIXELS
        assert badge_pixels(tmp_path / "standby.png", "running") == 0
    finally:
        for proc in started:
            if proc.poll() is None:
                kill9(proc)
                proc.wait(30)
