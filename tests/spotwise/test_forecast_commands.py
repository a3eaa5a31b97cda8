"""`forecast schedule --collect CLOUD:REGION`: each value is the `spotwise collect` line of
its cloud's profile, a bad one is refused in one line before anything runs, and a collect that
fails is named with its last line (the schedule's next run tries again)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spotwise.forecast_commands import CollectFailed, collect_lines, run_collect
from spotwise.pricing.collect_commands import COLLECTORS
from tests.conftest import CliRun
from tests.fakes import toy_collector


@pytest.fixture
def cli(cli_in_process: CliRun) -> CliRun:
    return cli_in_process


def test_each_value_is_its_clouds_collect_line() -> None:
    assert collect_lines(["aws:us-east-1", "gcp:us-central1", "azure:eastus"]) == [
        "spotwise collect aws --region us-east-1",
        "spotwise collect gcp --regions us-central1",
        "spotwise collect azure --regions eastus",
    ]


def test_a_fourth_cloud_is_collected_by_its_profiles_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(COLLECTORS, "toy", toy_collector.COLLECTOR)
    assert collect_lines(["toy:r1"]) == ["spotwise collect toy --zone r1"]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (
            "us-east-1",
            "--collect 'us-east-1': write CLOUD:REGION, CLOUD one of aws, azure, gcp, huawei",
        ),
        ("toy:r1", "--collect 'toy:r1': no cloud 'toy'; use one of aws, azure, gcp, huawei"),
        ("aws:--help", "--collect 'aws:--help': '--help' is not a region name"),
    ],
)
def test_a_bad_value_is_refused_in_one_line_before_anything_runs(
    cli: CliRun, value: str, said: str
) -> None:
    with pytest.raises(ValueError, match=f"^{said}$"):
        collect_lines([value])
    result = cli("forecast", "schedule", "--every", "1h", "--collect", value)
    assert result.returncode == 1 and said in result.stderr and "Traceback" not in result.stderr


def test_collect_region_says_to_name_the_cloud(cli: CliRun) -> None:
    result = cli("forecast", "schedule", "--collect-region", "us-east-1")
    assert result.returncode == 1
    assert "--collect CLOUD:us-east-1 (CLOUD one of aws, azure, gcp, huawei)" in result.stderr


def test_a_failed_collect_names_its_command_and_last_line(tmp_path: Path) -> None:
    with pytest.raises(CollectFailed, match=r"^`spotwise collect nowhere --region r1` failed"):
        run_collect("spotwise collect nowhere --region r1", tmp_path / "m.duckdb")
