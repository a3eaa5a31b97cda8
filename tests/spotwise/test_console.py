"""Text that comes from a stranger (a path, a name, a cloud's answer) is printed as it is:
never read as Rich markup, which could raise or rewrite an error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import CliRun


@pytest.fixture
def cli(cli_in_process: CliRun) -> CliRun:
    return cli_in_process


@pytest.mark.parametrize(
    "name",
    ["[/]x.csv", "[link=mailto:a@b.c]ok[/link].csv", "[conceal]secret[/conceal].csv"],
)
def test_an_error_about_a_path_shows_the_path_as_typed(cli: CliRun, name: str) -> None:
    result = cli("data", "load", name)
    assert result.returncode == 1
    assert f"error: {name}: no such file or folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_fleet_file_with_markup_in_its_name_is_named_as_typed(cli: CliRun) -> None:
    result = cli("fleet", "run", "[/]fleet.yaml")
    assert result.returncode != 0
    assert "[/]fleet.yaml" in result.stderr
    assert "Traceback" not in result.stderr


PRICES = (
    "timestamp,availability_zone,instance_type,product_description,spot_price\n"
    "2019-12-22T08:57:09Z,us-east-1a,p3.2xlarge,Linux/UNIX,0.918\n"
)


def test_a_store_and_an_export_path_with_markup_are_shown_as_typed(
    cli: CliRun, tmp_path: Path
) -> None:
    odd = tmp_path / "[/]dir[red]"
    odd.mkdir(parents=True)
    (odd / "prices.csv").write_text(PRICES)
    env = {"SPOTWISE_STORE": str(odd / "[/]s.duckdb")}
    assert cli("data", "load", str(odd / "prices.csv"), env=env).returncode == 0
    summary = cli("data", "summary", env=env)
    assert summary.returncode == 0
    assert f"store {odd / '[/]s.duckdb'} (" in summary.stdout
    parquet = odd / "[/]p.parquet"
    export = cli("data", "export", "--table", "prices", "--parquet", str(parquet), env=env)
    assert export.returncode == 0
    assert f"wrote 1 prices rows to {parquet}" in export.stderr
    assert parquet.exists()


def test_a_job_named_with_markup_is_listed_and_shown_as_typed(cli: CliRun) -> None:
    name = "[/]mine [red]x"
    run = cli("run", "--name", name, "--", sys.executable, "-c", "print('[/]out')")
    assert run.returncode == 0
    assert "[/]out" in run.stderr
    listed = cli("jobs", "list")
    assert listed.returncode == 0
    assert name in listed.stdout
