"""`spotwise serve` with a token, a hostile neighbour's slow unauthenticated sockets beside it,
and the stranger's own job run with `spotwise run --policy URL`: it completes. The API's docs
(docs/api.md) typed as written: their server, their curl and their Python, their answers."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from spotwise.console import free_loopback_port
from tests.conftest import REPO
from tests.journeys.conftest import Stranger

API_DOCS = REPO / "docs" / "api.md"


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


def _blocks(text: str) -> dict[str, list[str]]:
    """The fenced code blocks of a Markdown text, by language, in order."""
    found: dict[str, list[str]] = {}
    for language, code in re.findall(r"^```(\w+)\n(.*?)^```", text, flags=re.M | re.S):
        found.setdefault(language, []).append(code)
    return found


def _wait_for_health(url: str, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.3)
    _, stderr = server.communicate(timeout=30) if server.poll() is not None else ("", "")
    pytest.fail(f"the docs' server did not answer /healthz: {stderr[-2000:]}")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("curl") is None, reason="the docs' example needs curl")
def test_the_api_docs_examples_run_as_written_and_answer_as_shown(stranger: Stranger) -> None:
    """docs/api.md's blocks, verbatim but for the port: the start block in a shell of its own
    (the venv's `python` and `spotwise` first on PATH, as in an activated venv), then the curl
    block and the Python block in the same folder. The curl answer is the one shown (the
    reason's start, the pool, the interval); the Python one prints what the docs say."""
    blocks = _blocks(API_DOCS.read_text())
    port = str(free_loopback_port())
    start, curl = (b.replace("8000", port) for b in blocks["bash"][:2])
    python = blocks["python"][0].replace("8000", port)
    env = {**stranger.env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    server = subprocess.Popen(
        ["bash", "-euc", start],
        cwd=stranger.home,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _wait_for_health(f"http://127.0.0.1:{port}", server)
        asked = subprocess.run(
            ["bash", "-euc", curl], cwd=stranger.home, env=env, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
        assert asked.returncode == 0, asked.stderr
        answer, shown = json.loads(asked.stdout), json.loads(blocks["json"][0])
        for field in ("action", "pool", "market", "checkpoint_interval_minutes", "risk_model"):
            assert answer[field] == shown[field], field
        assert answer["request_pools"] == shown["request_pools"]
        assert answer["reason"].startswith(shown["reason"].removesuffix("..."))
        printed = subprocess.run(
            [sys.executable, "-c", python], cwd=stranger.home, env=env, capture_output=True,
            text=True, timeout=120, check=False,
        )  # fmt: skip
        assert printed.returncode == 0, printed.stderr
        assert printed.stdout == blocks["text"][0]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.communicate(timeout=60)
