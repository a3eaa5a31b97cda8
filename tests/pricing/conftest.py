"""Collector test helpers: the bundled us-east-1 history, a file server on 127.0.0.1, and a
loopback URL where nothing listens."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from tests.conftest import DATA

PRICE_CSV = DATA / "prices" / "aws_spot_price_history_2019-12_2020-01.csv"


@pytest.fixture
def us_east_1_history() -> pd.DataFrame:
    """The bundled real price history of us-east-1, as the CSV has it."""
    rows = pd.read_csv(PRICE_CSV, dtype=str)
    return rows[rows["availability_zone"].str.startswith("us-east-1")].reset_index(drop=True)


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
