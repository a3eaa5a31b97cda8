"""Admission control on a real server on 127.0.0.1: past the limit, requests get 503 with
Retry-After at once while the admitted ones are served; the health check is never shed and says
when every place is taken; a request without the token or with a slow body never takes a place;
one client cannot take every place; the policy client waits out a busy server."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from spotwise.policy.service.admission import AdmissionControl
from spotwise.policy.service.api import create_app
from spotwise.policy.service.client import HttpClient
from spotwise.policy.service.schemas import Decision, DecisionRequest
from spotwise.policy.service.service import DecisionService, RequestError
from spotwise.policy.traces import load_traces
from tests.conftest import API_TOKEN, DATA

LIMIT = 3
RELEASE = threading.Event()
AUTH = {"Authorization": f"Bearer {API_TOKEN}"}
BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"


def slow(_: object) -> JSONResponse:
    """Holds its place until the test lets go (runs in the thread pool, like decisions)."""
    RELEASE.wait(10)
    return JSONResponse({"ok": True})


def healthz(_: object) -> JSONResponse:
    return JSONResponse({"status": "ok"})


@contextmanager
def serving(app: ASGIApp) -> Iterator[str]:
    """``app`` under uvicorn on a free loopback port, in a thread; stopped however the test
    ends."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not running.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        running.should_exit = True
        thread.join(10)


@pytest.fixture
def server() -> Iterator[str]:
    app = AdmissionControl(
        Starlette(routes=[Route("/v1/slow", slow), Route("/healthz", healthz)]),
        max_in_flight=LIMIT,
        max_per_client=LIMIT,
    )
    RELEASE.clear()
    try:
        with serving(app) as base:
            yield base
    finally:
        RELEASE.set()


def test_past_the_limit_requests_are_shed_at_once_and_the_admitted_ones_served(
    server: str,
) -> None:
    async def burst() -> list[tuple[int, float, str | None]]:
        async with httpx.AsyncClient(base_url=server, timeout=20) as client:

            async def one() -> tuple[int, float, str | None]:
                began = time.perf_counter()
                response = await client.get("/v1/slow")
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


@pytest.mark.slow
def test_the_policy_client_waits_out_a_busy_server(server: str) -> None:
    def hold_all_places() -> None:
        for _ in range(LIMIT):
            threading.Thread(
                target=httpx.get, args=(f"{server}/v1/slow",), kwargs={"timeout": 20}, daemon=True
            ).start()
        time.sleep(0.5)

    hold_all_places()
    threading.Timer(1.5, RELEASE.set).start()  # the server frees up in 1.5 s
    client = HttpClient(server, busy_wait_s=10)
    began = time.monotonic()
    response = client._send("GET", "/v1/slow")
    assert response.status_code == 200 and 1.0 <= time.monotonic() - began < 5
    RELEASE.clear()
    hold_all_places()
    impatient = HttpClient(server, busy_wait_s=0)
    with pytest.raises(RequestError, match=r"gave no answer in 0 s \(1 tries; last: 503 busy"):
        impatient._send("GET", "/v1/slow")  # no time to wait: a clear error, not the 503
    RELEASE.set()


# The real API: the token, the body, then a place ---------------------------------------------


class HeldService(DecisionService):
    """The bundled traces' service, whose decisions wait while ``go`` is clear (so that a test
    can fill every place with real requests)."""

    def __init__(self) -> None:
        super().__init__(load_traces(BUNDLED))
        self.go = threading.Event()
        self.go.set()

    def decide(self, request: DecisionRequest) -> Decision:
        self.go.wait(30)
        return super().decide(request)


SERVICE = HeldService()
REQUEST = {
    "job": {
        "compute_hours": 48,
        "deadline_hours": 60,
        "spot_price": 0.918,
        "on_demand_price": 3.06,
    },
    "state": {"elapsed_hours": 1.0, "progress_hours": 0.5},
    "pools": {name: {"available": True} for name in SERVICE.pools},
}


@pytest.fixture
def api() -> Iterator[str]:
    """The policy API (4 places, 3 per client, bodies in within 2 s) on 127.0.0.1."""
    SERVICE.go.set()
    try:
        with serving(create_app(SERVICE, API_TOKEN, max_in_flight=4, body_timeout_s=2.0)) as base:
            yield base
    finally:
        SERVICE.go.set()


def slow_post(base: str, token: str | None = None) -> socket.socket:
    """A socket that sends ``POST /v1/decision`` headers announcing 60,000 bytes, then 7 bytes
    of body, and waits."""
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=15)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = (
        f"POST /v1/decision HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"{auth}Content-Length: 60000\r\n\r\n"
    )
    sock.sendall(head.encode() + b'{"job":')
    return sock


