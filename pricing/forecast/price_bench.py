"""The price backtest: hourly grid, daily origins from ``test_from``, each forecast fitted only
on data before its origin; MASE against the last value, pooled, and 90 % interval coverage."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from spotwise.core.progress import Progress, silent
from spotwise.pricing.clouds.aws.spot_prices import read_price_history_csv
from spotwise.pricing.forecast.backtest import cross_validation, score
from spotwise.pricing.forecast.boosting import GlobalBoosting
from spotwise.pricing.forecast.grid import to_grid
from spotwise.pricing.forecast.models import FORECASTERS


def aws_price_grid(csv: Path) -> pd.DataFrame:
    """The AWS price-history CSV as hourly series ``unique_id, ds, y``."""
    prices = read_price_history_csv(csv).frames["prices"]
    prices = prices.assign(
        unique_id="aws:" + prices["zone"] + ":" + prices["instance_type"] + ":spot"
    )
    return to_grid(prices, "h", end=prices["ts"].max())


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceBench:
    """Each price model's pooled MASE and interval coverage over the backtest's origins."""

    models: dict[str, dict[str, float]]
    n_series: int
    n_origins: int
    n_forecasts: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-ready values."""
        return asdict(self)


def bench_price(
    csv: Path,
    *,
    test_from: pd.Timestamp,
    horizon_hours: int = 24,
    level: int = 90,
    refit_every_days: int = 7,
    progress: Progress = silent,
) -> PriceBench:
    """Backtest the per-series models (refitted at every origin) and the global GBM (refitted
    every ``refit_every_days`` origins, on data before the origin it is fitted at)."""
    grid = aws_price_grid(csv)
    last = grid["ds"].max()
    origins = list(
        pd.date_range(test_from.ceil("D"), last - pd.Timedelta(hours=horizon_hours), freq="D")
    )
    if not origins:
        raise ValueError(
            f"--test-from {test_from} leaves no full {horizon_hours} h window "
            f"before the data ends ({last})"
        )
    began = time.perf_counter()  # timing only: the bench's run time
    progress(f"{len(origins)} origins × {grid['unique_id'].nunique()} series: per-series models")
    cv = cross_validation(
        grid, list(FORECASTERS.values()), horizon_hours, origins, freq="h", level=level
    )
    progress(f"global GBM, refitted every {refit_every_days} origins")
    parts = []
    model = None
    for i, origin in enumerate(origins):
        history = grid[grid["ds"] < origin]
        if model is None or i % refit_every_days == 0:
            model = GlobalBoosting().fit(history, horizon_hours, level)
        predicted = model.predict(history, horizon_hours, freq="h")
        predicted["cutoff"] = origin
        parts.append(predicted)
    boosted = pd.concat(parts, ignore_index=True)
    cv = cv.merge(boosted, on=["unique_id", "ds", "cutoff"], how="inner")
    aliases = [*FORECASTERS, GlobalBoosting.alias]
    return PriceBench(
        models=score(cv, aliases, level=level),
        n_series=int(cv["unique_id"].nunique()),
        n_origins=len(origins),
        n_forecasts=len(cv),
        seconds=round(time.perf_counter() - began, 2),
    )
