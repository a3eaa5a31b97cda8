"""``PolicyClient``: one way to ask for decisions, in-process or over HTTP (the executor's)."""

from __future__ import annotations

import time
from typing import Any, Protocol

import httpx
import numpy as np

from spotwise.policy.schemas import Decision, DecisionRequest, JobTerms, PoolForecast, PoolRank
from spotwise.policy.service import DecisionService, RequestError
from spotwise.policy.traces import Pool, TraceSet


class PolicyClient(Protocol):
    """What the executor needs from the policy service."""

    def decide(self, request: DecisionRequest) -> Decision: ...

    def rank_pools(self, job: JobTerms) -> list[PoolRank]: ...

    def forecast(self, pool: str) -> PoolForecast: ...


class InProcessClient:
    """Calls a :class:`DecisionService` directly."""

    def __init__(self, service: DecisionService) -> None:
        self.service = service

    def decide(self, request: DecisionRequest) -> Decision:
        return self.service.decide(request)

    def rank_pools(self, job: JobTerms) -> list[PoolRank]:
        return self.service.rank_pools(job)

    def forecast(self, pool: str) -> PoolForecast:
        return self.service.forecast(pool)


class HttpClient:
    """Calls ``spotwise serve`` at ``base_url`` with an optional bearer token. A busy server's
    503 is retried after its ``Retry-After`` for up to ``busy_wait_s`` seconds."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout_s: float = 10.0,
        busy_wait_s: float = 30.0,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout_s)
        self.busy_wait_s = busy_wait_s

    def close(self) -> None:
        self._http.close()

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """The request, again after each 503 while ``busy_wait_s`` lasts."""
        deadline = time.monotonic() + self.busy_wait_s
        while True:
            response = self._http.request(method, url, **kwargs)
            if response.status_code != 503:
                return response
            try:
                pause = min(float(response.headers.get("Retry-After", "1")), 10.0)
            except ValueError:
                pause = 1.0
            if time.monotonic() + pause > deadline:
                return response
            time.sleep(pause)

    def _check(self, response: httpx.Response) -> httpx.Response:
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            raise RequestError(f"policy API {response.status_code}: {detail}", response.status_code)
        return response

    def decide(self, request: DecisionRequest) -> Decision:
        response = self._send("POST", "/v1/decision", json=request.model_dump(mode="json"))
        return Decision.model_validate(self._check(response).json())

    def rank_pools(self, job: JobTerms) -> list[PoolRank]:
        response = self._send("GET", "/v1/pools", params=job.model_dump(mode="json"))
        return [PoolRank.model_validate(r) for r in self._check(response).json()]

    def forecast(self, pool: str) -> PoolForecast:
        response = self._send("GET", f"/v1/forecast/{pool}")
        return PoolForecast.model_validate(self._check(response).json())


def in_process_for(
    history: np.ndarray, gap_seconds: int, pools: tuple[str, ...]
) -> InProcessClient:
    """An in-process client over an availability history (pools × ticks up to now)."""
    traces = TraceSet(
        pools=tuple(Pool(name=p) for p in pools), gap_seconds=gap_seconds, available=history
    )
    return InProcessClient(DecisionService(traces))