def answer_of(sock: socket.socket) -> tuple[int, dict[str, Any], bool]:
    """(status, JSON body, whether the server then closed the connection)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed without an answer after {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {k.lower(): v for k, v in (ln.split(": ", 1) for ln in lines[1:])}
    while len(rest) < int(fields["content-length"]):
        rest += sock.recv(65536)
    closed = sock.recv(1) == b""
    return int(lines[0].split()[1]), json.loads(rest), closed


def health(base: str) -> dict[str, Any]:
    response = httpx.get(f"{base}/healthz", timeout=15)
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"still not {what} after 30 s"
        time.sleep(0.05)


def decide_from(base: str, source: str, results: list[int]) -> threading.Thread:
    """A thread that posts one decision from the loopback address ``source``."""

    def post() -> None:
        transport = httpx.HTTPTransport(local_address=source)
        with httpx.Client(transport=transport, timeout=60) as client:
            results.append(
                client.post(f"{base}/v1/decision", json=REQUEST, headers=AUTH).status_code
            )

    thread = threading.Thread(target=post, daemon=True)
    thread.start()
    return thread


def test_slow_unauthenticated_sockets_take_no_place_from_token_holders(api: str) -> None:
    """Eight sockets announce 60,000 bytes, send 7 and no token, and stay: each is told 401 at
    once and closed, and every token holder's decision is served meanwhile."""
    socks = [slow_post(api) for _ in range(8)]
    try:
        for sock in socks:
            status, body, closed = answer_of(sock)
            assert status == 401 and "bearer token" in body["detail"] and closed
        client = HttpClient(api, API_TOKEN, busy_wait_s=0)  # a 503 would fail at once
        request = DecisionRequest.model_validate(REQUEST)
        assert all(client.decide(request).action == "spot" for _ in range(8))
        assert client.retries == 0
        figures = health(api)
        assert figures["status"] == "ok" and figures["in_flight"] == 0 and figures["shed"] == 0
        client.close()
    finally:
        for sock in socks:
            sock.close()


@pytest.mark.slow
def test_a_slow_body_gets_408_and_holds_no_place_meanwhile(api: str) -> None:
    socks = [slow_post(api, API_TOKEN) for _ in range(6)]  # more than all four places
    try:
        response = httpx.post(f"{api}/v1/decision", json=REQUEST, headers=AUTH, timeout=15)
        assert response.status_code == 200  # the slow bodies hold no place
        for sock in socks:
            status, body, closed = answer_of(sock)
            assert status == 408 and "within 2 s" in body["detail"] and closed
    finally:
        for sock in socks:
            sock.close()


def test_one_client_cannot_take_every_place_and_healthz_says_when_all_are_taken(
    api: str,
) -> None:
    SERVICE.go.clear()
    first: list[int] = []
    other: list[int] = []
    threads = [decide_from(api, "127.0.0.1", first) for _ in range(3)]
    try:
        wait_for(lambda: health(api)["in_flight"] == 3, "3 in flight")
        figures = health(api)
        assert figures["max_per_client"] == 3 and figures["status"] == "ok"
        decide_from(api, "127.0.0.1", first).join(30)  # a 4th from the same client
        assert first == [503] and health(api)["shed_per_client"] == 1
        threads.append(decide_from(api, "127.0.0.2", other))  # another client gets the last
        wait_for(lambda: health(api)["in_flight"] == 4, "4 in flight")
        figures = health(api)
        assert figures["status"] == "saturated" and figures["saturated"] is True
        shed = httpx.post(f"{api}/v1/decision", json=REQUEST, headers=AUTH, timeout=15)
        assert shed.status_code == 503 and shed.headers["retry-after"] == "1"
        assert "busy: 4 requests in progress" in shed.json()["detail"]
    finally:
        SERVICE.go.set()
        for thread in threads:
            thread.join(30)
    assert sorted(first) == [200, 200, 200, 503] and other == [200]
    figures = health(api)
    assert figures["in_flight"] == 0 and figures["shed"] == 1
    assert figures["status"] == "saturated"  # it turned one away within the last 10 s


@pytest.mark.slow
def test_the_policy_client_gets_through_a_503_burst(api: str) -> None:
    """While every place is taken the client is told 503 and asks again after Retry-After
    (jittered); once places free up it gets its decision, and no job would have failed."""
    SERVICE.go.clear()
    results: list[int] = []
    threads = [decide_from(api, "127.0.0.1", results) for _ in range(3)]
    threads.append(decide_from(api, "127.0.0.2", results))
    try:
        wait_for(lambda: health(api)["in_flight"] == 4, "4 in flight")
        impatient = HttpClient(api, API_TOKEN, busy_wait_s=0.5)
        with pytest.raises(RequestError, match=r"gave no answer in .* last: 503 busy"):
            impatient.decide(DecisionRequest.model_validate(REQUEST))
        impatient.close()
        patient = HttpClient(api, API_TOKEN, busy_wait_s=60)
        got: list[Decision] = []
        asking = threading.Thread(
            target=lambda: got.append(patient.decide(DecisionRequest.model_validate(REQUEST))),
            daemon=True,
        )
        asking.start()
        wait_for(lambda: health(api)["shed"] >= 2, "turned away twice")  # the burst
        SERVICE.go.set()
        asking.join(60)
        assert got and got[0].action == "spot" and patient.retries >= 1
        patient.close()
    finally:
        SERVICE.go.set()
        for thread in threads:
            thread.join(30)
    assert results == [200] * 4


@pytest.mark.slow
def test_advice_the_supervisor_reads_while_it_watches_waits_little_and_a_bad_url_not_at_all() -> (
    None
):
    """A forecast (advice to move) from a server that does not answer gives up in seconds,
    not the two minutes a decision may wait: the supervisor reads it between a job's notices.
    A URL of no known scheme is refused at once."""
    import time

    from spotwise.console import free_loopback_port
    from spotwise.policy.service.client import BUSY_WAIT_S, FORECAST_WAIT_S
    from spotwise.policy.service.service import RequestError

    silent = HttpClient(f"http://127.0.0.1:{free_loopback_port()}")
    began = time.monotonic()
    with pytest.raises(RequestError, match="gave no answer"):
        silent.forecast("us-east-1a_v100_1")
    assert time.monotonic() - began < FORECAST_WAIT_S + 5 < BUSY_WAIT_S
    began = time.monotonic()
    with pytest.raises(RequestError, match="policy API at htp://x"):
        HttpClient("htp://x").forecast("p")
    assert time.monotonic() - began < 2
