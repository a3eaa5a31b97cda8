"""The price backtest's folds and scores: each forecast fitted only before its origin."""

from __future__ import annotations

import numpy as np
import pandas as pd

from spotwise.pricing.forecast.backtest import cross_validation, forecast, score
from spotwise.pricing.forecast.models import FORECASTERS, Naive


def test_cross_validation_fits_only_before_each_origin() -> None:
    ds = pd.date_range("2024-01-01", periods=200, freq="h", tz="UTC")
    df = pd.DataFrame({"unique_id": "a", "ds": ds, "y": np.r_[np.ones(150), np.full(50, 9.0)]})
    origin = ds[150]
    cv = cross_validation(df, [Naive], 5, [origin], freq="h")
    assert (cv["Naive"] == 1.0).all() and (cv["y"] == 9.0).all()  # the jump was not seen
    assert score(cv, ["Naive"])["Naive"]["mase"] == 1.0
    out = forecast(df, list(FORECASTERS.values()), 3, freq="h")
    assert {"Naive", "Naive-lo-90", "ARIMA-hi-90", "SeasonalNaive"} <= set(out.columns)
