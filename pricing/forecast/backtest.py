"""Forecasting long frames and rolling-origin backtests (statsforecast-style column names).

``forecast(df, models, h)`` fits every model on every series and returns ``unique_id, ds``
plus ``{alias}``, ``{alias}-lo-{level}``, ``{alias}-hi-{level}``. ``cross_validation(df, models,
h, origins)`` refits at each origin on the data before it only and adds ``cutoff`` and ``y``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from spotwise.pricing.forecast.models import Forecaster

ModelFactory = Callable[[], Forecaster]


def forecast(
    df: pd.DataFrame,
    models: Sequence[ModelFactory],
    h: int,
    *,
    freq: str,
    level: int = 90,
    on_series: Callable[[], None] | None = None,
) -> pd.DataFrame:
    """Forecast ``h`` steps after each series' last value (``on_series``: called after each).

    The columns are gathered as arrays and framed once: thousands of small frames cost more
    than the fits."""
    if df.empty:
        raise ValueError("no series to forecast")
    ordered = df.sort_values(["unique_id", "ds"], kind="stable")
    ids = ordered["unique_id"].to_numpy()
    values = ordered["y"].to_numpy(dtype=float)
    bounds = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1], True])
    columns: dict[str, list[np.ndarray]] = {}
    for begin, end in itertools.pairwise(bounds):
        for make in models:
            model = make()
            result = model.fit(values[begin:end]).predict(h, level)
            columns.setdefault(model.alias, []).append(result.mean)
            columns.setdefault(f"{model.alias}-lo-{level}", []).append(result.lo)
            columns.setdefault(f"{model.alias}-hi-{level}", []).append(result.hi)
        if on_series is not None:
            on_series()
    last = pd.DatetimeIndex(ordered["ds"].iloc[bounds[1:] - 1])
    step = pd.Timedelta(pd.tseries.frequencies.to_offset(freq)).value
    ahead = pd.to_timedelta(np.tile(np.arange(1, h + 1), len(last)) * step, unit="ns")
    ahead = ahead.as_unit(last.unit)
    out = pd.DataFrame({"unique_id": np.repeat(ids[bounds[:-1]], h), "ds": last.repeat(h) + ahead})
    for name, parts in columns.items():
        out[name] = np.concatenate(parts)
    return out


def cross_validation(
    df: pd.DataFrame,
    models: Sequence[ModelFactory],
    h: int,
    origins: Sequence[pd.Timestamp],
    *,
    freq: str,
    level: int = 90,
    min_history: int = 48,
) -> pd.DataFrame:
    """Forecasts from every origin (fitted on ``ds < origin`` only) next to the truth."""
    frames = []
    for origin in origins:
        history = df[df["ds"] < origin]
        counts = history.groupby("unique_id")["ds"].transform("size")
        history = history[counts >= min_history]
        if history.empty:
            continue
        predicted = forecast(history, models, h, freq=freq, level=level)
        predicted["cutoff"] = origin
        frames.append(predicted)
    if not frames:
        raise ValueError("no origin has enough history before it")
    result = pd.concat(frames, ignore_index=True)
    return result.merge(df, on=["unique_id", "ds"], how="inner")


def score(
    cv: pd.DataFrame, aliases: Sequence[str], *, baseline: str = "Naive", level: int = 90
) -> dict[str, dict[str, float]]:
    """MASE (model MAE / baseline MAE, pooled) and interval coverage per model."""
    base_mae = float(np.mean(np.abs(cv["y"] - cv[baseline])))
    scores = {}
    for alias in aliases:
        mae = float(np.mean(np.abs(cv["y"] - cv[alias])))
        inside = (cv["y"] >= cv[f"{alias}-lo-{level}"] - 1e-12) & (
            cv["y"] <= cv[f"{alias}-hi-{level}"] + 1e-12
        )
        scores[alias] = {
            "mase": round(mae / base_mae, 4) if base_mae else float("nan"),
            f"coverage_{level}": round(float(inside.mean()), 4),
        }
    return scores
