"""`spotwise policy train`, then its model benched beside `best`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CliRun
from tests.spotwise.test_bench_commands import bench


@pytest.fixture
def cli(cli_in_process: CliRun) -> CliRun:
    """Commands whose arguments, messages and output are under test run in process."""
    return cli_in_process


@pytest.mark.slow
def test_train_a_policy_then_bench_it_from_its_folder_next_to_best(
    cli: CliRun, tmp_path: Path
) -> None:
    out = tmp_path / "model"
    trained = cli(
        "policy",
        "train",
        "--timesteps",
        "1024",
        "--imitation-episodes",
        "3",
        "--out",
        str(out),
        "--no-progress",
        "--seed",
        "3",
    )
    assert trained.returncode == 0, trained.stderr
    assert (out / "ppo.pt").is_file() and (out / "ppo.json").is_file()
    result = bench(
        cli, "--zones", "multi", "--models", str(out), "--policies", "best,ppo", "--json"
    )
    assert result.returncode == 0, result.stderr
    results = json.loads(result.stdout)["results"]["all"]
    assert set(results) == {"best", "ppo"}
    assert all(r["deadline_miss_rate"] == 0.0 for r in results.values())


def test_train_refuses_an_unknown_algorithm(cli: CliRun) -> None:
    result = cli("policy", "train", "--algo", "dqn")
    assert result.returncode == 1
    assert "use ppo" in result.stderr
