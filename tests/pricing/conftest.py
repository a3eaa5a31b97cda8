"""Loopback servers for collector tests: the EC2 price endpoint, moto's server, a file server."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import DATA

PRICE_CSV = DATA / "prices" / "aws_spot_price_history_2019-12_2020-01.csv"


@pytest.fixture(autouse=True)
def fake_aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials for loopback endpoints only; never the instance metadata service."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def us_east_1_history() -> pd.DataFrame:
    """The bundled real price history of us-east-1, as the CSV has it."""
    rows = pd.read_csv(PRICE_CSV, dtype=str)
    return rows[rows["availability_zone"].str.startswith("us-east-1")].reset_index(drop=True)


@pytest.fixture
def moto_server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def file_server() -> Iterator[str]:
    """Serve the bundled data folder over HTTP on 127.0.0.1."""
    handler = functools.partial(_QuietHandler, directory=str(DATA))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def unused_url() -> str:
    """A loopback URL where nothing listens."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/spot-advisor-data.json"


__all__ = ["PRICE_CSV", "Path", "unused_url"]
