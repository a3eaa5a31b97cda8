"""Text that comes from a stranger (a path, a name, a cloud's answer) is printed as it is:
never read as Rich markup, which could raise or rewrite an error."""

from __future__ import annotations

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
