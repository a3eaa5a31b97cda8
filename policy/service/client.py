"""``PolicyClient``: one way to ask for decisions, in-process or over HTTP (the executor's)."""

from __future__ import annotations

import math
import random
from typing import Any, Protocol

import httpx
import numpy as np

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.policy.service.schemas import (
    Decision,
    DecisionRequest,
    JobTerms,
    PoolForecast,
    PoolRank,
)
from spotwise.policy.service.service import DecisionService, RequestError
from spotwise.policy.traces import Pool, TraceSet


class PolicyClient(Protocol):
    """What the executor needs from the policy service."""

    def decide(self, request: DecisionRequest) -> Decision:
        """The next action for the job of ``request``."""

    def rank_pools(self, job: JobTerms) -> list[PoolRank]:
        """Every pool ranked by the expected cost of ``job`` there."""

    def forecast(self, pool: str) -> PoolForecast:
        """The preemption risk of ``pool`` now."""


class InProcessClient:
    """Calls a :class:`DecisionService` directly."""

    def __init__(self, service: DecisionService) -> None:
        self.service = service

    def decide(self, request: DecisionRequest) -> Decision:
        """The service's decision for ``request``."""
        return self.service.decide(request)

    def rank_pools(self, job: JobTerms) -> list[PoolRank]:
        """The service's ranking of its pools for ``job``."""
        return self.service.rank_pools(job)

    def forecast(self, pool: str) -> PoolForecast:
        """The service's forecast for ``pool``."""
        return self.service.forecast(pool)


BUSY_WAIT_S = 120.0
"""Seconds an HTTP client asks a busy or silent server again before it gives up."""
FORECAST_WAIT_S = 3.0
"""Seconds a forecast (advice to move, read while a job is watched) waits a busy server."""
FIRST_PAUSE_S = 0.5
MAX_PAUSE_S = 10.0


class HttpClient:
    """Calls ``spotwise serve`` at ``base_url`` with an optional bearer token.

    A busy server (503) or one that does not answer (refused, reset, timed out) is asked again
    shortly, never taken for an answer: after the 503's ``Retry-After``, else after a pause from
    0.5 s doubling to 10 s, each lengthened by a random 0-50 % (so clients turned away together
    do not all come back together), for up to ``busy_wait_s`` in all; then a
    :class:`RequestError` that says what happened and what to do. Decisions are pure, so asking
    again is safe."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout_s: float = 10.0,
        busy_wait_s: float = BUSY_WAIT_S,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.base_url = base_url
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout_s)
        self.busy_wait_s = busy_wait_s
        self._jitter = random.Random()
        self._clock = clock
        self.retries = 0
        """Requests asked again so far (503s and requests without an answer)."""

    def close(self) -> None:
        """Close the HTTP connections."""
        self._http.close()

    def _send(
        self, method: str, url: str, *, wait_s: float | None = None, **kwargs: Any
    ) -> httpx.Response:
        """The first answer that is not a 503, asking again while ``wait_s`` (default
        ``busy_wait_s``) lasts."""
        began = self._clock.monotonic()
        deadline = began + (self.busy_wait_s if wait_s is None else min(wait_s, self.busy_wait_s))
        tries = 0
        while True:
            tries += 1
            retry_after: float | None = None
            try:
                response = self._http.request(method, url, **kwargs)
            except httpx.UnsupportedProtocol as exc:  # a mistyped URL: asking again won't help
                raise RequestError(f"policy API at {self.base_url}: {exc}", 400) from exc
            except httpx.TransportError as exc:
                problem = f"no answer ({type(exc).__name__}: {str(exc)[:200] or 'no detail'})"
                advice = f"is `spotwise serve` running at {self.base_url}?"
            else:
                if response.status_code != 503:
                    return response
                problem = f"503 {_detail(response)}"[:300]
                advice = "give it more capacity (spotwise serve --workers N) or ask later"
                retry_after = _seconds(response.headers.get("Retry-After"))
            pause = retry_after if retry_after is not None else _backoff(tries)
            left = deadline - self._clock.monotonic()
            if pause > left:
                raise RequestError(
                    f"policy API at {self.base_url} gave no answer in "
                    f"{self._clock.monotonic() - began:.0f} s ({tries} tries; last: {problem}): "
                    f"{advice}",
                    503,
                )
            self.retries += 1
            self._clock.sleep(min(pause * (1 + 0.5 * self._jitter.random()), left))

    def _check(self, response: httpx.Response) -> httpx.Response:
        if response.status_code >= 400:
            raise RequestError(
                f"policy API {response.status_code}: {_detail(response)}", response.status_code
            )
        return response

    def decide(self, request: DecisionRequest) -> Decision:
        """POST /v1/decision: the server's decision for ``request``."""
        response = self._send("POST", "/v1/decision", json=request.model_dump(mode="json"))
        return Decision.model_validate(self._check(response).json())

    def rank_pools(self, job: JobTerms) -> list[PoolRank]:
        """GET /v1/pools: the server's ranking of its pools for ``job``."""
        response = self._send("GET", "/v1/pools", params=job.model_dump(mode="json"))
        return [PoolRank.model_validate(r) for r in self._check(response).json()]

    def forecast(self, pool: str) -> PoolForecast:
        # A forecast only advises a move, and the supervisor reads it while it watches the job
        # (notices, cancels): it waits a busy server a little, not BUSY_WAIT_S.
        """GET /v1/forecast/POOL, waiting a busy server only briefly."""
        response = self._send("GET", f"/v1/forecast/{pool}", wait_s=FORECAST_WAIT_S)
        return PoolForecast.model_validate(self._check(response).json())


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail", response.text)
    except (ValueError, AttributeError):
        detail = response.text
    return str(detail)


def _seconds(value: str | None) -> float | None:
    """A Retry-After in seconds (None: absent, a date or nonsense; then the backoff holds)."""
    try:
        seconds = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return min(seconds, MAX_PAUSE_S * 6) if math.isfinite(seconds) and seconds >= 0 else None


def _backoff(tries: int) -> float:
    return min(FIRST_PAUSE_S * 2 ** (tries - 1), MAX_PAUSE_S)


def in_process_for(
    history: np.ndarray, gap_seconds: int, pools: tuple[str, ...]
) -> InProcessClient:
    """An in-process client over an availability history (pools × ticks up to now)."""
    traces = TraceSet(
        pools=tuple(Pool(name=p) for p in pools), gap_seconds=gap_seconds, available=history
    )
    return InProcessClient(DecisionService(traces))
