"""The SPOTWISE_* variables: read and checked in one place, a bad value is one clear line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spotwise.core import settings
from spotwise.core.settings import CloudEndpoint, SettingsError, current, endpoint_url
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


API = CloudEndpoint("SPOTWISE_TEST_API_URL", "https://api.example.com/v1/")
METADATA = CloudEndpoint("SPOTWISE_TEST_METADATA_URL", "http://169.254.169.254", https=False)


def test_a_cloud_endpoint_is_its_default_until_its_variable_overrides_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(API.variable, raising=False)
    assert endpoint_url(API) == "https://api.example.com/v1"  # no trailing slash
    monkeypatch.setenv(API.variable, "http://127.0.0.1:8123/")  # a local server, read anew
    assert endpoint_url(API) == "http://127.0.0.1:8123"
    monkeypatch.setenv(METADATA.variable, "http://127.0.0.1:9")
    assert endpoint_url(METADATA) == "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("http://prices.example.net/api", "plain http only to 127.0.0.1 or localhost"),
        ("ftp://127.0.0.1/api", "must be an https:// URL"),
        ("", "must be an https:// URL"),
        ("https://user:secret@api.example.com", "without user, password, query or fragment"),
        ("https://api.example.com/?key=1", "without user, password, query or fragment"),
        ("https://[::1/", "must be a URL"),
    ],
)
def test_a_bad_api_endpoint_is_refused_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, value: str, words: str
) -> None:
    monkeypatch.setenv(API.variable, value)
    with pytest.raises(SettingsError) as raised:
        endpoint_url(API)
    assert str(raised.value).startswith("SPOTWISE_TEST_API_URL: ") and words in str(raised.value)
    assert str(raised.value).endswith("; fix or unset the variable")


def test_a_metadata_endpoint_may_be_plain_http_anywhere_but_must_be_a_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(METADATA.variable, "http://metadata.google.internal/")
    assert endpoint_url(METADATA) == "http://metadata.google.internal"
    monkeypatch.setenv(METADATA.variable, "169.254.169.254")
    with pytest.raises(SettingsError, match=r"^SPOTWISE_TEST_METADATA_URL: must be an http://"):
        endpoint_url(METADATA)


def test_an_endpoint_declared_wrong_fails_where_it_is_declared() -> None:
    with pytest.raises(ValueError, match="SPOTWISE_NAME"):
        CloudEndpoint("AWS_IMDS_URL", "http://169.254.169.254", https=False)
    with pytest.raises(ValueError, match="plain http only"):
        CloudEndpoint("SPOTWISE_X_URL", "http://api.example.com")


def test_store_flag_beats_the_environment_which_beats_the_default(tmp_path: Path) -> None:
    flag = tmp_path / "flag.duckdb"
    assert settings.store_path(flag) == flag
    old = os.environ.get(settings.STORE_ENV)
    os.environ[settings.STORE_ENV] = str(tmp_path / "env.duckdb")
    try:
        assert settings.store_path(None) == tmp_path / "env.duckdb"
        del os.environ[settings.STORE_ENV]
        assert settings.store_path(None).name == "market.duckdb"
        assert "spotwise" in str(settings.store_path(None))
    finally:
        if old is not None:
            os.environ[settings.STORE_ENV] = old
