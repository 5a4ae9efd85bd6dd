"""/docs and /redoc work on a machine without internet (a DR site): their pages reference only this
server, every asset they name is served (without a token, like the pages), and a real headless
Chromium with every non-loopback request sent to a dead proxy renders the operations."""
from __future__ import annotations

import http.client
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import uvicorn
from fastapi import FastAPI
from helpers.chromium import browser, chromium
from helpers.rest_app import AUTH, TOKEN, FakeController, client
from prometheus_client import CollectorRegistry

from mirrorspark.rest.security import DOCS_ASSETS, AllowedHosts, RequestGuard, is_open
from mirrorspark.rest.server import RestServer, RestSettings

PAGES = ("/docs", "/redoc")
EXPECTED_TYPES = {".js": "javascript", ".css": "text/css", ".png": "image/png"}


def referenced_urls(html: str) -> list[str]:
    """Every URL the page loads or points at: src/href attributes, the spec url, and any literal
    http(s) URL anywhere (an inline script could fetch one)."""
    attrs = re.findall(r"""(?:src|href|spec-url)\s*=\s*["']([^"']+)["']""", html)
    spec = re.findall(r"""\burl:\s*['"]([^'"]+)['"]""", html)
    absolute = re.findall(r"""(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}[^\s"'<>)]*""", html)
    return attrs + spec + absolute


@pytest.mark.parametrize("page", PAGES)
def test_pages_reference_only_local_assets_served_without_token(page):
    api, _ = client()
    answer = api.get(page)  # no token, like before
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    urls = referenced_urls(answer.text)
    assert urls, answer.text
    for url in urls:
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc, f"{page} references a remote URL: {url}"
        assert url.startswith("/"), url
    assets = [u for u in urls if u.startswith(DOCS_ASSETS + "/")]
    assert any(a.endswith(".js") for a in assets), urls
    if page == "/docs":
        assert any(a.endswith(".css") for a in assets), urls
    for url in assets:
        got = api.get(url)  # no token: the browser sends none for <script src>
        assert got.status_code == 200, url
        suffix = Path(url).suffix
        assert EXPECTED_TYPES[suffix] in got.headers["content-type"], (url, got.headers["content-type"])
        assert len(got.content) > 1000, url
    spec = api.get("/openapi.json")
    assert spec.status_code == 200 and "/flows" in spec.json()["paths"]
    assert not re.search(r"cdn\.|jsdelivr|unpkg|googleapis|fastapi\.tiangolo\.com", answer.text)


def scope(path: str) -> dict:
    return {"type": "http", "method": "GET", "path": path, "scheme": "http",
            "headers": [(b"host", b"127.0.0.1:8083")]}


@pytest.mark.parametrize("path", [
    "/static/../flows", "/static/..", "/static/./swagger-ui.css", "/static//flows", "/static/x/../../flows",
    "/static/a/b.js", "/static/", "/static", "/static..", "/staticx/swagger-ui.css", "/static\\..\\flows",
    "/static/..\\flows", "/static/%2e%2e/flows", "/docs/../flows", "/docs/", "/static/swagger-ui.css/",
])
def test_asset_prefix_opens_nothing_else(path):
    """Only a plain file name right under the asset prefix is open; any path trick needs the token."""
    guard = RequestGuard(lambda *_: None, token=TOKEN, hosts=AllowedHosts.for_listener("127.0.0.1"))  # type: ignore[arg-type, return-value]
    assert not is_open(path)
    refusal = guard.refusal(scope(path))
    assert refusal is not None and refusal.status_code == 401
    assert guard.refusal({**scope(path), "headers": [(b"host", b"127.0.0.1:8083"),
                                                      (b"authorization", AUTH["Authorization"].encode())]}) is None


def test_asset_files_open():
    assert is_open("/static/swagger-ui-bundle.js") and is_open("/static/redoc.standalone.js")
    assert all(is_open(p) for p in ("/docs", "/redoc", "/openapi.json", "/health"))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RestServer]:
    """A real uvicorn server of the app, token on, as ``mirrorspark run`` starts it."""
    settings = RestSettings.from_config({"mirrorspark.rest.listener": "127.0.0.1:0", "mirrorspark.rest.token": TOKEN})
    rest = RestServer(FakeController(), CollectorRegistry(), settings, tmp_path / "state")
    rest.start()
    try:
        yield rest
    finally:
        rest.stop()


def raw_get(address: str, path: str, headers: dict[str, str] | None = None) -> int:
    """GET ``path`` byte for byte (http.client does not normalise ``..`` as httpx does)."""
    parts = urlsplit(address)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.request("GET", path, headers=headers or {})
        return connection.getresponse().status
    finally:
        connection.close()


def test_real_server_keeps_traversal_behind_the_token(server):
    assert server.address is not None
    assert raw_get(server.address, "/static/swagger-ui.css") == 200
    for path in ("/static/../flows", "/static/%2e%2e/flows", "/static//flows", "/static/..%2fflows"):
        assert raw_get(server.address, path) == 401, path
    assert raw_get(server.address, "/flows") == 401 and raw_get(server.address, "/flows", AUTH) == 200


@pytest.fixture
def cdn_docs() -> Iterator[str]:
    """A stock FastAPI app, whose /docs loads Swagger UI from a CDN: what mirrorspark served before."""
    app = FastAPI()

    @app.get("/flows")
    def flows() -> list[str]:
        return []

    stock = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=stock.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not stock.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stock.started
    port = stock.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/docs"
    finally:
        stock.should_exit = True
        thread.join(10)


def test_docs_render_in_offline_headless_chromium(server, cdn_docs, tmp_path):
    binary = browser()
    if binary is None:
        pytest.skip("no chromium on PATH (scripts/setup.sh installs it where apt-get is available)")
    assert server.address is not None
    started = time.monotonic()
    dumped = chromium(binary, f"{server.address}/docs", "--dump-dom", f"--user-data-dir={tmp_path / 'profile-dom'}")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    # Swagger UI built the operation blocks from /openapi.json, with the assets served locally.
    assert 'class="swagger-ui' in dom, dom[:2000]
    blocks = re.findall(r'class="opblock opblock-(get|post|put|delete)', dom)
    assert len(blocks) >= 5, dom[:4000]
    assert re.search(r'data-path="/flows"', dom) and "/flows/{name}/pause" in dom, dom[:4000]
    assert "Failed to load API definition" not in dom
    redoc = chromium(binary, f"{server.address}/redoc", "--dump-dom", f"--user-data-dir={tmp_path / 'profile-redoc'}")
    assert redoc.returncode == 0 and 'id="operation/flows_flows_get"' in redoc.stdout, redoc.stdout[:2000]
    # The control: the same browser really is offline, so CDN-based docs stay blank there.
    blank = chromium(binary, cdn_docs, "--dump-dom", f"--user-data-dir={tmp_path / 'profile-cdn'}")
    assert blank.returncode == 0 and "cdn.jsdelivr.net" in blank.stdout and "opblock" not in blank.stdout

    shot = tmp_path / "docs.png"
    shooting = chromium(binary, f"{server.address}/docs", f"--screenshot={shot}", "--window-size=1280,2000",
                        "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile-shot'}")
    assert shooting.returncode == 0, shooting.stderr[-2000:]
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    size = shot.stat().st_size
    print(f"screenshot: {shot} ({size} bytes), chromium {time.monotonic() - started:.1f} s")
    assert size > 20_000, size
