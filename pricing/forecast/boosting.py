"""A global gradient-boosting price model: one model over every series, on relative changes.

At an origin t it predicts ``(y[t+k] − y[t]) / y[t]`` for k = 1..h from the series' own recent
changes (over 1, 6, 24, 72 and 168 steps), the time since and size of its last change, the
number of changes in the last week, the step k and the hour of the origin. Median loss gives
the mean forecast; quantile losses give the interval. Training rows are origins whose target
lies before the fitting cut-off, so nothing looks ahead.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingRegressor

LAGS = (1, 6, 24, 72, 168)
COLUMNS = ("k", "hour", *(f"d{lag}" for lag in LAGS), "since_change", "last_change", "changes_week")


def origin_features(y: np.ndarray, t: int) -> list[float]:
    """Features of one series at origin index ``t`` (uses ``y[: t + 1]`` only)."""
    last = y[t]
    scale = last if last else 1.0
    features = [(last - y[max(0, t - lag)]) / scale for lag in LAGS]
    changes = np.flatnonzero(np.diff(y[max(0, t - 500) : t + 1]) != 0)
    offset = max(0, t - 500)
    if len(changes):
        since = t - (changes[-1] + offset)
        size = (y[changes[-1] + offset + 1] - y[changes[-1] + offset]) / scale
        week = int(np.sum(changes + offset > t - 168))
    else:
        since, size, week = 500, 0.0, 0
    return [*features, float(since), float(size), float(week)]


class GlobalBoosting:
    """Gradient boosting over all series (alias ``GBM``)."""

    alias = "GBM"

    def __init__(self, *, stride: int = 4, min_history: int = 168) -> None:
        self.stride = stride
        self.min_history = min_history

    def fit(self, df: pd.DataFrame, h: int, level: int = 90) -> GlobalBoosting:
        """Learn from ``df`` (``unique_id, ds, y``) targets up to h steps ahead."""
        rows = []
        targets = []
        for _, group in df.groupby("unique_id", sort=False):
            y = group["y"].to_numpy(dtype=float)
            hours = group["ds"].dt.hour.to_numpy()
            for t in range(self.min_history, len(y) - 1, self.stride):
                base = origin_features(y, t)
                for k in range(1, min(h, len(y) - 1 - t) + 1):
                    rows.append([k, hours[t], *base])
                    targets.append((y[t + k] - y[t]) / (y[t] if y[t] else 1.0))
        if not rows:
            raise ValueError("not enough history to fit the GBM model")
        x, target = np.asarray(rows), np.asarray(targets)
        tail = (100 - level) / 200
        self._models = {}
        for name, loss, quantile in (
            ("mean", "absolute_error", None),
            ("lo", "quantile", tail),
            ("hi", "quantile", 1 - tail),
        ):
            kwargs = {"quantile": quantile} if quantile is not None else {}
            model = HistGradientBoostingRegressor(
                loss=loss, max_iter=150, learning_rate=0.05, random_state=0, **kwargs
            )
            self._models[name] = model.fit(x, target)
        self.level = level
        return self

    def predict(self, df: pd.DataFrame, h: int, *, freq: str) -> pd.DataFrame:
        """Forecast ``h`` steps after each series' last value."""
        frames = []
        for uid, group in df.groupby("unique_id", sort=True):
            y = group["y"].to_numpy(dtype=float)
            t = len(y) - 1
            base = origin_features(y, t)
            hour = group["ds"].iloc[-1].hour
            x = np.asarray([[k, hour, *base] for k in range(1, h + 1)])
            scale = y[t] if y[t] else 1.0
            out = pd.DataFrame(
                {
                    "unique_id": uid,
                    "ds": pd.date_range(group["ds"].iloc[-1], periods=h + 1, freq=freq)[1:],
                }
            )
            mean = y[t] + scale * self._models["mean"].predict(x)
            lo = y[t] + scale * self._models["lo"].predict(x)
            hi = y[t] + scale * self._models["hi"].predict(x)
            out[self.alias] = mean
            out[f"{self.alias}-lo-{self.level}"] = np.minimum(lo, mean)
            out[f"{self.alias}-hi-{self.level}"] = np.maximum(hi, mean)
            frames.append(out)
        return pd.concat(frames, ignore_index=True)
