"""Pool terms from the market store: latest prices and a preemption MTBF per pool.

The MTBF of a pool comes, in order of preference, from its 1-node availability or preemption
traces (time available / number of times it was taken away), else from the Spot Advisor band
of its region (the band's mid frequency of interruption per month), else from a default band.
AWS on-demand prices are not in the bundled data: they come from ``--on-demand-price`` or are
estimated from the Spot Advisor saving (``spot / (1 − saving)``). Each estimate is recorded as
an assumption.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from spotwise.policy.risk import DEFAULT_BAND, SHIPPED, band_mtbf_hours
from spotwise.pricing.store import MarketStore


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolTerms:
    """One pool as the planner sees it."""

    provider: str
    region: str
    zone: str
    instance_type: str
    spot_price: float
    price_time: pd.Timestamp
    on_demand_price: float
    mtbf_hours: float
    on_demand_source: str
    mtbf_source: str

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.zone or self.region}:{self.instance_type}"


def pools_from_store(
    store: MarketStore,
    instance_type: str,
    provider: str = "all",
    on_demand_price: float | None = None,
) -> list[PoolTerms]:
    """Every pool of ``instance_type`` (any letter case) with a spot price in the store
    (``provider`` = aws, gcp or all)."""
    instance_type = instance_type.strip().lower()
    where = "" if provider == "all" else "AND provider = ?"
    params: list[Any] = [instance_type] + ([] if provider == "all" else [provider])
    spot = store.query(
        f"""SELECT provider, region, zone, instance_type, arg_max(price, ts) AS price,
                   max(ts) AS ts
            FROM prices WHERE market = 'spot' AND lower(instance_type) = ? {where}
            GROUP BY ALL ORDER BY ALL""",
        params,
    )
    on_demand = store.query(
        f"""SELECT provider, region, arg_max(price, ts) AS price FROM prices
            WHERE market = 'on_demand' AND lower(instance_type) = ? {where} GROUP BY ALL""",
        params,
    )
    bands = store.query(
        """SELECT region, arg_max(interruption_band, observed) AS band,
                  arg_max(savings_pct, observed) AS saving
           FROM bands WHERE lower(instance_type) = ? GROUP BY ALL""",
        [instance_type],
    )
    trace_mtbf = _trace_mtbf(store, instance_type)
    od = {(r.provider, r.region): float(r.price) for r in on_demand.itertuples()}
    band = {r.region: (int(r.band), float(r.saving)) for r in bands.itertuples()}
    pools = []
    for row in spot.itertuples():
        region_band = band.get(row.region)
        if on_demand_price is not None:
            od_price, od_source = on_demand_price, "given with --on-demand-price"
        elif (row.provider, row.region) in od:
            od_price, od_source = od[(row.provider, row.region)], "store"
        elif region_band and 0 < region_band[1] < 100:
            od_price = float(row.price) / (1 - region_band[1] / 100)
            od_source = f"estimated from the Spot Advisor saving {region_band[1]:.0f}%"
        else:
            continue
        if (row.provider, row.zone) in trace_mtbf:
            mtbf, source = trace_mtbf[(row.provider, row.zone)]
        elif region_band:
            mtbf = band_mtbf_hours(region_band[0])
            source = f"Spot Advisor band {region_band[0]} of {row.region}"
        else:
            mtbf, source = band_mtbf_hours(DEFAULT_BAND), f"default band {DEFAULT_BAND}"
        pools.append(
            PoolTerms(
                provider=row.provider,
                region=row.region,
                zone=row.zone,
                instance_type=row.instance_type,
                spot_price=float(row.price),
                price_time=pd.Timestamp(row.ts),
                on_demand_price=od_price,
                mtbf_hours=mtbf,
                on_demand_source=od_source,
                mtbf_source=source,
            )
        )
    return pools


def _trace_mtbf(store: MarketStore, instance_type: str) -> dict[tuple[str, str], tuple[float, str]]:
    """MTBF per (provider, zone) from 1-node traces: the expected run of a spot instance
    started now, by the risk forecaster the decisions read."""
    from spotwise.pricing.forecast.run import pool_risks

    return {
        (r.provider, r.zone): (
            r.mtbf_hours,
            f"risk forecaster '{SHIPPED}' over {r.trace_hours:.0f} h of traces to "
            f"{r.as_of:%Y-%m-%d %H:%M} UTC",
        )
        for r in pool_risks(store, horizon_minutes=60.0, instance_type=instance_type)
    }
