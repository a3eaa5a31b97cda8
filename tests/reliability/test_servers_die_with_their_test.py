"""A test worker killed outright (a timeout, SIGKILL) leaves none of the servers it started:
Azurite and the GCS emulator die with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTS = {
    "azurite": (
        "from spotwise.executor.clouds.azure.fake.servers import Azurite\n"
        "start = lambda: Azurite(FOLDER)"
    ),
    "gcs emulator": (
        "from spotwise.executor.clouds.gcp.fake.compute import StorageEmulator as start"
    ),
}
"""Each server's start, in a worker given ``FOLDER``, a folder of the test's."""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    return state != "Z"


@pytest.mark.slow  # each server takes seconds to start
@pytest.mark.parametrize("server", sorted(STARTS))
def test_a_server_dies_with_the_worker_that_started_it(server: str, tmp_path: Path) -> None:
    script = "\n".join(
        (
            "import sys, time; from pathlib import Path; FOLDER = Path(sys.argv[1])",
            STARTS[server],
            "print(start().process.pid, flush=True)",
            "time.sleep(600)",
        )
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert worker.stdout is not None
        pid = int(worker.stdout.readline())
        assert alive(pid)
        worker.send_signal(signal.SIGKILL)  # no atexit, no finaliser
        worker.wait()
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(pid), f"{server} (pid {pid}) outlived its killed worker"
    finally:
        worker.kill()
