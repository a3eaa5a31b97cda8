"""The SPOTWISE_* variables: read and checked in one place, a bad value is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from spotwise.core.settings import SettingsError, current
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
    monkeypatch.setenv("SPOTWISE_MTBF_S", "5400")
    monkeypatch.setenv("SPOTWISE_CHECKPOINT_S", "inf")  # a guard that never checkpoints
    with pytest.raises(SettingsError, match=r"SPOTWISE_CHECKPOINT_S: .*finite"):
        current()


def test_checkpoint_minutes_that_are_no_interval_are_refused_before_anything_runs(
    cli_in_process: CliRun,
) -> None:
    for value, words in (("inf", "finite"), ("0", "greater than or equal to 0.01")):
        result = cli_in_process("run", "--checkpoint-minutes", value, "--", "true")
        assert result.returncode == 2 and words in result.stderr
        assert "instance" not in result.stdout + result.stderr  # nothing was launched


def test_a_bad_variable_stops_the_cli_with_one_line_naming_it(cli: CliRun) -> None:
    result = cli("data", "summary", env={"SPOTWISE_STORE_WAIT_S": "soon"})
    assert result.returncode == 2
    message = result.stderr.strip()
    assert message.startswith("error: SPOTWISE_STORE_WAIT_S:") and "\n" not in message
    assert "Traceback" not in result.stderr
