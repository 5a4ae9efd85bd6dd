"""What keeps the REST API to the people meant to use it, in front of every route.

MM2's REST API trusts its network; mirrorspark's can pause or restart flows and serve the
configuration, and often listens on a laptop or a shared host. So, by default:

- a bearer token is required (generated at start when none is configured, written mode 0600 next
  to ``rest.json`` so local CLI commands of the same user find it);
- the ``Host`` header must name this server (loopback, the listener's host, configured names),
  which defeats DNS rebinding: a web page whose name re-resolves to 127.0.0.1 still sends its own
  name as ``Host``;
- any request carrying an ``Origin`` other than the server's own is refused, and no CORS header is
  ever sent, so a web page cannot drive the API from a browser on the same host.

Every refusal is a JSON ``{"detail": ...}`` answer, like the API's other errors, but on the status
page: a browser cannot send a bearer header, so ``GET /status`` without the token answers a small
HTML form; posting the token there sets a cookie holding an HMAC of it (``status_cookie``), which
is accepted for ``GET /status`` only, never for the control POSTs or any other route.
"""
from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import posixpath
import secrets
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import HTMLResponse, JSONResponse, Response

from mirrorspark.rest.status_page import LOGIN_PATH, STATUS_PATH, login_form

TOKEN_FILE = "rest.token"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "localhost.localdomain", "ip6-localhost"})
WILDCARDS = frozenset({"", "0.0.0.0", "::", "*"})
# Readable without a token: liveness, Prometheus (no secrets, no control) and the API's own schema.
# The root only redirects to the status page, and the status page's login form checks the token itself.
OPEN_PATHS = frozenset({"/health", "/ready", "/metrics", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc",
                        "/", LOGIN_PATH})
STATUS_COOKIE = "mirrorspark_status"
# The pages' own JavaScript, CSS and icon (rest/app.py mounts them here): also readable without a token.
DOCS_ASSETS = "/static"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def generate_token() -> str:
    return secrets.token_urlsafe(32)


def read_token(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def token_matches(expected: str, authorization: str | None) -> bool:
    """``Authorization: Bearer <expected>``, compared in constant time."""
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), expected.encode())


def status_cookie(token: str, key: bytes) -> str:
    """The status page's cookie: an HMAC of the token under ``key``, a secret of this process. Neither
    the token nor anything that opens another route; it lapses when the process restarts."""
    return hmac.new(key, token.encode(), hashlib.sha256).hexdigest()


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The name part of a ``Host`` header: ``[::1]:80`` -> ``::1``, ``Example.com.:8083`` -> ``example.com``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    name = header.rsplit(":", 1)[0] if header.count(":") == 1 else header
    return name.rstrip(".")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def is_open(path: str) -> bool:
    """Whether ``path`` (the decoded ``scope["path"]``) is served without a token: ``OPEN_PATHS``, or a
    file right under ``DOCS_ASSETS``. The prefix is only trusted for a path already in normal form:
    ``/static/../flows``, ``/static//x``, ``/static/./x`` or a backslash could otherwise lead a later
    normalisation (a proxy, a future route) out of the asset folder with no token asked."""
    if path in OPEN_PATHS:
        return True
    name = path[len(DOCS_ASSETS) + 1:]
    return (path.startswith(DOCS_ASSETS + "/") and name != "" and "/" not in name and name not in (".", "..")
            and "\\" not in name and "\x00" not in name and posixpath.normpath(path) == path)


class AllowedHosts:
    """Names a client may put in ``Host``. On a wildcard listener any IP literal is accepted too:
    DNS rebinding needs a name (the attacker's), so an address can never be one."""

    def __init__(self, names: Iterable[str], any_ip: bool = False) -> None:
        self.names = frozenset(_host_name(n) for n in names if n.strip())
        self.any_ip = any_ip

    @classmethod
    def for_listener(cls, host: str, extra: Iterable[str] = ()) -> AllowedHosts:
        names = set(LOOPBACK_NAMES) | set(extra)
        wildcard = host.strip("[]") in WILDCARDS
        if wildcard:
            names |= {socket.gethostname(), socket.getfqdn()}
        else:
            names.add(host.strip("[]"))
        return cls(names, any_ip=wildcard)

    def allows(self, header: str) -> bool:
        name = _host_name(header)
        return name in self.names or (self.any_ip and _is_ip(name))


class RequestGuard:
    """ASGI middleware: Host check, Origin check, bearer token (or, for ``GET /status`` only, the
    status cookie made with ``cookie_key``); before any route runs."""

    def __init__(self, app: ASGIApp, token: str | None, hosts: AllowedHosts, cookie_key: bytes | None = None) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts
        self.cookie = status_cookie(token, cookie_key) if token is not None and cookie_key is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        host = headers.get("host")
        if host is not None and not self.hosts.allows(host):
            return JSONResponse({"detail": f"Host {_host_name(host)!r} is not a name of this server; refused to "
                                           "stop DNS rebinding (add it to mirrorspark.rest.allowed.hosts)"},
                                status_code=421)
        origin = headers.get("origin")
        if origin is not None:
            own = f"{scope.get('scheme', 'http')}://{host}" if host else None
            if own is None or origin.rstrip("/").lower() != own.lower():
                return JSONResponse({"detail": "cross-origin requests are refused: the REST API is not for web "
                                               "pages of other origins"}, status_code=403)
        path = scope.get("path", "")
        if (self.token is not None and not is_open(path)
                and not token_matches(self.token, headers.get("authorization"))):
            if path == STATUS_PATH and scope.get("method") == "GET":
                if self._cookie_matches(headers):
                    return None
                return HTMLResponse(login_form(), status_code=401, headers={"Cache-Control": "no-store"})
            return JSONResponse(
                {"detail": "missing or wrong token: send 'Authorization: Bearer <token>' (mirrorspark.rest.token, "
                           "or the generated one in <state-dir>/rest.token, which `mirrorspark status` reads)"},
                status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return None

    def _cookie_matches(self, headers: Headers) -> bool:
        given = cookie_parser(headers.get("cookie", "")).get(STATUS_COOKIE)
        return self.cookie is not None and given is not None and hmac.compare_digest(given.encode(),
                                                                                      self.cookie.encode())


class TokenBucket:
    """At most ``rate`` calls a second on average, ``burst`` at once; protects the brokers from a
    client looping on an expensive endpoint."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, float(burst), clock
        self.tokens = float(burst)
        self.updated = clock()
        self._lock = threading.Lock()

    def take(self) -> float:
        """0 when the call may go ahead, else the seconds to wait before retrying."""
        with self._lock:
            now = self.clock()
            self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
            self.updated = now
            if self.tokens >= 1:
                self.tokens -= 1
                return 0.0
            return (1 - self.tokens) / self.rate

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))
