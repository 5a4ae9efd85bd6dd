"""The REST API: flows and their state, progress and lag, pause / resume / restart, offset
translation, and Prometheus metrics. ``RequestGuard`` (rest/security.py) checks Host, Origin and
the token before any route; output never carries a secret (the config view and every text of a flow
are redacted), and errors are JSON with a message, never a traceback. ``/docs`` (Swagger UI) and ``/redoc`` load their
JavaScript and CSS from this server (``fastapi-offline``'s copies of swagger-ui-dist and redoc, under
``DOCS_ASSETS``), never from a CDN, so they work on a site without internet."""
from __future__ import annotations

import logging
from typing import Annotated, Any

from confluent_kafka import KafkaException
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi_offline import FastAPIOffline
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from pydantic import BaseModel

from mirrorspark.config.redaction import current as redactor
from mirrorspark.errors import ConfigError, Conflict, MirrorsparkError, NotFound
from mirrorspark.rest.controller import Controller
from mirrorspark.rest.security import DOCS_ASSETS, AllowedHosts, RequestGuard, TokenBucket, token_matches

log = logging.getLogger(__name__)
_bearer = HTTPBearer(auto_error=False)
TRANSLATE_RATE, TRANSLATE_BURST = 5.0, 10  # calls a second; each may read a checkpoints topic

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


def create_app(controller: Controller, registry: CollectorRegistry, token: str | None,
               hosts: AllowedHosts | None = None, translate_limit: TokenBucket | None = None) -> FastAPI:
    """``token``: required on every route but the open ones (``security.is_open``; None: no authentication);
    ``hosts``: accepted ``Host`` names (default: loopback only)."""
    # FastAPIOffline: a FastAPI app whose /docs and /redoc (get_swagger_ui_html / get_redoc_html, no
    # Google fonts) point at its bundled assets, mounted with StaticFiles at DOCS_ASSETS.
    app = FastAPIOffline(title="mirrorspark", version="1", static_url=DOCS_ASSETS,
                         description="Control and observe a running mirrorspark replicator.")
    app.add_middleware(RequestGuard, token=token, hosts=hosts or AllowedHosts.for_listener("127.0.0.1"))
    limit = translate_limit or TokenBucket(TRANSLATE_RATE, TRANSLATE_BURST)

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

    @app.get("/health", summary="Liveness: 200 while the process serves requests")
    def health() -> dict[str, str]:
        return {"status": "ok"}

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

    return app
