"""REST safe defaults without brokers: token, Host and Origin checks, rate limit on translate, JSON
errors, the generated token file and `mirrorspark status` finding it."""
from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path

import pytest
from helpers.rest_app import AUTH, BASE, TOKEN, FakeController, client
from prometheus_client import CollectorRegistry

from mirrorspark.errors import ConfigError
from mirrorspark.pipeline.rest_controller import TranslationCache
from mirrorspark.private_files import write_private
from mirrorspark.rest.security import AllowedHosts, TokenBucket
from mirrorspark.rest.server import RestServer, RestSettings


def test_token_required_everywhere_but_health_and_metrics():
    api, controller = client()
    assert api.get("/flows").status_code == 401
    assert api.get("/flows", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert api.get("/flows", headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
    refused = api.post("/flows/a->b/pause")
    assert refused.status_code == 401 and "token" in refused.json()["detail"]
    assert refused.headers["www-authenticate"] == "Bearer"
    assert api.get("/config").status_code == 401 and api.get("/no-such-path").status_code == 401
    assert controller.actions == []
    assert api.get("/flows", headers=AUTH).status_code == 200
    assert api.post("/flows/a->b/pause", headers=AUTH).json() == {"flow": "a->b", "state": "paused"}
    assert api.get("/health").status_code == 200 and api.get("/metrics").status_code == 200


def test_no_token_means_no_authentication():
    api, _ = client(token=None)
    assert api.get("/flows").status_code == 200


@pytest.mark.parametrize("host", ["evil.example.com", "evil.example.com:8083", "127.0.0.1.nip.io:8083"])
def test_foreign_host_refused(host):
    api, controller = client()
    answer = api.post("/flows/a->b/pause", headers={**AUTH, "Host": host})
    assert answer.status_code == 421 and "DNS rebinding" in answer.json()["detail"]
    assert api.get("/health", headers={"Host": host}).status_code == 421
    assert controller.actions == []


@pytest.mark.parametrize("host", ["127.0.0.1:8083", "localhost:8083", "[::1]:8083", "LOCALHOST", "localhost."])
def test_loopback_hosts_accepted(host):
    api, _ = client()
    assert api.get("/flows", headers={**AUTH, "Host": host}).status_code == 200


def test_listener_host_and_configured_names():
    hosts = AllowedHosts.for_listener("10.1.2.3", ["mirrorspark-driver"])
    assert hosts.allows("10.1.2.3:8083") and hosts.allows("mirrorspark-driver:8083") and hosts.allows("localhost")
    assert not hosts.allows("10.9.9.9:8083") and not hosts.allows("attacker.example")
    wildcard = AllowedHosts.for_listener("0.0.0.0")
    assert wildcard.allows("10.9.9.9:8083") and wildcard.allows("[fe80::1]:80")  # an address cannot be rebound
    assert not wildcard.allows("attacker.example:8083")


def test_cross_origin_refused_same_origin_accepted():
    api, controller = client()
    for origin in ("http://evil.example.com", "null", "http://127.0.0.1:9999", "https://127.0.0.1:8083"):
        answer = api.post("/flows/a->b/pause", headers={**AUTH, "Origin": origin})
        assert answer.status_code == 403 and "cross-origin" in answer.json()["detail"], origin
        assert not any(h.lower().startswith("access-control-") for h in answer.headers)
    assert controller.actions == []
    assert api.post("/flows/a->b/pause", headers={**AUTH, "Origin": BASE}).status_code == 200
    preflight = api.options("/flows/a->b/pause", headers={"Origin": "http://evil.example.com",
                                                         "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 403 and "access-control-allow-origin" not in preflight.headers


def test_translate_rate_limited():
    clock = [0.0]
    api, controller = client(limit=TokenBucket(rate=2, burst=3, clock=lambda: clock[0]))
    url = "/offsets/translate?group=g&source=a&target=b"
    assert [api.get(url, headers=AUTH).status_code for _ in range(3)] == [200, 200, 200]
    limited = api.get(url, headers=AUTH)
    assert (limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
            and "retry" in limited.json()["detail"])
    clock[0] += 0.5  # one call's worth of tokens back at 2/s
    assert api.get(url, headers=AUTH).status_code == 200
    assert controller.translations == 4


def test_errors_are_json_without_traceback():
    api, _ = client()
    crashed = api.post("/flows/a->b/resume", headers=AUTH)
    assert crashed.status_code == 500 and crashed.headers["content-type"] == "application/json"
    assert "RuntimeError" in crashed.json()["detail"] and "Traceback" not in crashed.text
    bad = api.post("/flows/a->b/restart", headers=AUTH)
    assert bad.status_code == 400 and "bootstrap.servers" in bad.json()["detail"]
    assert api.get("/flows/x->y", headers=AUTH).status_code == 404


def test_translation_cache_reuses_clients_and_reads_for_ttl():
    made, reads = [], []

    class Client:
        def remote_consumer_offsets(self, group: str, source: str) -> dict:
            reads.append((group, source))
            return {("t", 0): len(reads)}

    cache = TranslationCache(lambda s, t: made.append((s, t)) or Client(), ttl=60)
    assert cache.offsets("g", "a", "b") == cache.offsets("g", "a", "b") == {("t", 0): 1}
    cache.offsets("h", "a", "b")
    assert made == [("a", "b")] and reads == [("g", "a"), ("h", "a")]
    cache.ttl = 0
    time.sleep(0.01)
    cache.offsets("g", "a", "b")
    assert len(reads) == 3 and made == [("a", "b")]


def test_token_file_private_from_creation(tmp_path, monkeypatch):
    modes: list[int] = []
    real_open = os.open

    def spy(path, flags, mode=0o777, *args, **kwargs):
        modes.append(mode)
        assert flags & os.O_EXCL and flags & os.O_CREAT
        return real_open(path, flags, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    target = tmp_path / "rest.token"
    target.write_text("old")
    write_private(target, "new\n")
    assert modes == [0o600] and target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_settings_resolved_and_checked():
    assert RestSettings.from_config({}) == RestSettings()
    settings = RestSettings.from_config({"mirrorspark.rest.listener": "0.0.0.0:8083", "mirrorspark.rest.token": "t",
                                         "mirrorspark.rest.allowed.hosts": "a, b",
                                         "mirrorspark.rest.plaintext.allowed": "true"})
    assert (settings.host, settings.port, settings.token, settings.allowed_hosts) == ("0.0.0.0", 8083, "t", ("a", "b"))
    with pytest.raises(ConfigError, match="token or none"):
        RestSettings.from_config({"mirrorspark.rest.auth": "basic"})
    with pytest.raises(ConfigError, match="remove one"):
        RestSettings.from_config({"mirrorspark.rest.auth": "none", "mirrorspark.rest.token": "t"})


def serve(tmp_path: Path, **top: str) -> RestServer:
    settings = RestSettings.from_config({"mirrorspark.rest.listener": "127.0.0.1:0", **top})
    server = RestServer(FakeController(), CollectorRegistry(), settings, tmp_path)
    server.start()
    return server


def test_generated_token_written_and_used_by_status(tmp_path, monkeypatch, capsys):
    from mirrorspark.cli import status_command

    monkeypatch.delenv("MIRRORSPARK_REST_TOKEN", raising=False)
    server = serve(tmp_path)
    try:
        token_file = tmp_path / "rest.token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        assert len(token) >= 32 and server.token == token
        marker = json.loads((tmp_path / "rest.json").read_text())
        assert marker["token_file"] == "rest.token" and token not in json.dumps(marker)
        base, found = status_command.endpoint(tmp_path, None, None)
        assert base == server.address and found == token
        assert status_command.endpoint(tmp_path, "http://elsewhere:1", None) == ("http://elsewhere:1", None)
        assert status_command.get_json(f"{base}/flows", found)[0]["name"] == "a->b"
        status_command.status(state_dir=tmp_path, url=None, token_file=None, cacert=None, as_json=False)
        assert "a->b" in capsys.readouterr().out
    finally:
        server.stop()
    assert not token_file.exists() and not (tmp_path / "rest.json").exists()


def test_configured_token_not_written(tmp_path):
    server = serve(tmp_path, **{"mirrorspark.rest.token": TOKEN})
    try:
        assert not (tmp_path / "rest.token").exists() and server.token == TOKEN
        assert json.loads((tmp_path / "rest.json").read_text())["token_file"] is None
    finally:
        server.stop()


def test_no_auth_beyond_loopback_warns(tmp_path, caplog):
    settings = RestSettings(host="0.0.0.0", port=0, auth="none")
    server = RestServer(FakeController(), CollectorRegistry(), settings, tmp_path)
    with caplog.at_level("WARNING", logger="mirrorspark.rest.server"):
        server.start()
    try:
        assert any("without authentication" in r.getMessage() for r in caplog.records)
    finally:
        server.stop()


def test_concurrent_translations_of_a_pair_share_one_read():
    reads = []
    gate = threading.Event()

    class Slow:
        def remote_consumer_offsets(self, group: str, source: str) -> dict:
            reads.append(group)
            gate.wait(2)
            return {}

    cache = TranslationCache(lambda s, t: Slow(), ttl=60)
    threads = [threading.Thread(target=cache.offsets, args=("g", "a", "b")) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.1)
    gate.set()
    for thread in threads:
        thread.join()
    assert reads == ["g"]
