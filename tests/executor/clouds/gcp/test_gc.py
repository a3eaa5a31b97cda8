"""GCP's garbage collection: the host label a VM is found by, and an endpoint that does not
answer said in one line, in bounded time."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from spotwise.executor.clouds.gcp import gc
from spotwise.executor.clouds.gcp.cloud import GcpCloud
from spotwise.executor.clouds.gcp.fake.compute import PROJECT, GcpLocal
from spotwise.executor.clouds.gcp.gc import host_label
from spotwise.executor.errors import ExecutorError
from tests.executor.clouds.gcp.conftest import options


def test_a_host_name_becomes_a_label_one_to_one() -> None:
    import re

    hosts = ["Build-Box.local", "build-box-local", "build_box", "a" * 80, "a" * 81, "ünï"]
    labels = [host_label(h) for h in hosts]
    assert len(set(labels)) == len(hosts)
    assert all(re.fullmatch(r"[-_a-z0-9]{0,63}", label) for label in labels)
    assert host_label("gpu-box-7") == "gpu-box-7"


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """A loopback endpoint that takes connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    taken: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                taken.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for sock in (*taken, server):
        sock.close()


def test_gc_against_an_endpoint_that_never_answers_gives_up_in_one_line(
    gcp: GcpLocal, silent_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gc, "LIST_TIMEOUT_S", 0.5)
    target = GcpCloud().target(options(gcp, endpoint_url=silent_endpoint))
    with pytest.raises(ExecutorError) as failed:
        list(
            GcpCloud()
            .sweep(target)
            .judged(None, None, named=frozenset(), store_path=tmp_path / "market.duckdb")
        )
    assert str(failed.value) == (
        f"gc gcp: could not reach Google at {silent_endpoint} (ReadTimeout); check "
        "--endpoint-url and the network, then run again"
    )


@pytest.mark.slow  # a CLI subprocess
def test_gc_against_an_endpoint_nobody_listens_on_is_one_line_not_connection_pool_text(
    gcp: GcpLocal, store_file: Path
) -> None:
    from tests.pricing.conftest import unused_url

    nowhere = unused_url().rsplit("/", 1)[0]
    result = subprocess.run(
        [
            *(sys.executable, "-m", "spotwise", "gc", "gcp", "--project", PROJECT),
            *("--endpoint-url", nowhere),
        ],
        env={**os.environ, **gcp.env, "SPOTWISE_STORE": str(store_file)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    # what it looks at first (credentials found, nothing listed yet), that this store has no
    # ledger, then the one error line: no connection-pool text
    looking, no_ledger, error = result.stderr.strip().splitlines()
    assert looking.startswith(f"… gc gcp: listing GCP project {PROJECT} at {nowhere}: ")
    assert no_ledger.startswith(f"no ledger at {store_file}: ")
    assert error == (
        f"error: gc gcp: could not reach Google at {nowhere} (ConnectionError); check "
        "--endpoint-url and the network, then run again"
    )
