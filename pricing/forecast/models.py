"""Price forecasters on one regular series: ``fit(y)`` then ``predict(h, level)``.

Each returns the mean and a central ``level`` % interval per step ahead; the orchestrator
(:mod:`spotwise.pricing.forecast.backtest`) names output columns after the model's alias, as
statsforecast does (``Naive``, ``Naive-lo-90``, ``Naive-hi-90``).
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm


@dataclass(frozen=True, slots=True)
class Forecast:
    """Per step ahead: mean and interval bounds."""

    mean: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


class Forecaster(ABC):
    """Fits one series, forecasts h steps with an interval."""

    alias: str

    @abstractmethod
    def fit(self, y: np.ndarray) -> Forecaster:
        """Learn from the series (oldest first)."""

    @abstractmethod
    def predict(self, h: int, level: int = 90) -> Forecast:
        """The next ``h`` values with a ``level`` % interval."""


def _empirical_interval(
    y: np.ndarray, lag_of: Callable[[int], int], h: int, level: int, center: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Interval from the history's own k-step errors of the same rule (quantiles)."""
    tail = (100 - level) / 2
    lo, hi = np.empty(h), np.empty(h)
    for k in range(1, h + 1):
        lag = lag_of(k)
        errors = y[lag:] - y[:-lag] if len(y) > lag else np.zeros(1)
        lo[k - 1], hi[k - 1] = np.percentile(errors, [tail, 100 - tail])
    return center + lo, center + hi


class Naive(Forecaster):
    """Last value; the interval holds the history's k-step changes."""

    alias = "Naive"

    def fit(self, y: np.ndarray) -> Naive:
        """Remember the series."""
        self._y = np.asarray(y, dtype=float)
        return self

    def predict(self, h: int, level: int = 90) -> Forecast:
        """The last value ``h`` steps ahead, with empirical intervals."""
        mean = np.full(h, self._y[-1])
        lo, hi = _empirical_interval(self._y, lambda k: k, h, level, mean)
        return Forecast(mean, lo, hi)


class SeasonalNaive(Forecaster):
    """The value one season ago (24 hours on an hourly grid)."""

    alias = "SeasonalNaive"

    def __init__(self, season: int = 24) -> None:
        self.season = season

    def fit(self, y: np.ndarray) -> SeasonalNaive:
        """Remember the series."""
        self._y = np.asarray(y, dtype=float)
        return self

    def predict(self, h: int, level: int = 90) -> Forecast:
        """The value one season back, ``h`` steps ahead (naive on a short series)."""
        if len(self._y) < self.season:
            return Naive().fit(self._y).predict(h, level)
        steps = np.arange(h)
        mean = self._y[len(self._y) - self.season + steps % self.season]
        lo, hi = _empirical_interval(self._y, lambda k: self.season, h, level, mean)
        return Forecast(mean, lo, hi)


class Arima110(Forecaster):
    """ARIMA(1,1,0) with drift off, fitted by conditional least squares on the differences:
    what statsmodels' ``AutoReg(d, lags=1, trend="n")`` computes (the tests hold the two
    equal), the same model as ``statsmodels.tsa.arima.model.ARIMA(order=(1,1,0))``, in
    microseconds a series where AutoReg's bookkeeping takes milliseconds (thousands of GCP
    series a run); :func:`arima_mle` fits it by exact likelihood for comparison."""

    alias = "ARIMA"

    def fit(self, y: np.ndarray) -> Arima110:
        """Fit the AR(1) coefficient of the differenced series."""
        self._y = np.asarray(y, dtype=float)
        d = np.diff(self._y)
        if len(d) < 3 or np.allclose(d, 0):
            self._phi, self._sigma = 0.0, float(np.std(d)) if len(d) else 0.0
            return self
        before, after = d[:-1], d[1:]
        phi = float(before @ after / (before @ before)) if before @ before > 0 else 0.0
        residuals = after - phi * before
        self._phi = float(np.clip(phi, -0.99, 0.99))
        self._sigma = float(np.sqrt(residuals @ residuals / len(after)))
        return self

    def predict(self, h: int, level: int = 90) -> Forecast:
        """The ARIMA(1,1,0) mean ``h`` steps ahead, with intervals."""
        last_diff = self._y[-1] - self._y[-2] if len(self._y) > 1 else 0.0
        phis = self._phi ** np.arange(1, h + 1)
        mean = self._y[-1] + np.cumsum(phis * last_diff)
        # psi-weights of the integrated AR(1): psi_j = (1 - phi^(j+1)) / (1 - phi)
        psi = (1 - self._phi ** np.arange(1, h + 1)) / (1 - self._phi)
        sd = self._sigma * np.sqrt(np.cumsum(psi**2))
        z = norm.ppf(0.5 + level / 200)
        return Forecast(mean, mean - z * sd, mean + z * sd)


def arima_mle(y: np.ndarray, h: int, level: int = 90) -> Forecast:
    """ARIMA(1,1,0) by exact likelihood (statsmodels' ARIMA), to check :class:`Arima110`."""
    from statsmodels.tsa.arima.model import ARIMA

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = ARIMA(np.asarray(y, dtype=float), order=(1, 1, 0)).fit()
        forecast = result.get_forecast(h)
        bounds = forecast.conf_int(alpha=1 - level / 100)
    return Forecast(np.asarray(forecast.predicted_mean), bounds[:, 0], bounds[:, 1])


FORECASTERS: dict[str, Callable[[], Forecaster]] = {
    Naive.alias: Naive,
    SeasonalNaive.alias: SeasonalNaive,
    Arima110.alias: Arima110,
}
