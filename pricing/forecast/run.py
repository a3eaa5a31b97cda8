"""``spotwise forecast run``: fresh price forecasts and preemption risk for every series in the
store, written to the ``forecasts`` table (each model's previous forecast of a series is
replaced).

Prices: each series on its cloud's price grid (its profile's: AWS's hourly, the catalogs' daily);
``Naive`` and ``ARIMA`` for every series, the global ``GBM`` for the hourly ones. Risk: for every
pool with a 1-node availability or preemption trace, the risk forecast the decisions act on
(:data:`spotwise.pricing.forecast.risk_forecasters.SHIPPED_RISK`, its label in the rows' model:
:data:`~spotwise.pricing.forecast.risk_rows.RISK_MODEL`), fitted on the pool's own history, gives
``p_preempt`` within the horizon at the newest tick (1 when the pool is unavailable then), and
``mean`` the expected hours of a spot run started there now: the MTBF a new instance in that pool
faces, which the training guard's checkpoint interval reads.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.core.progress import UNCOUNTED, Progress, Steps, silent
from spotwise.core.threads import one_thread_each
from spotwise.pricing.clouds.registry import PROFILES
from spotwise.pricing.forecast.boosting import GlobalBoosting
from spotwise.pricing.forecast.grid import to_grid
from spotwise.pricing.forecast.models import Arima110, Naive
from spotwise.pricing.forecast.panel import PanelForecaster, PerSeries, forecast_panel
from spotwise.pricing.forecast.risk_forecasters import SHIPPED_RISK, History
from spotwise.pricing.forecast.risk_rows import RISK_MODEL
from spotwise.pricing.frames import unique_id, utc_now
from spotwise.pricing.operational import open_operational
from spotwise.pricing.store import MarketStore


@dataclass(frozen=True, slots=True, kw_only=True)
class ForecastRun:
    """What one forecasting run wrote."""

    price_series: int
    risk_pools: int
    rows: int
    seconds: float
    short_series: tuple[str, ...] = ()
    """Price series left out: fewer than :data:`MIN_POINTS` points on their grid."""


def _long(
    predicted: pd.DataFrame,
    models: list[str],
    horizon_steps: int,
    level: int,
    created: pd.Timestamp,
) -> pd.DataFrame:
    """Wide statsforecast-style columns to the store's long rows."""
    frames = []
    for alias in models:
        if alias not in predicted.columns:
            continue
        part = predicted[["unique_id", "ds"]].copy()
        part["model"] = alias
        part["horizon"] = predicted.groupby("unique_id").cumcount() + 1
        part["mean"] = predicted[alias]
        part["lo"] = predicted[f"{alias}-lo-{level}"]
        part["hi"] = predicted[f"{alias}-hi-{level}"]
        frames.append(part)
    out = pd.concat(frames, ignore_index=True)
    out["level"] = float(level)
    out["p_preempt"] = np.nan
    out["created_at"] = created
    return out[out["horizon"] <= horizon_steps]


MIN_POINTS = 3
"""The fewest points on its grid a price series needs to be forecast."""


class PriceForecasts(NamedTuple):
    """:func:`price_forecasts`' result."""

    frame: pd.DataFrame
    series: int
    """Series forecast."""
    short_series: tuple[str, ...]
    """Series left out: fewer than :data:`MIN_POINTS` points on their grid."""


@dataclass(frozen=True, slots=True)
class ForecastInputs:
    """What a forecasting run reads from the store (it holds the store only to read them)."""

    prices: pd.DataFrame
    availability: pd.DataFrame
    """The 1-node availability traces, ordered by trace, pool and time."""


def read_inputs(store: MarketStore) -> ForecastInputs:
    """Every price row, and every 1-node availability trace."""
    return ForecastInputs(
        prices=store.query(
            "SELECT source, provider, region, zone, instance_type, market, ts, price FROM prices"
        ),
        availability=read_availability(store),
    )


def read_availability(store: MarketStore, instance_type: str | None = None) -> pd.DataFrame:
    """The 1-node availability traces (of ``instance_type``, or all), oldest tick first."""
    where, params = "", []
    if instance_type is not None:
        where, params = " AND lower(instance_type) = ?", [instance_type.lower()]
    return store.query(
        "SELECT source, provider, zone, instance_type, ts, available_nodes FROM availability "
        f"WHERE source LIKE 'cbl-%-1node'{where} "
        "ORDER BY source, provider, zone, instance_type, ts",
        params,
    )


