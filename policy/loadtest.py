"""An open-loop load test of the policy API: requests sent on a fixed schedule, latency measured
from each request's scheduled time (so a slow server cannot hide its queueing)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import httpx
import numpy as np


def decision_bodies(pools: list[str], n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` varied, valid decision requests over ``pools``."""
    rng = np.random.default_rng(seed)
    bodies = []
    for _ in range(n):
        elapsed = float(rng.uniform(0, 55))
        progress = float(min(elapsed, rng.uniform(0, 48)))
        bodies.append(
            {
                "policy": "best",
                "job": {
                    "compute_hours": 48.0,
                    "deadline_hours": 60.0,
                    "changeover_hours": 0.2,
                    "spot_price": 0.918,
                    "on_demand_price": 3.06,
                },
                "state": {"elapsed_hours": elapsed, "progress_hours": progress},
                "pools": {p: {"available": bool(rng.random() < 0.5)} for p in pools},
            }
        )
    return bodies


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadTest:
    """Latency percentiles (from each request's due time, so queueing counts) and errors."""

    p50_ms: float
    p99_ms: float
    errors: int
    requests: int
    rps: float
    achieved_rps: float
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


async def _run(
    base_url: str,
    token: str | None,
    bodies: list[dict[str, Any]],
    rps: float,
    seconds: float,
    on_second: Callable[[int], None] | None,
) -> LoadTest:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    latencies: list[float] = []
    errors = 0
    async with httpx.AsyncClient(
        base_url=base_url, headers=headers, limits=limits, timeout=10.0
    ) as client:

        async def one(body: dict[str, Any], due: float) -> None:
            nonlocal errors
            try:
                response = await client.post("/v1/decision", json=body)
                if response.status_code != 200:
                    errors += 1
            except httpx.HTTPError:
                errors += 1
            latencies.append(time.perf_counter() - due)

        n = round(rps * seconds)
        began = time.perf_counter()
        tasks = []
        for i in range(n):
            due = began + i / rps
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(bodies[i % len(bodies)], due)))
            if on_second and (i + 1) % max(1, round(rps)) == 0:
                on_second((i + 1) // max(1, round(rps)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - began
    ms = np.array(latencies) * 1000.0
    return LoadTest(
        p50_ms=round(float(np.percentile(ms, 50)), 3),
        p99_ms=round(float(np.percentile(ms, 99)), 3),
        errors=errors,
        requests=n,
        rps=rps,
        achieved_rps=round(n / elapsed, 1),
        seconds=seconds,
    )


def load_test(
    base_url: str,
    token: str | None,
    bodies: list[dict[str, Any]],
    *,
    rps: float,
    seconds: float,
    on_second: Callable[[int], None] | None = None,
) -> LoadTest:
    """Send ``rps`` decision requests a second for ``seconds``; latency percentiles and errors."""
    return asyncio.run(_run(base_url, token, bodies, rps, seconds, on_second))
