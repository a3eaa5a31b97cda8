"""The policy HTTP API (FastAPI): decisions, pool rankings, risk forecasts, health.

Every route but ``/healthz`` needs ``Authorization: Bearer <token>`` when the app has a token.
Run it with ``spotwise serve`` (uvicorn; more workers with ``--workers``).
"""

import hmac
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from policy.errors import PolicyError
from policy.policies.base import REGISTRY
from policy.schemas import Decision, DecisionRequest, Health, JobTerms, PoolForecast, PoolRank
from policy.service import DecisionService, RequestError


def create_app(service: DecisionService, token: str | None) -> FastAPI:
    """The API over ``service``; ``token`` None = no auth (loopback only, see ``serve``)."""
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

    @app.exception_handler(PolicyError)
    async def _policy_error(_: Request, exc: PolicyError) -> JSONResponse:
        status = exc.status if isinstance(exc, RequestError) else 422
        return JSONResponse(status_code=status, content={"detail": str(exc)})

    auth = [Depends(authorize)]

    @app.get("/healthz")
    async def healthz() -> Health:
        """Liveness: the pools known and the policies served."""
        import policy.policies  # noqa: F401

        return Health(
            status="ok", pools=len(service.pools), policies=sorted([*REGISTRY, "best", "ppo"])
        )

    @app.post("/v1/decision", dependencies=auth, responses={401: {}, 404: {}, 422: {}})
    async def decision(request: DecisionRequest) -> Decision:
        """The next action for a job: wait, on-demand, or spot in a pool."""
        return service.decide(request)

    @app.get("/v1/pools", dependencies=auth, responses={401: {}, 422: {}})
    async def pools(job: Annotated[JobTerms, Query()]) -> list[PoolRank]:
        """Pools ranked by the expected cost of the job."""
        return service.rank_pools(job)

    @app.get("/v1/forecast/{pool}", dependencies=auth, responses={401: {}, 404: {}})
    async def forecast(pool: str) -> PoolForecast:
        """A pool's preemption-risk forecast."""
        return service.forecast(pool)

    return app


def app_from_env() -> FastAPI:
    """The app as ``spotwise serve`` configures it through the environment (uvicorn factory):
    ``SPOTWISE_API_TRACES`` (a trace folder) and ``SPOTWISE_API_TOKEN``."""
    import os
    from pathlib import Path

    from policy.traces import load_traces

    traces = load_traces(Path(os.environ["SPOTWISE_API_TRACES"]))
    return create_app(DecisionService(traces), os.environ.get("SPOTWISE_API_TOKEN") or None)
