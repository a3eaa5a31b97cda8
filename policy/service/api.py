"""The policy HTTP API (FastAPI): decisions, pool rankings, risk forecasts, health.

Every route under ``/v1/`` needs ``Authorization: Bearer <token>`` when the app has a token.
A request passes, in order: the token (401 at once, nothing read), its body read whole within
``body_timeout_s`` and ``MAX_BODY_BYTES`` (408, 413), then admission (:mod:`.admission`:
past ``max_in_flight`` requests at once, or ``max_per_client`` from one client, 503 with
``Retry-After``). So a client without the token or with a slow body never takes a place.
``/healthz`` says whether the places are all taken (``status: saturated``). The docs (``/docs``
Swagger UI, ``/redoc``) are served from files installed with Spotwise: no CDN, they work
offline. Run it with ``spotwise serve`` (uvicorn; more workers with ``--workers``).
"""

import asyncio
import hmac
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi_offline import FastAPIOffline
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from spotwise.core.environment import DEFAULT_MAX_IN_FLIGHT
from spotwise.policy.errors import PolicyError
from spotwise.policy.service.admission import (
    ADMITTED_PREFIX,
    Admission,
    AdmissionControl,
)
from spotwise.policy.service.schemas import (
    Decision,
    DecisionRequest,
    Health,
    JobQuery,
    PoolForecast,
    PoolRank,
    Problem,
)
from spotwise.policy.service.service import DecisionService, RequestError

MAX_BODY_BYTES = 64 * 1024
"""Largest request body accepted (a decision over 64 pools is about 5 KB)."""
BODY_TIMEOUT_S = 5.0
"""Seconds a request's body may take to arrive whole; past them, 408 and the connection closed
(a client on the slowest link sends 64 KiB in well under that)."""
MAX_ERRORS = 10
"""Validation errors reported per request: each says where and what, never the input."""
UNAUTHORIZED = "missing or wrong bearer token (send Authorization: Bearer <token>)"


def _problem(description: str, **extra: Any) -> dict[str, Any]:
    return {"model": Problem, "description": description, **extra}


REFUSALS: dict[int | str, dict[str, Any]] = {
    400: _problem("The body could not be read (not JSON)."),
    401: _problem(
        "No token or a wrong one: send Authorization: Bearer <token>.",
        headers={"WWW-Authenticate": {"schema": {"type": "string"}}},
    ),
    408: _problem(f"The body did not arrive whole within {BODY_TIMEOUT_S:g} s."),
    413: _problem(f"The body is over {MAX_BODY_BYTES} bytes."),
    422: _problem("The request breaks the schema: each error says where and what."),
    503: _problem(
        "Busy: every place is taken, or this client holds its share of them. Ask again "
        "after Retry-After seconds.",
        headers={
            "Retry-After": {
                "description": "Seconds to wait before asking again.",
                "schema": {"type": "integer"},
            }
        },
    ),
}
"""The answers every authenticated route may give besides 200 (the OpenAPI schema lists them)."""


