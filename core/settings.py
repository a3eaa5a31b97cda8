"""Every ``SPOTWISE_*`` environment variable, read and checked in one place
(:class:`spotwise.core.environment.Settings`, pydantic-settings), and where Spotwise keeps things:
the store file, the bundled data folder and its defaults.

:func:`current` reads the environment anew on each call: the supervisor sets variables for the
job it launches, and tests set them per test.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spotwise.core.environment import Settings

STORE_ENV = "SPOTWISE_STORE"
DATA_ENV = "SPOTWISE_DATA"


class SettingsError(ValueError):
    """A ``SPOTWISE_*`` variable holds a value Spotwise cannot use."""


def current() -> Settings:
    """The settings the environment gives now (:class:`spotwise.core.environment.Settings`).

    Raises:
        SettingsError: naming the variable and what it needs.
    """
    from pydantic import ValidationError

    from spotwise.core.environment import Settings

    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"SPOTWISE_{str(e['loc'][0]).upper()}: {e['msg']}" for e in exc.errors()
        )
        raise SettingsError(f"{problems}; fix or unset the variable") from None


def store_path(override: Path | None = None) -> Path:
    """The store file: ``--store``, else ``$SPOTWISE_STORE``, else the user's data folder.

    Raises:
        SettingsError: for a PostgreSQL URL (it names the operational store, not this file).
    """
    if override is not None:
        if str(override).startswith(("postgresql:", "postgres:")):
            raise SettingsError(
                f"--store {override} looks like a database URL: --store names the DuckDB "
                "file of the market data; set SPOTWISE_OPERATIONAL_STORE=postgresql://... to "
                "keep the jobs, ledger and forecasts in PostgreSQL"
            )
        return override
    if (env := current().store) is not None:
        return env
    from platformdirs import user_data_dir

    return Path(user_data_dir("spotwise", appauthor=False)) / "market.duckdb"


def bundled_data_dir() -> Path:
    """The real data shipped with Spotwise (``$SPOTWISE_DATA`` overrides)."""
    if (env := current().data) is not None:
        return env
    return Path(__file__).resolve().parent.parent / "data"


def bundled_traces() -> Path:
    """The default availability traces: the bundled 9-zone aws-02-15-2023 1-node CBL set."""
    return bundled_data_dir() / "traces/cbl/availability/1-node/aws-02-15-2023"


def bundled_node_traces() -> Path:
    """The default N-node capacity traces: the bundled 3-pool aws-08-27-2023 16-node CBL set."""
    return bundled_data_dir() / "traces/cbl/availability/16-node/aws-08-27-2023"


def bundled_prices() -> Path:
    """The default price history: the bundled AWS describe-spot-price-history CSV."""
    return bundled_data_dir() / "prices/aws_spot_price_history_2019-12_2020-01.csv"


def bundled_advisor_snapshots() -> list[Path]:
    """The bundled AWS Spot Advisor snapshots (one JSON per date)."""
    return sorted((bundled_data_dir() / "advisor").glob("spot-advisor-data_*.json"))
