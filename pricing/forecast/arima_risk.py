"""Parcae-style risk from an autoregressive forecast of availability.

Per pool, an AR(p) model of the availability indicator is fitted on the training ticks
(statsmodels ``AutoReg``; ARIMA(p,0,0)); with those fixed coefficients the forecast from every
tick t uses only ticks <= t. The score is one minus the forecast availability averaged over
(t, t + h]; :class:`spotwise.pricing.forecast.risk.ArimaRisk` calibrates it into a probability.
"""

from __future__ import annotations

import warnings

import numpy as np


def ar_unavailability(
    series: np.ndarray, train_end: int, horizon: int, lags: int = 12
) -> np.ndarray:
    """1 − mean AR forecast of availability over the next ``horizon`` ticks, at every tick."""
    from statsmodels.tsa.ar_model import AutoReg

    x = series.astype(float)
    train = x[:train_end]
    if len(train) <= 3 * lags or np.all(train == train[0]):
        return np.full(len(x), 1.0 - float(train.mean()) if len(train) else 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        params = AutoReg(train, lags=lags, trend="c").fit().params
    const, phi = params[0], params[1:]
    n = len(x)
    # state[:, j] = x[t - j] for every t (values before the start repeat the first one).
    padded = np.concatenate([np.full(lags, x[0]), x])
    state = np.stack([padded[lags - j : lags - j + n] for j in range(lags)], axis=1)
    total = np.zeros(n)
    for _ in range(horizon):
        nxt = np.clip(const + state @ phi, 0.0, 1.0)
        total += nxt
        state = np.concatenate([nxt[:, None], state[:, :-1]], axis=1)
    return 1.0 - total / horizon
