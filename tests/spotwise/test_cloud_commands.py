"""``spotwise gc CLOUD``'s arguments: what it refuses before it asks any cloud (every cloud of
the registry, with no account named: the refusal comes first)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spotwise.executor.clouds.registry import CLOUDS
from tests.conftest import CliRun


@pytest.mark.parametrize("cloud", sorted(CLOUDS))
@pytest.mark.parametrize("job", ["../../x", "a b", "x" * 100_000])
def test_gc_refuses_a_job_that_is_no_job_id(cli_in_process: CliRun, cloud: str, job: str) -> None:
    result = cli_in_process("gc", cloud, "--job", job)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: --job ") and "is not a job id" in line
    assert len(line) < 300  # a runaway id is not echoed whole


@pytest.mark.parametrize("cloud", sorted(CLOUDS))
def test_gc_with_job_refuses_a_store_that_does_not_exist(
    cli_in_process: CliRun, tmp_path: Path, cloud: str
) -> None:
    typo = tmp_path / "typo.duckdb"
    result = cli_in_process("gc", cloud, "--store", str(typo), "--job", "0123456789ab")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: --job 0123456789ab: the store {typo} does not exist, so nothing shows whether "
        "a supervisor still runs the job (a wrong --store hides them); give the --store the "
        "jobs ran with (nothing was ended)"
    ]
    assert result.stdout == "" and not typo.exists()
