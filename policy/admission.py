"""Admission control for the policy API: past ``max_in_flight`` requests being served, a request
gets 503 with ``Retry-After`` at once, instead of a place in a queue without end. The server
then stays at its capacity and the requests it serves keep their latency; a client told to
come back can (the supervisor's client retries), and one that cannot wait goes elsewhere.

Decisions run in the server's thread pool, so the event loop stays free to turn requests away
while the pool works.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the settings read the default below without importing Starlette
    from starlette.types import ASGIApp, Receive, Scope, Send

DEFAULT_MAX_IN_FLIGHT = 4
"""Requests served at once per worker: with ~5 ms of work each, a served request waits at
most ~20 ms behind the others."""
EXEMPT = frozenset({"/healthz"})
"""Paths always answered (a load balancer's health check must not be shed)."""


class AdmissionControl:
    """ASGI middleware: at most ``max_in_flight`` HTTP requests inside ``app`` at once; the
    rest get 503 with ``Retry-After: retry_after_s``. ``shed`` counts them."""

    def __init__(self, app: ASGIApp, max_in_flight: int, retry_after_s: int = 1) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.app, self.max_in_flight, self.retry_after_s = app, max_in_flight, retry_after_s
        self.in_flight = 0
        self.shed = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in EXEMPT:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_in_flight:
            self.shed += 1
            await self._refuse(send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {
                "detail": f"busy: {self.in_flight} requests in progress; retry after "
                f"{self.retry_after_s} s"
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(self.retry_after_s).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
