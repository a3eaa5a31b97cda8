"""The SPOTWISE_* variables: read and checked in one place, a bad value is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from spotwise.settings import SettingsError, current
from tests.conftest import CliRun


def test_the_variables_are_read_typed_and_checked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SPOTWISE_STORE", str(tmp_path / "s.duckdb"))
    monkeypatch.setenv("SPOTWISE_MTBF_S", "5400")
    monkeypatch.setenv("SPOTWISE_NOTICES", "aws,gcp")
    settings = current()
    assert settings.store == tmp_path / "s.duckdb" and settings.mtbf_s == 5400.0
    assert settings.notices == "aws,gcp" and settings.store_wait_s == 30.0
    monkeypatch.setenv("SPOTWISE_MTBF_S", "-3")
    with pytest.raises(SettingsError, match=r"SPOTWISE_MTBF_S: .*greater than 0"):
        current()


def test_a_bad_variable_stops_the_cli_with_one_line_naming_it(cli: CliRun) -> None:
    result = cli("data", "summary", env={"SPOTWISE_STORE_WAIT_S": "soon"})
    assert result.returncode == 2
    message = result.stderr.strip()
    assert message.startswith("error: SPOTWISE_STORE_WAIT_S:") and "\n" not in message
    assert "Traceback" not in result.stderr
