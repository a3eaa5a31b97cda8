"""Admission control on a real server on 127.0.0.1: past the limit, requests get 503 with
Retry-After at once while the admitted ones are served; the health check is never shed; the
policy client waits out a busy server."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from spotwise.policy.admission import AdmissionControl

LIMIT = 3
RELEASE = threading.Event()


def slow(_: object) -> JSONResponse:
    """Holds its place until the test lets go (runs in the thread pool, like decisions)."""
    RELEASE.wait(10)
    return JSONResponse({"ok": True})


def healthz(_: object) -> JSONResponse:
    return JSONResponse({"status": "ok"})


@pytest.fixture
def server() -> Iterator[str]:
    app = AdmissionControl(
        Starlette(routes=[Route("/slow", slow), Route("/healthz", healthz)]), max_in_flight=LIMIT
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not running.started and time.monotonic() < deadline:
        time.sleep(0.02)
    RELEASE.clear()
    yield f"http://127.0.0.1:{port}"
    RELEASE.set()
    running.should_exit = True
    thread.join(10)


def test_past_the_limit_requests_are_shed_at_once_and_the_admitted_ones_served(
    server: str,
) -> None:
    async def burst() -> list[tuple[int, float, str | None]]:
        async with httpx.AsyncClient(base_url=server, timeout=20) as client:

            async def one() -> tuple[int, float, str | None]:
                began = time.perf_counter()
                response = await client.get("/slow")
                return (
                    response.status_code,
                    time.perf_counter() - began,
                    response.headers.get("retry-after"),
                )

            tasks = [asyncio.create_task(one()) for _ in range(LIMIT + 5)]
            await asyncio.sleep(1.0)  # all in: LIMIT held, the rest answered
            health = await client.get("/healthz")
            assert health.status_code == 200  # never shed
            RELEASE.set()
            return list(await asyncio.gather(*tasks))

    results = asyncio.run(burst())
    served = [r for r in results if r[0] == 200]
    shed = [r for r in results if r[0] == 503]
    assert (len(served), len(shed)) == (LIMIT, 5)
    assert all(retry == "1" for _, _, retry in shed)
    assert max(took for _, took, _ in shed) < 0.5  # told at once, not after the slow ones
    assert min(took for _, took, _ in served) >= 0.9  # these waited for the release


def test_the_policy_client_waits_out_a_busy_server(server: str) -> None:
    from spotwise.policy.client import HttpClient

    def hold_all_places() -> None:
        for _ in range(LIMIT):
            threading.Thread(
                target=httpx.get, args=(f"{server}/slow",), kwargs={"timeout": 20}, daemon=True
            ).start()
        time.sleep(0.5)

    hold_all_places()
    threading.Timer(1.5, RELEASE.set).start()  # the server frees up in 1.5 s
    client = HttpClient(server, busy_wait_s=10)
    began = time.monotonic()
    response = client._send("GET", "/slow")
    assert response.status_code == 200 and 1.0 <= time.monotonic() - began < 5
    RELEASE.clear()
    hold_all_places()
    impatient = HttpClient(server, busy_wait_s=0)
    assert impatient._send("GET", "/slow").status_code == 503  # no time to wait: the 503
    RELEASE.set()
