"""Read-only views of the store for people: filters, price history with forecasts, savings,
availability over time, Spot Advisor bands and risk forecasts (the dashboard's data)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from spotwise.pricing.clouds.registry import PROFILES
from spotwise.pricing.forecast.risk_rows import RISK_MODEL
from spotwise.pricing.store import MarketStore

if TYPE_CHECKING:
    from spotwise.pricing.operational import OperationalStore


def is_gpu(instance_type: str) -> bool:
    """Whether an instance type carries an accelerator (a cloud's GPU prefixes, or any shape of
    the GPU table)."""
    from spotwise.pricing.gpus import read_shapes

    name = instance_type.lower()
    if name.startswith(tuple(p for c in PROFILES.values() for p in c.gpu_prefixes)):
        return True
    return any(row.shape.lower() == name for row in read_shapes())


def is_empty(store: MarketStore) -> bool:
    """Whether nothing has been loaded yet."""
    return bool(store.query("SELECT count(*) AS n FROM prices").n.iloc[0] == 0)


def price_filters(store: MarketStore) -> dict[str, list[str]]:
    """The providers, regions and instance types with prices."""
    frame = store.query("SELECT DISTINCT provider, region, instance_type FROM prices")
    return {column: sorted(frame[column].unique()) for column in frame.columns}


def _where(filters: dict[str, Any]) -> tuple[str, list[Any]]:
    clauses, params = [], []
    for column, value in filters.items():
        if value:
            clauses.append(f"{column} = ?")
            params.append(value)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def price_history(
    store: MarketStore,
    *,
    provider: str | None = None,
    region: str | None = None,
    instance_type: str | None = None,
    max_series: int = 12,
) -> pd.DataFrame:
    """Spot and on-demand price change points per pool (``series`` = provider:zone:type:market),
    for at most ``max_series`` series (those with the most points)."""
    where, params = _where({"provider": provider, "region": region, "instance_type": instance_type})
    return store.query(
        f"""
        WITH p AS (
            SELECT provider || ':' || CASE WHEN zone = '' THEN region ELSE zone END || ':'
                || instance_type || ':' || market AS series, market, ts, price
            FROM prices{where}),
        top AS (SELECT series FROM p GROUP BY series ORDER BY count(*) DESC LIMIT {max_series})
        SELECT p.* FROM p JOIN top USING (series) ORDER BY series, ts
        """,
        params,
    )


def price_series_count(
    store: MarketStore,
    *,
    provider: str | None = None,
    region: str | None = None,
    instance_type: str | None = None,
) -> int:
    """How many series :func:`price_history` chooses from for these filters."""
    where, params = _where({"provider": provider, "region": region, "instance_type": instance_type})
    return int(
        store.query(
            f"SELECT count(DISTINCT (provider, region, zone, instance_type, market)) AS n "
            f"FROM prices{where}",
            params,
        ).n.iloc[0]
    )


def price_forecasts(store: OperationalStore, series: list[str]) -> pd.DataFrame:
    """The stored price forecasts (mean and interval per model) of some series."""
    if not series:
        return pd.DataFrame(columns=["unique_id", "ds", "model", "mean", "lo", "hi", "level"])
    marks = ", ".join("?" for _ in series)
    return store.query(
        f"""SELECT unique_id, ds, model, mean, lo, hi, level FROM forecasts
        WHERE unique_id IN ({marks}) AND p_preempt IS NULL ORDER BY unique_id, model, ds""",
        list(series),
    )


def savings(store: MarketStore, *, provider: str | None = None) -> pd.DataFrame:
    """Per pool with both prices: the newest spot and on-demand price and the saving (%)."""
    where, params = _where({"provider": provider})
    # A spot pool is paired with its own zone's on-demand price, else its region's (zone ''):
    # AWS prices spot per zone and on-demand per region. The region column of a zone's row
    # is region_of_zone's, written when the row was stored.
    frame = store.query(
        f"""
        WITH newest AS (
            SELECT provider, region, zone, instance_type, market,
                arg_max(price, ts) AS price, max(ts) AS ts FROM prices{where} GROUP BY ALL)
        SELECT s.provider, s.region, s.zone, s.instance_type, s.price AS spot_price,
            o.price AS on_demand_price, round(100 * (1 - s.price / o.price), 1) AS saving_pct,
            s.ts AS spot_as_of, o.ts AS on_demand_as_of
        FROM newest s JOIN newest o ON s.provider = o.provider AND s.region = o.region
            AND o.zone IN (s.zone, '') AND s.instance_type = o.instance_type
        WHERE s.market = 'spot' AND o.market = 'on_demand'
        QUALIFY row_number() OVER (
            PARTITION BY s.provider, s.region, s.zone, s.instance_type
            ORDER BY o.zone = s.zone DESC) = 1
        ORDER BY saving_pct DESC
        """,
        params,
    )
    gpu = frame["instance_type"].map(is_gpu)
    frame.insert(4, "gpu", gpu)
    # GPU users read this table: GPU shapes first, then by saving
    return frame.sort_values(["gpu", "saving_pct"], ascending=False).reset_index(drop=True)


def availability_by_hour(
    store: MarketStore,
    *,
    source: str = "cbl-availability-1node",
    bucket_hours: int = 6,
    days: int = 30,
) -> pd.DataFrame:
    """Share of time each pool's spot capacity was available per time bucket, over the last
    ``days`` of the source's data (heatmap data: pool, bucket, bucket_end, available)."""
    hours = int(bucket_hours)
    return store.query(
        f"""
        WITH recent AS (
            SELECT * FROM availability WHERE source = ? AND ts >= (
                SELECT max(ts) - INTERVAL '{int(days)} days' FROM availability WHERE source = ?))
        SELECT zone || ' ' || instance_type AS pool,
            time_bucket(INTERVAL '{hours} hours', ts) AS bucket,
            time_bucket(INTERVAL '{hours} hours', ts) + INTERVAL '{hours} hours' AS bucket_end,
            avg(CASE WHEN available_nodes >= target_nodes THEN 1.0 ELSE 0.0 END) AS available
        FROM recent GROUP BY ALL ORDER BY pool, bucket
        """,
        [source, source],
    )


