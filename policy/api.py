"""The policy HTTP API (FastAPI): decisions, pool rankings, risk forecasts, health.

Every route but ``/healthz`` needs ``Authorization: Bearer <token>`` when the app has a token.
Past ``max_in_flight`` requests at once a request gets 503 with ``Retry-After``
(:mod:`policy.admission`). Run it with ``spotwise serve`` (uvicorn; more workers with
``--workers``).
"""

import hmac
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from spotwise.policy.admission import DEFAULT_MAX_IN_FLIGHT, AdmissionControl
from spotwise.policy.errors import PolicyError
from spotwise.policy.schemas import (
    Decision,
    DecisionRequest,
    Health,
    JobTerms,
    PoolForecast,
    PoolRank,
)
from spotwise.policy.service import DecisionService, RequestError

MAX_BODY_BYTES = 64 * 1024
"""Largest request body accepted (a decision over 64 pools is about 5 KB)."""
MAX_ERRORS = 10
"""Validation errors reported per request: each says where and what, never the input."""


class BodyLimit:
    """ASGI middleware: a body over ``max_bytes`` gets 413 before anything parses it. A body
    with a Content-Length is judged by it; one streamed without (chunked) is read here, at most
    ``max_bytes`` of it, and handed on whole."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None:
            if not length.isdigit() or int(length) > self.max_bytes:
                await self._refuse(send)
                return
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                await self._refuse(send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        response = JSONResponse(
            status_code=413,
            content={"detail": f"request body over {self.max_bytes} bytes; send a smaller one"},
            headers={"Connection": "close"},
        )
        await response({"type": "http"}, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def _validation_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    """Where and what, for each error: no echoed input (it may be huge or not JSON, e.g. NaN)."""
    return [
        {
            "loc": [str(part)[:100] for part in error.get("loc", ())][:20],
            "msg": str(error.get("msg", ""))[:300],
            "type": str(error.get("type", "")),
        }
        for error in exc.errors()[:MAX_ERRORS]
    ]


def create_app(
    service: DecisionService, token: str | None, max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
) -> FastAPI:
    """The API over ``service``; ``token`` None = no auth (loopback only, see ``serve``). The
    routes are plain functions: they run in the thread pool, so the event loop can shed."""
    app = FastAPI(
        title="Spotwise policy API",
        version="1",
        description="Spot / on-demand decisions for training jobs, from real market history.",
    )
    bearer = HTTPBearer(auto_error=False)

    def authorize(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> None:
        if token is None:
            return
        given = credentials.credentials if credentials else ""
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise HTTPException(
                status_code=401,
                detail="missing or wrong bearer token (send Authorization: Bearer <token>)",
                headers={"WWW-Authenticate": "Bearer"},
            )

    app.add_middleware(BodyLimit)
    app.add_middleware(AdmissionControl, max_in_flight=max_in_flight)  # outermost: sheds first

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": _validation_errors(exc)})

    @app.exception_handler(PolicyError)
    async def _policy_error(_: Request, exc: PolicyError) -> JSONResponse:
        status = exc.status if isinstance(exc, RequestError) else 422
        return JSONResponse(status_code=status, content={"detail": str(exc)})

    auth = [Depends(authorize)]

    def openapi() -> dict[str, Any]:
        """The schema, with the pools and policies this service knows named in it (a request
        naming another gets a 4xx), so that a schema-valid request always gets an answer."""
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            schema = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            known = {"type": "string", "enum": list(service.pools)}
            components = schema["components"]["schemas"]
            request = components["DecisionRequest"]["properties"]
            request["pools"]["propertyNames"] = known
            request["policy"]["enum"] = list(service.policies)
            components["SpotState"]["properties"]["pool"] = known
            for parameter in schema["paths"]["/v1/forecast/{pool}"]["get"]["parameters"]:
                if parameter["name"] == "pool":
                    parameter["schema"] = known
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.get("/healthz")
    async def healthz() -> Health:
        """Liveness: the pools known and the policies served."""
        return Health(status="ok", pools=len(service.pools), policies=list(service.policies))

    @app.post("/v1/decision", dependencies=auth, responses={401: {}, 404: {}, 422: {}})
    def decision(request: DecisionRequest) -> Decision:
        """The next action for a job: wait, on-demand, or spot in a pool."""
        return service.decide(request)

    @app.get("/v1/pools", dependencies=auth, responses={401: {}, 422: {}})
    def pools(job: Annotated[JobTerms, Query()]) -> list[PoolRank]:
        """Pools ranked by the expected cost of the job."""
        return service.rank_pools(job)

    @app.get("/v1/forecast/{pool}", dependencies=auth, responses={401: {}, 404: {}})
    def forecast(pool: str) -> PoolForecast:
        """A pool's preemption-risk forecast."""
        return service.forecast(pool)

    return app


def app_from_env() -> FastAPI:
    """The app as ``spotwise serve`` configures it through the environment (uvicorn factory):
    ``SPOTWISE_API_TRACES`` (a trace folder), ``SPOTWISE_API_MODELS`` (the learned models'
    folder, read once here), ``SPOTWISE_API_TOKEN`` and ``SPOTWISE_API_MAX_IN_FLIGHT``."""
    from spotwise.policy.rl.catalog import ModelCatalog, shipped_models
    from spotwise.policy.traces import load_traces
    from spotwise.settings import current

    settings = current()
    if settings.api_traces is None:
        raise PolicyError("SPOTWISE_API_TRACES is not set: start the API with `spotwise serve`")
    traces = load_traces(settings.api_traces)
    models = ModelCatalog(settings.api_models) if settings.api_models else shipped_models()
    return create_app(
        DecisionService(traces, models), settings.api_token or None, settings.api_max_in_flight
    )
