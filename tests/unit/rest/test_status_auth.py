"""The status page's token rules: the same token as the API; a browser, which cannot send a bearer
header, gets a form, and posting the token there sets a cookie (an HMAC of the token, never the token)
that opens ``GET /status`` and nothing else. Host and Origin checks as for every route."""
from __future__ import annotations

import hashlib
import hmac

import pytest
from fastapi.testclient import TestClient
from helpers.status_flows import StatusController
from prometheus_client import CollectorRegistry

from mirrorspark.rest.app import create_app
from mirrorspark.rest.security import STATUS_COOKIE, TokenBucket

TOKEN = "status-page-token-value"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BASE = "http://127.0.0.1:8083"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def api(token: str | None = TOKEN, base_url: str = BASE, logins: TokenBucket | None = None) -> TestClient:
    app = create_app(StatusController(), CollectorRegistry(), token, login_limit=logins)
    return TestClient(app, base_url=base_url, follow_redirects=False)


def login(client: TestClient, token: str = TOKEN):
    return client.post("/status/login", content=f"token={token}", headers=FORM)


def test_without_the_token_a_form_with_it_the_page():
    client = api()
    refused = client.get("/status")
    assert refused.status_code == 401 and refused.headers["content-type"].startswith("text/html")
    assert '<form method="post" action="/status/login">' in refused.text and 'name="token"' in refused.text
    assert "mirrorspark-" not in refused.text and "primary-&gt;backup" not in refused.text  # nothing of the flows
    assert client.get("/status", headers={"Authorization": "Bearer wrong"}).status_code == 401
    page = client.get("/status", headers=AUTH)
    assert page.status_code == 200 and 'data-flow="primary-&gt;backup"' in page.text


def test_the_root_redirects_to_the_page_without_a_token():
    answer = api().get("/")
    assert answer.status_code == 303 and answer.headers["location"] == "/status"


def test_login_sets_a_cookie_holding_an_hmac_of_the_token():
    client = api()
    answer = login(client)
    assert answer.status_code == 303 and answer.headers["location"] == "/status"
    cookie = answer.headers["set-cookie"]
    attributes = [part.strip().lower() for part in cookie.split(";")]
    assert "httponly" in attributes and "samesite=strict" in attributes and "path=/status" in attributes
    assert "secure" not in attributes  # plain http: a Secure cookie would never come back
    value = cookie.split(";")[0].split("=", 1)[1]
    assert TOKEN not in cookie and value != hashlib.sha256(TOKEN.encode()).hexdigest()
    assert len(value) == 64 and value != hmac.new(b"", TOKEN.encode(), hashlib.sha256).hexdigest()
    page = client.get("/status", headers={"Cookie": f"{STATUS_COOKIE}={value}"})
    assert page.status_code == 200 and 'data-flow="primary-&gt;backup"' in page.text


def test_secure_cookie_over_https():
    answer = login(api(base_url="https://127.0.0.1:8083"))
    assert answer.status_code == 303
    assert "secure" in [part.strip().lower() for part in answer.headers["set-cookie"].split(";")]


def cookie_of(client: TestClient) -> dict[str, str]:
    value = login(client).headers["set-cookie"].split(";")[0].split("=", 1)[1]
    return {"Cookie": f"{STATUS_COOKIE}={value}"}


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/flows"), ("GET", "/flows/primary->backup"), ("GET", "/config"),
    ("GET", "/offsets/translate?group=g&source=a&target=b"), ("POST", "/flows/primary->backup/pause"),
    ("POST", "/flows/primary->backup/resume"), ("POST", "/flows/primary->backup/restart"), ("POST", "/status"),
    ("PUT", "/status"), ("GET", "/status/"), ("GET", "/status/x"),
])
def test_the_cookie_opens_the_page_only(method, path):
    client = api()
    cookie = cookie_of(client)
    answer = client.request(method, path, headers=cookie)
    assert answer.status_code == 401, (method, path, answer.status_code)
    assert client.get("/status", headers=cookie).status_code == 200


def test_a_wrong_token_or_another_process_cookie_is_refused():
    client = api()
    wrong = login(client, "not-the-token")
    assert wrong.status_code == 401 and "wrong token" in wrong.text and "set-cookie" not in wrong.headers
    other = cookie_of(api())  # same token, another process's key
    assert client.get("/status", headers=other).status_code == 401
    assert client.get("/status", headers={"Cookie": f"{STATUS_COOKIE}={TOKEN}"}).status_code == 401


def test_guessing_is_slowed():
    client = api(logins=TokenBucket(rate=0.001, burst=2))
    assert [login(client, "guess").status_code for _ in range(3)] == [401, 401, 429]


def test_host_and_origin_checks_stay():
    client = api()
    assert client.get("/status", headers={**AUTH, "Host": "evil.example"}).status_code == 421
    assert login(client).status_code == 303
    foreign = client.post("/status/login", content=f"token={TOKEN}",
                          headers={**FORM, "Origin": "http://evil.example"})
    assert foreign.status_code == 403 and "set-cookie" not in foreign.headers
    own = client.post("/status/login", content=f"token={TOKEN}", headers={**FORM, "Origin": BASE})
    assert own.status_code == 303


def test_without_authentication_the_page_is_open():
    client = api(token=None)
    assert client.get("/status").status_code == 200
    answer = login(client, "anything")
    assert answer.status_code == 303 and "set-cookie" not in answer.headers
