"""The ``SPOTWISE_*`` variables as one pydantic-settings model: named by prefix, typed, bounded,
frozen, and the operational store only a PostgreSQL URL."""

from __future__ import annotations

import pydantic
import pytest

from spotwise.core.environment import DEFAULT_MAX_IN_FLIGHT, Settings


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No variable this test does not set itself."""
    for name in ("OPERATIONAL_STORE", "API_MAX_IN_FLIGHT", "API_MAX_PER_CLIENT", "STORE_WAIT_S"):
        monkeypatch.delenv(f"SPOTWISE_{name}", raising=False)
    return monkeypatch


def test_unset_variables_take_their_defaults_and_unknown_ones_are_ignored(
    clean: pytest.MonkeyPatch,
) -> None:
    clean.setenv("SPOTWISE_NO_SUCH_THING", "1")
    settings = Settings()
    assert settings.operational_store is None and settings.store_wait_s == 30.0
    assert settings.api_max_in_flight == DEFAULT_MAX_IN_FLIGHT == 4
    assert settings.api_max_per_client is None


def test_the_operational_store_must_be_a_postgresql_url(clean: pytest.MonkeyPatch) -> None:
    for url in ("postgresql://spotwise@db/jobs", "postgres://spotwise@db/jobs"):
        clean.setenv("SPOTWISE_OPERATIONAL_STORE", url)
        assert Settings().operational_store == url
    clean.setenv("SPOTWISE_OPERATIONAL_STORE", "/var/spotwise/jobs.duckdb")
    with pytest.raises(pydantic.ValidationError, match="must be a postgresql:// URL"):
        Settings()


@pytest.mark.parametrize(
    ("name", "value"),
    [("API_MAX_IN_FLIGHT", "0"), ("API_MAX_IN_FLIGHT", "10001"), ("API_MAX_PER_CLIENT", "0")],
)
def test_the_apis_places_are_bounded(clean: pytest.MonkeyPatch, name: str, value: str) -> None:
    clean.setenv(f"SPOTWISE_{name}", value)
    with pytest.raises(pydantic.ValidationError, match=name.lower()):
        Settings()


def test_the_settings_read_are_frozen(clean: pytest.MonkeyPatch) -> None:
    clean.setenv("SPOTWISE_API_MAX_IN_FLIGHT", "10000")
    settings = Settings()
    assert settings.api_max_in_flight == 10_000
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        settings.api_max_in_flight = 5