def price_forecasts(
    prices: pd.DataFrame,
    *,
    horizon_hours: int,
    level: int,
    created: pd.Timestamp,
    progress: Progress,
    steps: Steps = UNCOUNTED,
) -> PriceForecasts:
    """Forecast rows for every price series long enough to fit, with the series counted and
    those left out (``steps``: one per series and model)."""
    if prices.empty:
        return PriceForecasts(pd.DataFrame(), 0, ())
    grids, short = _grids(_newest_source(prices))
    rows = []
    n_series = 0
    plans = [(p, f, g, _models(f, g, steps)) for p, f, g in grids]
    steps.expect(sum(g["unique_id"].nunique() * len(m) for _, _, g, m in plans))
    for provider, freq, grid, models in plans:
        ahead = horizon_hours if freq == "h" else max(1, math.ceil(horizon_hours / 24))
        series = grid["unique_id"].nunique()
        n_series += series
        progress(f"{provider}: {series} series, {'hourly' if freq == 'h' else 'daily'}")
        predicted = forecast_panel(grid, models, ahead, freq=freq, level=level)
        _count_global_models(models, series, steps)
        rows.append(_long(predicted, [m.alias for m in models], ahead, level, created))
    frame = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
    return PriceForecasts(frame, n_series, tuple(sorted(short)))


def _count_global_models(models: list[PanelForecaster], series: int, steps: Steps) -> None:
    """Count each global model's fit as one step per series (per-series models count their
    own)."""
    for model in models:
        if not isinstance(model, PerSeries):
            steps.advance(series)


def _newest_source(prices: pd.DataFrame) -> pd.DataFrame:
    """The price rows with their series id, each series from its newest source only, with the
    newest time that source saw (``end``: the price holds until then)."""
    prices["unique_id"] = [
        unique_id(p, z or r, t, m)
        for p, r, z, t, m in zip(
            prices["provider"],
            prices["region"],
            prices["zone"],
            prices["instance_type"],
            prices["market"],
            strict=True,
        )
    ]
    prices["ts"] = pd.to_datetime(prices["ts"], utc=True)
    source_end = prices.groupby("source")["ts"].transform("max")
    newest = prices.assign(end=source_end).groupby("unique_id")["end"].transform("max")
    return prices[source_end == newest].assign(end=source_end)


def _grids(
    prices: pd.DataFrame,
) -> tuple[list[tuple[str, str, pd.DataFrame]], set[str]]:
    """(provider, frequency, grid) per provider, source and end, on the provider's price grid
    (its profile's; daily for a provider without one), series shorter than :data:`MIN_POINTS`
    left out; and the ids of those left out."""
    grids = []
    short: set[str] = set()
    for (provider, _, end), group in prices.groupby(["provider", "source", "end"]):
        profile = PROFILES.get(provider)
        freq = profile.price_grid if profile else "D"
        grid = to_grid(group[["unique_id", "ts", "price"]], freq, end=end)
        counts = grid.groupby("unique_id")["ds"].transform("size")
        grid = grid[counts >= MIN_POINTS]
        short.update(set(group["unique_id"]) - set(grid["unique_id"]))
        if not grid.empty:
            grids.append((provider, freq, grid))
    return grids, short


def _models(freq: str, grid: pd.DataFrame, steps: Steps) -> list[PanelForecaster]:
    """The models of one grid: the last value and ARIMA per series, and the global GBM where
    an hourly panel is big enough to learn from."""
    models: list[PanelForecaster] = [
        PerSeries(Naive, on_series=steps.advance),
        PerSeries(Arima110, on_series=steps.advance),
    ]
    if freq == "h" and len(grid) > 2000:
        models.append(GlobalBoosting())
    return models


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolRisk:
    """The shipped risk forecast's view of one pool, fitted on its newest 1-node trace."""

    provider: str
    zone: str
    instance_type: str
    as_of: pd.Timestamp
    """The trace's newest tick."""
    p_preempt: float
    """P(a run now is taken back within the horizon); 1 when the pool is down then."""
    mtbf_hours: float
    """Expected hours of a spot run started now (what a new instance there faces)."""
    trace_hours: float


