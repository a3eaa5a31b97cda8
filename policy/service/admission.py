"""Admission control for the policy API: past ``max_in_flight`` requests being served, a request
gets 503 with ``Retry-After`` at once, instead of a place in a queue without end. The server
then stays at its capacity and the requests it serves keep their latency; a client told to
come back can (the supervisor's client retries), and one that cannot wait goes elsewhere.

A place is taken only by a request that has earned it: the API's middleware in front of this
one answers a request without the token (401) and reads the body whole, within a deadline
(408), before a place is asked for, so an unauthenticated or slow client holds no place. One
client (one peer address) may hold at most ``max_per_client`` places, so that one busy token
holder cannot take every place from the others.

Decisions run in the server's thread pool, so the event loop stays free to turn requests away
while the pool works.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

ADMITTED_PREFIX = "/v1/"
"""Paths that take a place: the decisions, rankings and forecasts. ``/healthz`` (a load
balancer's health check must not be shed), the schema and the docs never do."""
SATURATED_WINDOW_S = 10.0
"""``/healthz`` says saturated while every place is taken or a request was turned away for
want of one within this many seconds."""


def default_max_per_client(max_in_flight: int) -> int:
    """Places one client may hold by default: all but a quarter of them (at least one left to
    the others where there are two or more)."""
    return max(1, max_in_flight - max(1, max_in_flight // 4))


def per_client_limit(max_in_flight: int, max_per_client: int | None) -> int:
    """The places one client may hold: ``max_per_client`` (default
    :func:`default_max_per_client`), never more than there are."""
    return min(max_per_client or default_max_per_client(max_in_flight), max_in_flight)


class Admission:
    """The places of one worker: how many are taken, by which client, and how many requests
    were turned away (the figures ``/healthz`` reports)."""

    def __init__(
        self,
        max_in_flight: int,
        max_per_client: int | None = None,
        retry_after_s: int = 1,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.max_in_flight = max_in_flight
        self.max_per_client = per_client_limit(max_in_flight, max_per_client)
        self.retry_after_s = retry_after_s
        self.in_flight = 0
        self.by_client: Counter[str] = Counter()
        self.shed = 0
        """Requests turned away because every place was taken."""
        self.shed_client = 0
        """Requests turned away because their client held its share of places."""
        self._last_shed: float | None = None
        self._clock = clock

    def take(self, client: str) -> str | None:
        """Take a place for ``client``; None when taken, else why not."""
        if self.in_flight >= self.max_in_flight:
            self.shed += 1
            self._last_shed = self._clock.monotonic()
            return f"busy: {self.in_flight} requests in progress"
        if self.by_client[client] >= self.max_per_client:
            self.shed_client += 1
            return (
                f"busy: this client already has {self.by_client[client]} of the "
                f"{self.max_in_flight} places"
            )
        self.in_flight += 1
        self.by_client[client] += 1
        return None

    def give(self, client: str) -> None:
        """A request of ``client`` is answered: free its place."""
        self.in_flight -= 1
        self.by_client[client] -= 1
        if self.by_client[client] <= 0:
            del self.by_client[client]

    @property
    def saturated(self) -> bool:
        """Every place taken now, or a request turned away for want of one lately."""
        if self.in_flight >= self.max_in_flight:
            return True
        return self._last_shed is not None and (
            self._clock.monotonic() - self._last_shed < SATURATED_WINDOW_S
        )

    def health(self) -> dict[str, Any]:
        """The figures ``/healthz`` reports."""
        return {
            "saturated": self.saturated,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "max_per_client": self.max_per_client,
            "shed": self.shed,
            "shed_per_client": self.shed_client,
        }


def client_of(scope: Scope) -> str:
    """The peer address a request came from (uvicorn puts a trusted proxy's client there)."""
    client = scope.get("client")
    return str(client[0]) if client else ""


class AdmissionControl:
    """ASGI middleware: at most ``admission.max_in_flight`` requests under ``/v1/`` inside
    ``app`` at once, at most ``max_per_client`` of them from one client; the rest get 503 with
    ``Retry-After: retry_after_s``. Give it ``max_in_flight`` (and ``max_per_client``) or an
    :class:`Admission` to share its figures."""

    def __init__(
        self,
        app: ASGIApp,
        max_in_flight: int | None = None,
        max_per_client: int | None = None,
        admission: Admission | None = None,
    ) -> None:
        if admission is None:
            if max_in_flight is None:
                raise ValueError("give max_in_flight or an Admission")
            admission = Admission(max_in_flight, max_per_client)
        self.app, self.admission = app, admission

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(ADMITTED_PREFIX):
            await self.app(scope, receive, send)
            return
        client = client_of(scope)
        refused = self.admission.take(client)
        if refused is not None:
            await refuse_busy(send, refused, self.admission.retry_after_s)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.admission.give(client)


async def refuse_busy(send: Send, why: str, retry_after_s: int) -> None:
    """A 503 that says why and when to come back."""
    body = json.dumps({"detail": f"{why}; retry after {retry_after_s} s"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(retry_after_s).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
