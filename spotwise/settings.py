"""Where Spotwise keeps things: the store file, the bundled data folder and its defaults."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir

STORE_ENV = "SPOTWISE_STORE"
DATA_ENV = "SPOTWISE_DATA"


def store_path(override: Path | None = None) -> Path:
    """The store file: ``--store``, else ``$SPOTWISE_STORE``, else the user's data folder."""
    if override is not None:
        return override
    if env := os.environ.get(STORE_ENV):
        return Path(env)
    return Path(user_data_dir("spotwise", appauthor=False)) / "market.duckdb"


def bundled_data_dir() -> Path:
    """The real data shipped with Spotwise (``$SPOTWISE_DATA`` overrides)."""
    if env := os.environ.get(DATA_ENV):
        return Path(env)
    return Path(__file__).resolve().parent.parent / "data"


def bundled_traces() -> Path:
    """The default availability traces: the bundled 9-zone aws-02-15-2023 1-node CBL set."""
    return bundled_data_dir() / "traces/cbl/availability/1-node/aws-02-15-2023"


def bundled_prices() -> Path:
    """The default price history: the bundled AWS describe-spot-price-history CSV."""
    return bundled_data_dir() / "prices/aws_spot_price_history_2019-12_2020-01.csv"


def bundled_advisor_snapshots() -> list[Path]:
    """The bundled AWS Spot Advisor snapshots (one JSON per date)."""
    return sorted((bundled_data_dir() / "advisor").glob("spot-advisor-data_*.json"))
