"""`spotwise serve` with a token, a hostile neighbour's slow unauthenticated sockets beside it,
and the stranger's own job run with `spotwise run --policy URL`: it completes."""

from __future__ import annotations

import socket
import sys
import time

import httpx
import pytest

from spotwise.console import free_loopback_port
from tests.journeys.conftest import Stranger


@pytest.mark.slow
def test_run_with_the_policy_api_completes_beside_slow_unauthenticated_sockets(
    stranger: Stranger,
) -> None:
    token = stranger.home / "token"
    token.write_text("a-long-random-token\n")
    token.chmod(0o600)
    port = free_loopback_port()
    server = stranger.start("serve", "--port", str(port), "--token-file", str(token))
    url = f"http://127.0.0.1:{port}"
    socks: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.3)
        head = (
            b"POST /v1/decision HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
            b"\r\nContent-Length: 60000\r\n\r\n"
        )
        for _ in range(8):  # the neighbour: headers, 7 bytes of body, no token, then silence
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall(head + b'{"job":')
            socks.append(sock)
        run = stranger.spotwise(
            "run", "--policy", url, "--ckpt", str(stranger.home / "ck"), "--",
            sys.executable, str(stranger.script), str(stranger.home / "ck"),
            str(stranger.home / "out.txt"),
            env={"SPOTWISE_API_TOKEN": "a-long-random-token"},
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        assert "(completed" in run.stdout and "503" not in run.stderr
        assert (stranger.home / "out.txt").exists()
        health = httpx.get(f"{url}/healthz", timeout=10).json()
        assert health["status"] == "ok" and health["in_flight"] == 0
    finally:
        for sock in socks:
            sock.close()
        server.terminate()
        server.communicate(timeout=60)
