"""The price ahead of a capped spot instance: whether a pool's stored price forecast (what
``spotwise forecast run`` wrote to the market store's ``forecasts`` table) says its spot price
will rise above the job's cap (the policy's bid, or ``--max-price``) within a window.

A cloud that takes a cap (Azure's ``max_price``, AWS's ``MaxPrice``) evicts the instance when
its price rises above it; the supervisor reads this to move the job first (a checkpoint, then
a relaunch through the normal migration path). A store that cannot be read now, a pool with no
forecast, or a forecast that ends before the window are no crossing: the job runs on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pandas as pd

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.ledger.prices import pool_zone_type
from spotwise.pricing.errors import StoreError
from spotwise.pricing.frames import region_of_zone, unique_id
from spotwise.pricing.store import MarketStore
from spotwise.pricing.views import price_forecasts

MODELS = ("ARIMA", "GBM", "Naive", "SeasonalNaive")
"""The stored forecast read, first found first (ARIMA: every series forecast has one)."""
REREAD_S = 300.0
"""Wall seconds a series' forecast is kept before the store is read again (forecasts are
written hourly at most)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Crossing:
    """When a pool's forecast first puts its spot price above the cap."""

    pool: str
    at: float
    """Epoch seconds: the start of the first forecast step above the cap (now, if the step in
    effect already is)."""
    price: float
    """The forecast's mean price of that step, USD/h."""
    cap: float
    model: str

    def describe(self, now: float) -> str:
        """One line: the price, the cap and when."""
        return (
            f"{self.model} price forecast for {self.pool} reaches ${self.price:.4f}/h, above "
            f"the ${self.cap:.4f}/h cap, in {max(0.0, self.at - now):.0f} s"
        )


class PriceOutlook(Protocol):
    """What the supervisor asks of the price forecasts."""

    def crossing(self, pool: str, cap: float, start: float, end: float) -> Crossing | None:
        """The first forecast step of ``pool`` between ``start`` and ``end`` (epoch seconds;
        the step in effect at ``start`` counts) whose price is above ``cap``, if any."""
        ...


def first_crossing(
    steps: pd.DataFrame, pool: str, cap: float, start: float, end: float
) -> Crossing | None:
    """The first of ``steps`` (one model's: ``ds`` epoch seconds, ``mean``, ``model``), from
    the one in effect at ``start`` to the last that begins by ``end``, priced above ``cap``."""
    if steps.empty:
        return None
    steps = steps.sort_values("ds")
    begun = steps[steps["ds"] <= start]
    window = steps[(steps["ds"] > start) & (steps["ds"] <= end)]
    if not begun.empty:
        window = pd.concat([begun.tail(1), window])
    for ds, mean, model in zip(window["ds"], window["mean"], window["model"], strict=True):
        if mean is not None and math.isfinite(mean) and mean > cap:
            return Crossing(
                pool=pool, at=max(float(ds), start), price=float(mean), cap=cap, model=str(model)
            )
    return None


class StoredPriceForecasts:
    """The price forecasts stored in the market store at ``store_path``, of one provider's
    instance type (a pool is a zone of it, or a replayed trace named after one)."""

    def __init__(
        self,
        store_path: Path,
        *,
        provider: str,
        instance_type: str,
        models: Sequence[str] = MODELS,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.store_path, self.provider, self.instance_type = store_path, provider, instance_type
        self.models, self.clock = tuple(models), clock
        self._read: dict[str, tuple[float, pd.DataFrame]] = {}

    def series(self, pool: str) -> tuple[str, ...]:
        """The forecast series of ``pool``'s spot price (``provider:zone:type:spot``), then of
        its region's (a catalog priced per region)."""
        zone, instance_type = pool_zone_type(pool, self.instance_type)
        region = region_of_zone(self.provider, zone)
        places = (zone, region) if region != zone else (zone,)
        return tuple(unique_id(self.provider, p, instance_type, "spot") for p in places)

    def crossing(self, pool: str, cap: float, start: float, end: float) -> Crossing | None:
        """See :meth:`PriceOutlook.crossing`."""
        return first_crossing(self.steps(pool), pool, cap, start, end)

    def steps(self, pool: str) -> pd.DataFrame:
        """The preferred model's forecast steps of ``pool`` (``ds`` in epoch seconds, ``mean``,
        ``model``), read again after :data:`REREAD_S`; empty when there are none."""
        now = self.clock.monotonic()
        kept = self._read.get(pool)
        if kept is None or now - kept[0] >= REREAD_S:
            kept = (now, self._load(self.series(pool)))
            self._read[pool] = kept
        return kept[1]

    def _load(self, series: tuple[str, ...]) -> pd.DataFrame:
        """The stored forecast of the first of ``series`` that has one, of the first of
        :attr:`models` it has."""
        empty = pd.DataFrame(columns=["ds", "mean", "model"])
        if not self.store_path.exists():
            return empty
        try:
            with MarketStore.open_to_read(self.store_path, wait_s=1.0) as store:
                rows = price_forecasts(store, list(series))
        except StoreError:  # busy or unreadable now: no forecast, asked again later
            return empty
        for one, model in ((s, m) for s in series for m in self.models):
            mine = rows[(rows["unique_id"] == one) & (rows["model"] == model)]
            if not mine.empty:
                ds = pd.to_datetime(mine["ds"], utc=True).map(pd.Timestamp.timestamp)
                return pd.DataFrame({"ds": ds, "mean": mine["mean"], "model": model})
        return empty