def availability_sources(store: MarketStore) -> list[str]:
    """Sources that hold availability traces."""
    return list(store.query("SELECT DISTINCT source FROM availability ORDER BY 1").source)


def advisor_bands(store: MarketStore, *, instance_type: str | None = None) -> pd.DataFrame:
    """The newest Spot Advisor band and saving per region and instance type."""
    where, params = _where({"instance_type": instance_type})
    return store.query(
        f"""SELECT region, instance_type, arg_max(interruption_band, observed) AS band,
            arg_max(savings_pct, observed) AS savings_pct, max(observed) AS observed
            FROM bands{where}
            GROUP BY ALL ORDER BY region, instance_type""",
        params,
    )


DOWN_AT_END = "down: no capacity to lose"
UP_AT_END = "up: the forecast"


def risk_forecasts(store: OperationalStore) -> pd.DataFrame:
    """The newest preemption-risk forecast per pool (of the shipped configuration: rows an
    older one wrote are not its): P(preempted within the horizon), the expected hours to
    preemption, when its trace ends (``as_of``) and whether the pool was up then (a pool that
    was down has P = 1: no run to lose, nothing to forecast)."""
    frame = store.query(
        """SELECT unique_id AS pool, model, horizon AS horizon_minutes, p_preempt,
            mean AS expected_hours_to_preemption, ds AS as_of, created_at
        FROM forecasts WHERE model = ? ORDER BY p_preempt DESC""",
        [RISK_MODEL],
    )
    # the risk forecaster gives exactly 1 only for a pool down at its last tick
    frame["state"] = [DOWN_AT_END if p >= 1.0 else UP_AT_END for p in frame["p_preempt"]]
    return frame
