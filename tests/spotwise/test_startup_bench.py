"""`spotwise bench startup`: each command's start-up time and peak memory, its own and not its
parent's."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import CliRun


@pytest.fixture
def cli(cli_in_process: CliRun) -> CliRun:
    """Commands whose arguments, messages and output are under test run in process."""
    return cli_in_process


@pytest.mark.slow
def test_bench_startup_prints_each_command_s_time_and_memory(cli: CliRun) -> None:
    result = cli("bench", "startup", "--repeats", "1", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report["commands"]) == {"--help", "data summary", "jobs list"}
    assert all(c["median_s"] > 0 and c["max_rss_mb"] > 0 for c in report["commands"].values())
    assert report["heavy_imports"] == []


def test_bench_startup_measures_the_command_not_the_process_that_starts_it() -> None:
    """A parent holding 400 MB starts `spotwise --help`: its peak is the command's own (a
    vfork child's ru_maxrss counted the parent's memory)."""
    from spotwise.startup_bench import measure

    ballast = bytearray(400 * 1024 * 1024)
    ballast[::4096] = b"x" * len(ballast[::4096])  # every page resident
    _, peak_mb = measure(("--help",), dict(os.environ))
    assert 10 < peak_mb < 200
    del ballast
