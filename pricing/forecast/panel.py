"""Forecasting a panel (a long frame ``unique_id, ds, y`` of many series): the interface every
price forecaster offers, per-series models and the global GBM alike.

``fit(df, h, level)`` then ``predict(df, h, freq=...)`` returns ``unique_id, ds`` plus
``{alias}``, ``{alias}-lo-{level}`` and ``{alias}-hi-{level}`` for the ``h`` steps after each
series' last value (statsforecast's column names). :data:`PANEL_FORECASTERS` names them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol

import pandas as pd

from spotwise.pricing.forecast.backtest import ModelFactory, forecast
from spotwise.pricing.forecast.boosting import GlobalBoosting
from spotwise.pricing.forecast.models import FORECASTERS


class PanelForecaster(Protocol):
    """Fits a panel of series and forecasts each one ``h`` steps ahead with an interval."""

    alias: str

    def fit(self, df: pd.DataFrame, h: int, level: int = 90) -> PanelForecaster:
        """Learn from ``df`` (``unique_id, ds, y``; each series oldest first)."""
        ...

    def predict(self, df: pd.DataFrame, h: int, *, freq: str) -> pd.DataFrame:
        """The ``h`` steps after each series' last value in ``df``."""
        ...


class PerSeries:
    """A one-series :class:`~pricing.forecast.models.Forecaster` over a panel: each series is
    fitted on its own history when it is forecast."""

    def __init__(self, model: ModelFactory, on_series: Callable[[], None] | None = None) -> None:
        self.model = model
        self.on_series = on_series
        """Called after each series is forecast (a progress bar's step)."""
        self.alias = model().alias
        self.level = 90

    def fit(self, df: pd.DataFrame, h: int, level: int = 90) -> PerSeries:
        """Remember the interval level (each series is fitted when predicting)."""
        self.level = level
        return self

    def predict(self, df: pd.DataFrame, h: int, *, freq: str) -> pd.DataFrame:
        """Forecasts of every series ``h`` steps ahead."""
        return forecast(df, [self.model], h, freq=freq, level=self.level, on_series=self.on_series)


PANEL_FORECASTERS: dict[str, Callable[[], PanelForecaster]] = {
    **{alias: partial(PerSeries, model) for alias, model in FORECASTERS.items()},
    GlobalBoosting.alias: GlobalBoosting,
}


def forecast_panel(
    df: pd.DataFrame, models: Sequence[PanelForecaster], h: int, *, freq: str, level: int = 90
) -> pd.DataFrame:
    """Every model's forecast of every series, side by side."""
    frames = [model.fit(df, h, level).predict(df, h, freq=freq) for model in models]
    merged = frames[0]
    for frame in frames[1:]:
        merged = merged.merge(frame, on=["unique_id", "ds"])
    return merged
