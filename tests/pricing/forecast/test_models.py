"""Price forecasting: the grid, the forecasters, ARIMA against statsmodels' MLE, the backtest."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from spotwise.pricing.forecast.backtest import cross_validation, forecast, score
from spotwise.pricing.forecast.boosting import GlobalBoosting
from spotwise.pricing.forecast.grid import to_grid
from spotwise.pricing.forecast.models import FORECASTERS, Arima110, Naive, SeasonalNaive, arima_mle
from tests.conftest import CliRun


def changes(*points: tuple[str, float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "unique_id": "a",
            "ts": pd.to_datetime([p[0] for p in points], utc=True),
            "price": [p[1] for p in points],
        }
    )


def test_grid_holds_each_price_until_the_next_change_without_look_ahead() -> None:
    grid = to_grid(
        changes(("2024-01-01 00:30", 1.0), ("2024-01-01 02:00", 2.0), ("2024-01-01 03:59", 3.0)),
        "h",
    )
    assert grid["ds"].dt.hour.tolist() == [1, 2, 3]
    assert grid["y"].tolist() == [1.0, 2.0, 2.0]  # 03:59's price is not known at 03:00


def test_naive_interval_comes_from_the_history_of_changes() -> None:
    y = np.array([1.0, 1.0, 2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0, 3.0])
    result = Naive().fit(y).predict(2, 90)
    assert result.mean.tolist() == [3.0, 3.0]
    assert result.lo[0] == 3.0 and result.hi[0] > 3.0


def test_seasonal_naive_repeats_the_last_season() -> None:
    y = np.arange(48.0)
    assert SeasonalNaive(24).fit(y).predict(3).mean.tolist() == [24.0, 25.0, 26.0]


def test_fast_arima_agrees_with_statsmodels_exact_likelihood() -> None:
    rng = np.random.default_rng(3)
    d = np.zeros(500)
    for i in range(1, 500):
        d[i] = 0.5 * d[i - 1] + rng.normal()
    y = 50 + np.cumsum(d)
    fast = Arima110().fit(y).predict(24, 90)
    exact = arima_mle(y, 24, 90)
    assert np.max(np.abs(fast.mean - exact.mean)) < 0.05
    assert np.max(np.abs(fast.hi - exact.hi)) < 0.2


def test_fast_arima_is_statsmodels_conditional_least_squares() -> None:
    """Arima110's least squares are AutoReg's on the differences, to rounding."""
    import warnings

    from statsmodels.tsa.ar_model import AutoReg

    rng = np.random.default_rng(5)
    for n in (6, 40, 700):
        y = 3 + np.cumsum(rng.normal(size=n))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = AutoReg(np.diff(y), lags=1, trend="n").fit()
        phi, sigma = float(result.params[0]), float(np.sqrt(result.sigma2))
        model = Arima110().fit(y)
        forecast = model.predict(3, 90)
        expected = y[-1] + np.cumsum(phi ** np.arange(1, 4) * (y[-1] - y[-2]))
        np.testing.assert_allclose(forecast.mean, expected, rtol=1e-12)
        psi = (1 - phi ** np.arange(1, 4)) / (1 - phi)
        width = 2 * 1.6448536269514722 * sigma * np.sqrt(np.cumsum(psi**2))
        np.testing.assert_allclose(forecast.hi - forecast.lo, width, rtol=1e-9)


def test_cross_validation_fits_only_before_each_origin() -> None:
    ds = pd.date_range("2024-01-01", periods=200, freq="h", tz="UTC")
    df = pd.DataFrame({"unique_id": "a", "ds": ds, "y": np.r_[np.ones(150), np.full(50, 9.0)]})
    origin = ds[150]
    cv = cross_validation(df, [Naive], 5, [origin], freq="h")
    assert (cv["Naive"] == 1.0).all() and (cv["y"] == 9.0).all()  # the jump was not seen
    assert score(cv, ["Naive"])["Naive"]["mase"] == 1.0
    out = forecast(df, list(FORECASTERS.values()), 3, freq="h")
    assert {"Naive", "Naive-lo-90", "ARIMA-hi-90", "SeasonalNaive"} <= set(out.columns)


def test_gbm_forecasts_each_series_the_same_alone_or_in_a_batch() -> None:
    rng = np.random.default_rng(0)
    ds = pd.date_range("2024-01-01", periods=400, freq="h", tz="UTC")
    grid = pd.concat(
        pd.DataFrame({"unique_id": uid, "ds": ds, "y": 1 + np.cumsum(rng.random(400) < 0.05) * s})
        for uid, s in (("a", 0.1), ("b", -0.001), ("c", 0.02))
    )
    model = GlobalBoosting().fit(grid, 6)
    batch = model.predict(grid, 6, freq="h")
    alone = pd.concat(
        model.predict(grid[grid["unique_id"] == uid], 6, freq="h") for uid in ("a", "b", "c")
    )
    pd.testing.assert_frame_equal(batch, alone.reset_index(drop=True))
    assert list(batch["ds"].iloc[:6]) == list(pd.date_range(ds[-1], periods=7, freq="h")[1:])
    assert (batch["GBM-lo-90"] <= batch["GBM"]).all() and (batch["GBM"] <= batch["GBM-hi-90"]).all()
    assert batch.groupby("unique_id")["GBM"].first().nunique() == 3
    with pytest.raises(ValueError, match="empty"):
        model.predict(grid.iloc[:0], 6, freq="h")
    assert model.training_rows > 1000  # every fourth origin, six steps ahead, three series
    capped = GlobalBoosting(max_rows=500).fit(grid, 6)
    assert 400 < capped.training_rows <= 500  # origins further apart, as many as fit


@pytest.mark.slow
def test_bench_price_gbm_beats_last_value_with_calibrated_intervals(cli: CliRun) -> None:
    result = cli("bench", "price", "--test-from", "2020-01-24", "--horizon-hours", "24", "--json")
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    assert scores["n_series"] == 98
    assert scores["models"]["Naive"]["mase"] == 1.0
    assert scores["models"]["GBM"]["mase"] < 0.98
    assert 0.8 <= scores["models"]["GBM"]["coverage_90"] <= 0.98


@pytest.mark.slow
@pytest.mark.parametrize("bad", ["yesterday", "2030-01-01"])
def test_bench_price_rejects_a_bad_start(cli: CliRun, bad: str) -> None:
    result = cli("bench", "price", "--test-from", bad)
    assert result.returncode != 0 and "--test-from" in result.stderr
