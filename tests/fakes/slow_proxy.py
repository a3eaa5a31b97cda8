"""A loopback proxy in front of a cloud's local server that holds chosen requests for a while:
how a test sees what a command says while a cloud's listing is still on its way."""

from __future__ import annotations

import http.client
import ssl
import threading
import time
from collections.abc import Callable
from urllib.parse import urlencode, urlsplit

from spotwise.executor.local_clouds.http import Answer, LoopbackServer, Request

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}

Label = Callable[[Request], str | None]
"""The name of a request to hold (None: forward it at once)."""


class SlowProxy:
    """Forward every request to ``upstream`` (``http://`` or ``https://`` on 127.0.0.1); hold
    each request ``label`` names for ``delay_s`` before forwarding it, and keep when its answer
    went back (:attr:`answered`, ``time.monotonic()``), by label. Over HTTPS with ``tls`` (a
    server context whose certificate ``ca_file`` holds, as the upstream's does)."""

    def __init__(
        self,
        upstream: str,
        label: Label,
        *,
        delay_s: float,
        tls: ssl.SSLContext | None = None,
        ca_file: str | None = None,
    ) -> None:
        self._upstream = urlsplit(upstream)
        self._label, self._delay_s = label, delay_s
        self._client_tls = ssl.create_default_context(cafile=ca_file) if ca_file else None
        self.answered: dict[str, list[float]] = {}
        self._lock = threading.Lock()
        self._server = LoopbackServer(self._forward, tls=tls)
        self.url = self._server.url

    def _forward(self, request: Request) -> Answer:
        label = self._label(request)
        if label is not None:
            time.sleep(self._delay_s)
        host, port = self._upstream.hostname or "127.0.0.1", self._upstream.port
        connection = (
            http.client.HTTPSConnection(host, port, context=self._client_tls, timeout=60)
            if self._upstream.scheme == "https"
            else http.client.HTTPConnection(host, port, timeout=60)
        )
        path = request.path + (f"?{urlencode(request.query)}" if request.query else "")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["X-Forwarded-Host"] = request.header("Host")  # as a proxy says what was asked
        try:
            connection.request(request.method, path, body=request.body or None, headers=headers)
            reply = connection.getresponse()
            body = reply.read()
            kept = {k: v for k, v in reply.getheaders() if k.lower() not in HOP_BY_HOP}
        finally:
            connection.close()
        if label is not None:
            with self._lock:
                self.answered.setdefault(label, []).append(time.monotonic())
        return Answer(reply.status, body, kept)

    def close(self) -> None:
        self._server.close()