def _bearer_ok(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


class BearerAuth:
    """ASGI middleware: a request under ``/v1/`` without the bearer token gets 401 at once,
    before its body is read or a place is taken, and its connection is closed."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.token is None
            or scope["type"] != "http"
            or not scope["path"].startswith(ADMITTED_PREFIX)
        ):
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        scheme, _, given = header.partition(" ")
        if scheme.lower() == "bearer" and _bearer_ok(given.strip(), self.token):
            await self.app(scope, receive, send)
            return
        response = JSONResponse(
            status_code=401,
            content={"detail": UNAUTHORIZED},
            headers={"WWW-Authenticate": "Bearer", "Connection": "close"},
        )
        await response({"type": "http"}, _no_receive, send)


class BodyLimit:
    """ASGI middleware: the body is read whole here, at most ``max_bytes`` of it and within
    ``timeout_s``, then handed on. A body over ``max_bytes`` gets 413 (judged by its
    Content-Length when it has one, before anything is read); one that has not arrived whole
    within ``timeout_s`` gets 408. Both close the connection."""

    def __init__(
        self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES, timeout_s: float = BODY_TIMEOUT_S
    ) -> None:
        self.app, self.max_bytes, self.timeout_s = app, max_bytes, timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await self._refuse(
                send, 413, f"request body over {self.max_bytes} bytes; send a smaller one"
            )
            return
        body = bytearray()
        try:
            async with asyncio.timeout(self.timeout_s):  # uvicorn's loop (anyio's costs 2x)
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        return  # the client left: nobody to answer
                    body += message.get("body", b"")
                    if len(body) > self.max_bytes:
                        await self._refuse(
                            send,
                            413,
                            f"request body over {self.max_bytes} bytes; send a smaller one",
                        )
                        return
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            await self._refuse(
                send,
                408,
                f"request body not received whole within {self.timeout_s:g} s ({len(body)} "
                "bytes came); send it at once",
            )
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send, status: int, detail: str) -> None:
        response = JSONResponse(
            status_code=status, content={"detail": detail}, headers={"Connection": "close"}
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
    service: DecisionService,
    token: str | None,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    max_per_client: int | None = None,
    body_timeout_s: float = BODY_TIMEOUT_S,
) -> FastAPI:
    """The API over ``service``; ``token`` None = no auth (loopback only, see ``serve``);
    ``max_per_client`` None = all but a quarter of the places. The routes are plain functions:
    they run in the thread pool, so the event loop can shed."""
    app = FastAPIOffline(
        title="Spotwise policy API",
        version="1",
        description="Spot / on-demand decisions for training jobs, from real market history. "
        "Every route under /v1/ needs Authorization: Bearer <token>; a busy server answers 503 "
        "with Retry-After.",
    )
    bearer = HTTPBearer(auto_error=False)
    admission = Admission(max_in_flight, max_per_client)

    def authorize(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> None:
        """Checked by :class:`BearerAuth` already; here so that the schema names the scheme."""
        if token is None:
            return
        if not _bearer_ok(credentials.credentials if credentials else "", token):
            raise HTTPException(
                status_code=401, detail=UNAUTHORIZED, headers={"WWW-Authenticate": "Bearer"}
            )

    # outermost last: the token, then the body, then a place
    app.add_middleware(AdmissionControl, admission=admission)
    app.add_middleware(BodyLimit, timeout_s=body_timeout_s)
    app.add_middleware(BearerAuth, token=token)

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
        """Liveness (always 200 while the worker runs): the pools known, the policies served,
        and this worker's places: ``status`` is ``saturated`` while every place is taken or a
        request was turned away for want of one in the last 10 s, else ``ok``."""
        figures = admission.health()
        return Health(
            status="saturated" if figures["saturated"] else "ok",
            pools=len(service.pools),
            policies=list(service.policies),
            **figures,
        )

    @app.post(
        "/v1/decision",
        dependencies=auth,
        responses={**REFUSALS, 404: _problem("A pool the service does not know.")},
    )
    def decision(request: DecisionRequest) -> Decision:
        """The next action for a job: wait, on-demand, spot in a pool, or done (its progress
        is past its work)."""
        return service.decide(request)

    @app.get("/v1/pools", dependencies=auth, responses=REFUSALS)
    def pools(job: Annotated[JobQuery, Query()]) -> list[PoolRank]:
        """Pools ranked by the expected cost of the job."""
        return service.rank_pools(job)

    @app.get(
        "/v1/forecast/{pool}",
        dependencies=auth,
        responses={**REFUSALS, 404: _problem("A pool the service does not know.")},
    )
    def forecast(pool: str) -> PoolForecast:
        """A pool's preemption-risk forecast."""
        return service.forecast(pool)

    return app


def app_from_env() -> FastAPI:
    """The app as ``spotwise serve`` configures it through the environment (uvicorn factory):
    ``SPOTWISE_API_TRACES`` (a trace folder), ``SPOTWISE_API_MODELS`` (the learned models'
    folder, read once here), ``SPOTWISE_API_TOKEN``, ``SPOTWISE_API_MAX_IN_FLIGHT`` and
    ``SPOTWISE_API_MAX_PER_CLIENT``."""
    from spotwise.core.settings import current
    from spotwise.policy.rl.catalog import ModelCatalog, shipped_models
    from spotwise.policy.traces import load_traces

    settings = current()
    if settings.api_traces is None:
        raise PolicyError("SPOTWISE_API_TRACES is not set: start the API with `spotwise serve`")
    traces = load_traces(settings.api_traces)
    models = ModelCatalog(settings.api_models) if settings.api_models else shipped_models()
    return create_app(
        DecisionService(traces, models),
        settings.api_token or None,
        settings.api_max_in_flight,
        settings.api_max_per_client,
    )
