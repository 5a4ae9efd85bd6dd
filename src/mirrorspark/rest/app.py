"""The REST API: flows and their state, progress and lag, pause / resume / restart, offset
translation, and Prometheus metrics. ``RequestGuard`` (rest/security.py) checks Host, Origin and
the token before any route; output never carries a secret (the config view and every text of a flow
are redacted), and errors are JSON with a message, never a traceback. ``/docs`` (Swagger UI) and ``/redoc`` load their
JavaScript and CSS from this server (``fastapi-offline``'s copies of swagger-ui-dist and redoc, under
``DOCS_ASSETS``), never from a CDN, so they work on a site without internet. ``/status`` is an HTML page
for people (``status_page``), under the same token rules (with a cookie, see ``security``)."""
from __future__ import annotations

import hmac
import logging
import secrets
from typing import Annotated, Any
from urllib.parse import parse_qs

from confluent_kafka import KafkaException
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi_offline import FastAPIOffline
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from pydantic import BaseModel, Field

from mirrorspark.config.redaction import current as redactor
from mirrorspark.errors import ConfigError, Conflict, MirrorsparkError, NotFound
from mirrorspark.partition import OffsetRun
from mirrorspark.rest.controller import Controller
from mirrorspark.rest.history import History
from mirrorspark.rest.security import (
    DOCS_ASSETS,
    STATUS_COOKIE,
    AllowedHosts,
    RequestGuard,
    TokenBucket,
    status_cookie,
    token_matches,
)
from mirrorspark.rest.status_page import LOGIN_PATH, STATUS_PATH, login_form, render_error, render_status
from mirrorspark.version import version

log = logging.getLogger(__name__)
_bearer = HTTPBearer(auto_error=False)
TRANSLATE_RATE, TRANSLATE_BURST = 5.0, 10  # calls a second; each may read a checkpoints topic
# A flow in these states does its part (unless its view says ``healthy`` itself: a flow degraded only by a
# loss it reported replicates as it should); ``paused`` is an operator's decision, and a pod taken out of
# its Service while paused could not be resumed through it.
READY_STATES = frozenset({"running", "paused", "standby"})
LOGIN_RATE, LOGIN_BURST = 1.0, 5  # token guesses a second on the status page's form
LOGIN_BODY_LIMIT = 4096  # bytes of a login form: a token and nothing else
# The page loads nothing: no script, no remote style, image or font; forms post to this server only.
PAGE_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
                "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                                           "frame-ancestors 'none'; base-uri 'none'"}

# The error family's HTTP answers, {"detail": message}; the rest of the family, like any other
# exception, is an internal error (500, traceback logged).
STATUS: dict[type[MirrorsparkError], int] = {ConfigError: 400, NotFound: 404, Conflict: 409}


class Translated(BaseModel):
    topic: str
    partition: int
    offset: int


class FlowAction(BaseModel):
    flow: str
    state: str


class MoveAside(BaseModel):
    """One source partition's records from the copy's end to ``end``, copied aside by ``reconcile``;
    ``copied``: runs ``[upstream, downstream, count]`` found on the target past the offset mapping."""
    topic: str = Field(min_length=1)
    partition: int = Field(ge=0)
    copied: list[tuple[int, int, int]] = Field(default_factory=list)
    end: int = Field(ge=0)


class MoveAsideRequest(BaseModel):
    moves: list[MoveAside] = Field(min_length=1)


class Position(BaseModel):
    topic: str = Field(min_length=1)
    partition: int = Field(ge=0)
    offset: int = Field(ge=0)


class PositionsRequest(BaseModel):
    positions: list[Position] = Field(min_length=1)


