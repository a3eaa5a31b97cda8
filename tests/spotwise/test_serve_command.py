"""`spotwise bench api` starting its server: a server that exits is told from one that is slow
(real `spotwise serve` subprocesses, their uvicorn replaced by a stand-in that crashes or
hangs)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import typer

from spotwise import serve_command
from spotwise.console import free_loopback_port
from tests.conftest import CliRun

CRASHING_UVICORN = """
import sys

def run(*args, **kwargs):
    print("starting the policy API", file=sys.stderr)
    print("OSError: [Errno 24] Too many open files: 'traces'", file=sys.stderr)
    sys.exit(3)
"""
HANGING_UVICORN = """
import time

def run(*args, **kwargs):
    time.sleep(3600)
"""


def _with_uvicorn(tmp_path: Path, code: str) -> dict[str, str]:
    """An environment whose ``import uvicorn`` (done by `spotwise serve` only) imports
    ``code``."""
    (tmp_path / "uvicorn.py").write_text(textwrap.dedent(code))
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path[1:]])}


@pytest.mark.slow
def test_bench_api_says_how_the_server_ended_when_it_exits(cli: CliRun, tmp_path: Path) -> None:
    result = cli("bench", "api", "--seconds", "1", env=_with_uvicorn(tmp_path, CRASHING_UVICORN))
    assert result.returncode == 1
    assert "the API server exited (exit code 3)" in result.stderr
    assert "Too many open files: 'traces'" in result.stderr  # its own last words
    assert "still starting" not in result.stderr


@pytest.mark.slow
def test_bench_api_says_a_slow_server_is_still_starting_not_broken(
    cli: CliRun, tmp_path: Path
) -> None:
    result = cli(
        "bench", "api", "--seconds", "1", "--start-timeout", "3",
        env=_with_uvicorn(tmp_path, HANGING_UVICORN),
    )  # fmt: skip
    assert result.returncode == 1
    assert "is still starting after" in result.stderr and "CPU-s used" in result.stderr
    assert "raise --start-timeout" in result.stderr and "exited" not in result.stderr


def test_a_server_still_starting_is_reported_as_it_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(serve_command, "START_REPORT_EVERY_S", 0.3)
    log = tmp_path / "stderr"
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        with pytest.raises(typer.Exit):
            serve_command._wait_until_up(
                f"http://127.0.0.1:{free_loopback_port()}", server, log, timeout_s=1.5
            )
        said = capsys.readouterr().err
        assert f"the API server (pid {server.pid}) is starting:" in said
        assert server.poll() is None  # slow is not dead: the caller decides what to end
    finally:
        server.kill()
        server.wait()


def test_a_server_killed_by_a_signal_is_said_so(tmp_path: Path) -> None:
    log = tmp_path / "stderr"
    log.write_text("")
    server = subprocess.Popen([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"])
    assert serve_command._ended(server, log) == (
        "the API server exited (killed by signal 9); the last lines of its stderr:\n"
        "  (nothing on stderr)"
    )