def pool_risks(
    store: MarketStore, *, horizon_minutes: float, instance_type: str | None = None
) -> list[PoolRisk]:
    """Every pool with a 1-node trace (of ``instance_type``, or all), by the risk forecast the
    decisions read (:data:`spotwise.pricing.forecast.risk_forecasters.SHIPPED_RISK`)."""
    availability = read_availability(store, instance_type)
    return risks_of(availability, horizon_minutes=horizon_minutes)


def risks_of(availability: pd.DataFrame, *, horizon_minutes: float) -> list[PoolRisk]:
    """:func:`pool_risks` of 1-node availability traces already read."""
    risks = []
    # A pool may have several traces: use the newest.
    ends = availability.groupby(["provider", "zone", "instance_type", "source"])["ts"].max()
    newest_source = {key[:3]: key[3] for key in ends.groupby(level=[0, 1, 2]).idxmax()}
    for (source, provider, zone, pool_type), group in availability.groupby(
        ["source", "provider", "zone", "instance_type"], sort=True
    ):
        if newest_source[(provider, zone, pool_type)] != source or len(group) < 2:
            continue
        ts = pd.to_datetime(group["ts"], utc=True)
        up = group["available_nodes"].to_numpy() > 0
        gap = float(np.median(np.diff(ts.to_numpy()).astype("timedelta64[s]").astype(float)))
        hours_per_tick = gap / 3600
        forecaster = SHIPPED_RISK.fit(History(up[None, :], hours_per_tick))
        risks.append(
            PoolRisk(
                provider=provider,
                zone=zone,
                instance_type=pool_type,
                as_of=ts.iloc[-1],
                p_preempt=forecaster.p_preempted(0, max(1, round(horizon_minutes * 60 / gap))),
                mtbf_hours=forecaster.expected_run(0, fresh=True) * hours_per_tick,
                trace_hours=len(up) * hours_per_tick,
            )
        )
    return risks


def risk_forecasts(
    availability: pd.DataFrame, *, horizon_minutes: float, created: pd.Timestamp
) -> pd.DataFrame:
    """One risk row per pool with a 1-node trace: P(preempted within the horizon) now, and
    the expected hours of a run started now."""
    rows = [
        {
            "unique_id": unique_id(r.provider, r.zone, r.instance_type, "spot"),
            "ds": r.as_of,
            "model": RISK_MODEL,
            "horizon": round(horizon_minutes),
            "mean": r.mtbf_hours,
            "lo": np.nan,
            "hi": np.nan,
            "level": np.nan,
            "p_preempt": r.p_preempt,
            "created_at": created,
        }
        for r in risks_of(availability, horizon_minutes=horizon_minutes)
    ]
    return pd.DataFrame(rows)


def run_forecasts(
    store_path: Path,
    *,
    horizon_hours: int = 24,
    risk_horizon_minutes: float = 60.0,
    level: int = 90,
    progress: Progress = silent,
    steps: Steps = UNCOUNTED,
    clock: Clock = SYSTEM_CLOCK,
) -> ForecastRun:
    """Forecast everything in the store at ``store_path`` and write the forecasts in one
    transaction. The store is held only to read the inputs and to write the result: other
    processes use it while the models fit, each on one thread (:mod:`spotwise.core.threads`)."""
    began = time.perf_counter()  # timing only: how long the run took, for its report
    created = utc_now(clock)
    with MarketStore.open_to_read(store_path) as store:
        inputs = read_inputs(store)
    with one_thread_each():
        prices, n_series, short = price_forecasts(
            inputs.prices,
            horizon_hours=horizon_hours,
            level=level,
            created=created,
            progress=progress,
            steps=steps,
        )
        progress("preemption risk per pool")
        risk = risk_forecasts(
            inputs.availability, horizon_minutes=risk_horizon_minutes, created=created
        )
    parts = [f for f in (prices, risk) if not f.empty]
    written = 0
    if parts:
        with open_operational(store_path) as store:
            written = store.replace_forecasts(pd.concat(parts, ignore_index=True))
    return ForecastRun(
        price_series=n_series,
        risk_pools=len(risk),
        rows=written,
        seconds=round(time.perf_counter() - began, 2),
        short_series=short,
    )