def create_app(controller: Controller, registry: CollectorRegistry, token: str | None,
               hosts: AllowedHosts | None = None, translate_limit: TokenBucket | None = None,
               history: History | None = None, login_limit: TokenBucket | None = None) -> FastAPI:
    """``token``: required on every route but the open ones (``security.is_open``; None: no authentication);
    ``hosts``: accepted ``Host`` names (default: loopback only); ``history``: the status page's samples
    (``RestServer`` starts its sampler; without one the charts wait for samples)."""
    # FastAPIOffline: a FastAPI app whose /docs and /redoc (get_swagger_ui_html / get_redoc_html, no
    # Google fonts) point at its bundled assets, mounted with StaticFiles at DOCS_ASSETS.
    app = FastAPIOffline(title="mirrorspark", version=version(), static_url=DOCS_ASSETS,
                         description="Control and observe a running mirrorspark replicator.")
    cookie_key = secrets.token_bytes(32)  # the status page's cookies lapse with the process
    app.add_middleware(RequestGuard, token=token, hosts=hosts or AllowedHosts.for_listener("127.0.0.1"),
                       cookie_key=cookie_key)
    limit = translate_limit or TokenBucket(TRANSLATE_RATE, TRANSLATE_BURST)
    logins = login_limit or TokenBucket(LOGIN_RATE, LOGIN_BURST)
    samples = history or History(flows=controller.flows)

    def authorised(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
                   request: Request) -> None:
        """Declares the bearer scheme in OpenAPI; re-checks what ``RequestGuard`` already did."""
        if token is not None and not token_matches(token, request.headers.get("authorization")):
            raise HTTPException(401, "missing or wrong token", headers={"WWW-Authenticate": "Bearer"})

    guarded = [Depends(authorised)]

    async def family_error(_: Request, exc: Exception) -> JSONResponse:
        status = next(STATUS[kind] for kind in type(exc).__mro__ if kind in STATUS)  # the closest class
        return JSONResponse({"detail": redactor().text(str(exc))}, status_code=status)

    for kind in STATUS:
        app.add_exception_handler(kind, family_error)

    @app.exception_handler(KafkaException)
    async def kafka_error(_: Request, exc: KafkaException) -> JSONResponse:
        reason = exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else str(exc)
        return JSONResponse({"detail": f"Kafka request failed: {redactor().text(reason)}"}, status_code=502)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        # The stack goes to the log (secrets scrubbed there), the client gets one line.
        log.error("REST %s %s failed", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"detail": f"internal error ({type(exc).__name__}): {redactor().text(str(exc))}; "
                                       "see the mirrorspark log"}, status_code=500)

    @app.get("/health", summary="Liveness: 200 unless a flow this instance writes has failed for good (503)")
    def health() -> JSONResponse:
        failed = [view["name"] for view in controller.flows() if view.get("state") == "failed"]
        if failed:
            return JSONResponse({"status": "failed", "failed": failed}, status_code=503)
        return JSONResponse({"status": "ok", "version": version()})

    @app.get("/ready", summary="Readiness: 200 when every flow here runs (or is paused) or waits as a healthy standby")
    def ready() -> JSONResponse:
        views = controller.flows()
        waiting = {view["name"]: view.get("state") for view in views
                   if not view.get("healthy", view.get("state") in READY_STATES)}
        if waiting:
            return JSONResponse({"status": "not ready", "flows": waiting}, status_code=503)
        return JSONResponse({"status": "ready", "flows": {view["name"]: view.get("role") for view in views}})

    @app.get("/metrics", summary="Prometheus metrics", response_class=Response)
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    # A flow's error and reasons quote whatever failed (a client's message, a setting), so every text of
    # a flow is redacted here, whoever wrote it.
    @app.get("/flows", dependencies=guarded, summary="Every flow with its state, progress and lag")
    def flows() -> list[dict[str, Any]]:
        return redactor().value(controller.flows())

    @app.get("/flows/{name}", dependencies=guarded, summary="One flow, with per-partition figures and lag")
    def flow(name: str) -> dict[str, Any]:
        return redactor().value(controller.flow(name))

    @app.post("/flows/{name}/pause", dependencies=guarded, response_model=FlowAction,
              summary="Finish the batch in flight, commit it, and stop reading")
    def pause(name: str) -> dict[str, Any]:
        return controller.pause(name)

    @app.post("/flows/{name}/resume", dependencies=guarded, response_model=FlowAction,
              summary="Continue from the last committed batch")
    def resume(name: str) -> dict[str, Any]:
        return controller.resume(name)

    @app.post("/flows/{name}/restart", dependencies=guarded, response_model=FlowAction,
              summary="Stop and start the flow's query (e.g. after a failure)")
    def restart(name: str) -> dict[str, Any]:
        return controller.restart(name)

    @app.get("/flows/{name}/copy-ends", dependencies=guarded,
             summary="Per source partition: the source and target offsets after the last record copied")
    def copy_ends(name: str) -> list[dict[str, Any]]:
        return controller.copy_ends(name)

    @app.post("/flows/{name}/move-aside", dependencies=guarded,
              summary="A paused flow skips source records `mirrorspark reconcile` copied aside")
    def move_aside(name: str, request: MoveAsideRequest) -> list[dict[str, Any]]:
        return controller.move_aside(name, [(m.topic, m.partition, [OffsetRun(*run) for run in m.copied], m.end)
                                            for m in request.moves])

    @app.post("/flows/{name}/translate", dependencies=guarded,
              summary="Source positions (the next record to read) as target offsets, from the flow's exact offset "
                      "mapping: `promote` moves share groups with it (they have no checkpoints)")
    def translate_positions(name: str, request: PositionsRequest) -> list[dict[str, Any]]:
        return controller.translate_positions(name, [(p.topic, p.partition, p.offset) for p in request.positions])

    @app.get("/offsets/translate", dependencies=guarded, response_model=list[Translated],
             summary="A group's committed source offsets translated for the target (from checkpoints)")
    def translate(group: Annotated[str, Query(min_length=1)], source: Annotated[str, Query(min_length=1)],
                  target: Annotated[str, Query(min_length=1)]) -> list[dict[str, Any]]:
        wait = limit.take()
        if wait:
            raise HTTPException(429, f"too many translate calls (at most {limit.rate:g}/s); retry later",
                                headers={"Retry-After": TokenBucket.retry_after(wait)})
        return controller.translate(group, source, target)

    @app.get("/config", dependencies=guarded, summary="The resolved configuration, secrets redacted")
    def config() -> dict[str, Any]:
        return controller.config()

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse(STATUS_PATH, status_code=303)

    # The token (or the status cookie) is checked by RequestGuard: a browser sends no bearer header.
    @app.get(STATUS_PATH, response_class=HTMLResponse, include_in_schema=False)  # a page for people, not an API
    def status() -> HTMLResponse:
        try:
            page = render_status(redactor().value(controller.status()), samples.series)
        except Exception as exc:  # the page says it failed (logged with its stack); the flows never notice
            log.error("the status page could not be built", exc_info=exc)
            return HTMLResponse(render_error(redactor().text(f"{type(exc).__name__}: {exc}")), status_code=500,
                                headers=PAGE_HEADERS)
        return HTMLResponse(page, headers=PAGE_HEADERS)

    @app.post(LOGIN_PATH, include_in_schema=False)
    async def login(request: Request) -> Response:
        """The form's token, checked like a bearer one; a cookie for ``GET /status`` only in exchange."""
        if token is None:
            return RedirectResponse(STATUS_PATH, status_code=303)
        if logins.take():
            return HTMLResponse(login_form("too many attempts; wait a few seconds"), status_code=429,
                                headers={**PAGE_HEADERS, "Retry-After": "1"})
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > LOGIN_BODY_LIMIT:
                return HTMLResponse(login_form("the form is too large"), status_code=413, headers=PAGE_HEADERS)
        given = parse_qs(body.decode("utf-8", "replace")).get("token", [""])[0].strip()
        if not hmac.compare_digest(given.encode(), token.encode()):
            return HTMLResponse(login_form("wrong token"), status_code=401, headers=PAGE_HEADERS)
        answer = RedirectResponse(STATUS_PATH, status_code=303)
        answer.set_cookie(STATUS_COOKIE, status_cookie(token, cookie_key), path=STATUS_PATH, httponly=True,
                          samesite="strict", secure=request.url.scheme == "https")
        return answer

    return app
