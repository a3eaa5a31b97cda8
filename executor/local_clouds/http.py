"""A loopback HTTP(S) server whose answers come from one method, for the cloud API fakes."""

from __future__ import annotations

import json
import signal
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """One request as the server received it (the query kept in order, keys repeated)."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str:
        """A header's value, whatever its case ('' when absent)."""
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), "")

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


class _TlsServer(ThreadingHTTPServer):
    """A threading server whose connections are wrapped in TLS by ``context``."""

    def __init__(self, address: tuple[str, int], handler: type, context: ssl.SSLContext) -> None:
        super().__init__(address, handler)
        self.context = context

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = self.socket.accept()
        # the handshake happens in the handler's thread, not in the accept loop
        wrapped = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return wrapped, address


class LoopbackServer:
    """Serve ``answer(request)`` on 127.0.0.1 (a free port) until :meth:`close`: over HTTPS
    with ``tls`` (a server context holding the certificate), else plain HTTP."""

    def __init__(
        self,
        answer: Callable[[Request], Answer],
        port: int = 0,
        *,
        tls: ssl.SSLContext | None = None,
        content_type: str = "application/json; charset=UTF-8",
    ) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                request = Request(
                    method=self.command,
                    path=parts.path,
                    query=tuple(parse_qsl(parts.query, keep_blank_values=True)),
                    headers=dict(self.headers.items()),
                    body=body,
                )
                reply = answer(request)
                data = (
                    reply.body
                    if isinstance(reply.body, bytes)
                    else json.dumps(reply.body).encode()
                    if reply.body is not None
                    else b""
                )
                self.send_response(reply.status)
                headers = {"Content-Type": content_type, **reply.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _serve

            def log_message(self, *args: object) -> None:
                pass

        address = ("127.0.0.1", port)
        self._server = (
            ThreadingHTTPServer(address, Handler)
            if tls is None
            else _TlsServer(address, Handler, tls)
        )
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        scheme = "http" if tls is None else "https"
        self.url = f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait_for_signal(self) -> None:
        """Block until SIGTERM or SIGINT (a fake run as a command), then close."""
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        stop.wait()
        self.close()
