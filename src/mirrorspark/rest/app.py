"""The REST API: flows and their state, progress and lag, pause / resume / restart, offset
translation, and Prometheus metrics. A configured token guards everything but ``/health`` and
``/metrics``; output never carries a secret (the config view is redacted)."""
from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from pydantic import BaseModel

from mirrorspark.rest.controller import Controller, UnknownFlow

_bearer = HTTPBearer(auto_error=False)


class Translated(BaseModel):
    topic: str
    partition: int
    offset: int


class FlowAction(BaseModel):
    flow: str
    state: str


def create_app(controller: Controller, registry: CollectorRegistry, token: str | None) -> FastAPI:
    app = FastAPI(title="mirrorspark", version="1",
                  description="Control and observe a running mirrorspark replicator.")

    def authorised(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
        if token is None:
            return
        if credentials is None or not hmac.compare_digest(credentials.credentials.encode(), token.encode()):
            raise HTTPException(401, "missing or wrong token: send 'Authorization: Bearer <mirrorspark.rest.token>'",
                                headers={"WWW-Authenticate": "Bearer"})

    guarded = [Depends(authorised)]

    @app.exception_handler(UnknownFlow)
    async def unknown_flow(_: Request, exc: UnknownFlow) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.get("/health", summary="Liveness: 200 while the process serves requests")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics", summary="Prometheus metrics", response_class=Response)
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/flows", dependencies=guarded, summary="Every flow with its state, progress and lag")
    def flows() -> list[dict[str, Any]]:
        return controller.flows()

    @app.get("/flows/{name}", dependencies=guarded, summary="One flow, with per-partition figures and lag")
    def flow(name: str) -> dict[str, Any]:
        return controller.flow(name)

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
        return controller.translate(group, source, target)

    @app.get("/config", dependencies=guarded, summary="The resolved configuration, secrets redacted")
    def config() -> dict[str, Any]:
        return controller.config()

    return app
