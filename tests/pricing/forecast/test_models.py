"""The price forecasters: last value, seasonal naive, ARIMA against statsmodels' MLE."""

from __future__ import annotations

import numpy as np

from spotwise.pricing.forecast.models import Arima110, Naive, SeasonalNaive, arima_mle


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
