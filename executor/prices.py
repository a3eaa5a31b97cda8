"""The prices a supervised job pays and is compared against, each with where it came from and
when it held (design.md, "Money is real or labelled").

Per spot pool: the price given with ``--spot-price``, else the newest spot price of its zone
and instance type in the store. Per region: the on-demand price of the same instance type given
with ``--on-demand-price``, else from the store, else estimated from the region's Spot Advisor
saving of the same era as its spot prices. What is known from nowhere is the reference
p3.2xlarge price, labelled as not a quote. The ledger's on-demand baseline is the hours the job
needed, each priced at the on-demand rate of the region it ran in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from spotwise.policy.job import REFERENCE
from spotwise.pricing.frames import region_of_zone
from spotwise.pricing.sources.traces import cbl_pool
from spotwise.pricing.store import MarketStore

REFERENCE_SOURCE = "reference p3.2xlarge price (not a quote)"
SAME_ERA = pd.Timedelta(days=180)
"""How far a Spot Advisor snapshot may lie from the spot prices it turns into on-demand ones."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Quote:
    """A price per hour, where it came from, and when it held (None: given now by the user,
    or a reference that never held anywhere)."""

    usd_per_hour: float
    source: str
    as_of: str | None = None
    """ISO 8601 time of the price (UTC)."""

    def describe(self) -> str:
        when = f" as of {self.as_of[:16].replace('T', ' ')} UTC" if self.as_of else ""
        return f"${self.usd_per_hour:,.3f}/h ({self.source}{when})"


def _given(price: float, flag: str) -> Quote:
    return Quote(usd_per_hour=price, source=f"given with {flag}")


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceBook:
    """Spot quotes per pool and on-demand quotes per region, for one instance type."""

    instance_type: str
    home_region: str
    """Where an on-demand instance of the job runs."""
    spot: dict[str, Quote] = field(default_factory=dict)
    on_demand: dict[str, Quote] = field(default_factory=dict)
    region_of: dict[str, str] = field(default_factory=dict)
    """Each pool's region."""

    def spot_quote(self, pool: str) -> Quote:
        """The spot price of ``pool``."""
        return self.spot[pool]

    def on_demand_quote(self, pool: str | None = None) -> Quote:
        """The on-demand price of the instance type in ``pool``'s region (None: the home one)."""
        region = self.region_of.get(pool, self.home_region) if pool else self.home_region
        return self.on_demand.get(region) or self.on_demand[self.home_region]

    def typical_spot(self) -> float:
        """The median spot price over the pools (upper median): the job's terms for a policy
        that takes one spot price."""
        prices = sorted(q.usd_per_hour for q in self.spot.values())
        return prices[len(prices) // 2]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def flat(pools: Sequence[str], spot_price: float, on_demand_price: float) -> PriceBook:
        """One spot and one on-demand price for every pool, labelled as reference prices
        (what a test or a job with no store knows)."""
        spot = Quote(usd_per_hour=spot_price, source=REFERENCE_SOURCE)
        return PriceBook(
            instance_type=REFERENCE_INSTANCE_TYPE,
            home_region="",
            spot=dict.fromkeys(pools, spot),
            on_demand={"": Quote(usd_per_hour=on_demand_price, source=REFERENCE_SOURCE)},
        )


REFERENCE_INSTANCE_TYPE = "p3.2xlarge"


def pool_zone_type(pool: str, instance_type: str) -> tuple[str, str]:
    """Zone and instance type of a launcher's pool: a replayed trace's name
    (``us-east-1a_v100_1``) names both; a cloud pool is a zone of ``instance_type``."""
    if "_" in pool:
        return cbl_pool(pool)
    return pool, instance_type


def price_book(
    store: MarketStore,
    pools: Sequence[str],
    *,
    instance_type: str,
    home_region: str | None = None,
    spot_price: float | None = None,
    on_demand_price: float | None = None,
) -> PriceBook:
    """The quotes of ``pools`` (see the module docstring); ``home_region`` defaults to the first
    pool's."""
    spot: dict[str, Quote] = {}
    region_of: dict[str, str] = {}
    types = set()
    for pool in pools:
        zone, pool_type = pool_zone_type(pool, instance_type)
        types.add(pool_type)
        region_of[pool] = region_of_zone("aws", zone)
        spot[pool] = (
            _given(spot_price, "--spot-price")
            if spot_price is not None
            else _store_quote(store, "spot", "zone", zone, pool_type)
            or _reference(REFERENCE.spot_price, pool_type, f"spot price of {pool}", "--spot-price")
        )
    the_type = types.pop() if len(types) == 1 else instance_type
    home = home_region or (region_of[pools[0]] if pools else "")
    on_demand = {}
    for region in {home, *region_of.values()}:
        if on_demand_price is not None:
            on_demand[region] = _given(on_demand_price, "--on-demand-price")
            continue
        spot_here = [spot[p] for p in pools if region_of[p] == region]
        on_demand[region] = (
            _store_quote(store, "on_demand", "region", region, the_type)
            or _advisor_estimate(store, region, the_type, spot_here)
            or _reference(
                REFERENCE.on_demand_price,
                the_type,
                f"on-demand price of {the_type} in {region}",
                "--on-demand-price",
            )
        )
    return PriceBook(
        instance_type=the_type,
        home_region=home,
        spot=spot,
        on_demand=on_demand,
        region_of=region_of,
    )


def _reference(price: float, instance_type: str, what: str, flag: str) -> Quote:
    """The reference price, for the reference instance type only.

    Raises:
        ValueError: for another instance type, naming the flag that gives the price.
    """
    if instance_type.lower() != REFERENCE_INSTANCE_TYPE:
        raise ValueError(
            f"no {what} in the store: give it with {flag}, or collect prices "
            "into the store first (spotwise data load, or spotwise collect aws)"
        )
    return Quote(usd_per_hour=price, source=REFERENCE_SOURCE)


def _store_quote(
    store: MarketStore, market: str, column: str, place: str, instance_type: str
) -> Quote | None:
    """The newest ``market`` price of ``instance_type`` where ``column`` = ``place``."""
    rows = store.query(
        f"""SELECT arg_max(price, ts) AS price, max(ts) AS ts, arg_max(source, ts) AS source
            FROM prices WHERE market = ? AND {column} = ? AND lower(instance_type) = ?""",
        [market, place, instance_type.lower()],
    )
    if rows.empty or pd.isna(rows["price"].iloc[0]):
        return None
    return Quote(
        usd_per_hour=float(rows["price"].iloc[0]),
        source=f"store: {rows['source'].iloc[0]}, {place}",
        as_of=pd.Timestamp(rows["ts"].iloc[0]).tz_convert("UTC").isoformat(),
    )


def _advisor_estimate(
    store: MarketStore, region: str, instance_type: str, spot_here: Sequence[Quote]
) -> Quote | None:
    """spot / (1 − saving): the mean stored spot quote of the region's pools and the Spot
    Advisor saving of the snapshot nearest to it, if one lies within :data:`SAME_ERA` (a
    saving of another year says little about these prices)."""
    priced = [q for q in spot_here if q.source.startswith("store") and q.as_of]
    if not priced:
        return None
    when = max(pd.Timestamp(str(q.as_of)) for q in priced)
    rows = store.query(
        """SELECT savings_pct AS saving, observed FROM bands
           WHERE region = ? AND lower(instance_type) = ? AND savings_pct > 0
             AND savings_pct < 100""",
        [region, instance_type.lower()],
    )
    if rows.empty:
        return None
    distance = (pd.to_datetime(rows["observed"], utc=True) - when).abs()
    nearest = int(distance.to_numpy().argmin())
    if distance.iloc[nearest] > SAME_ERA:
        return None
    saving = float(rows["saving"].iloc[nearest])
    observed = pd.Timestamp(rows["observed"].iloc[nearest]).tz_convert("UTC")
    mean_spot = sum(q.usd_per_hour for q in priced) / len(priced)
    return Quote(
        usd_per_hour=mean_spot / (1 - saving / 100),
        source=(
            f"estimated: spot / (1 − the Spot Advisor saving of {saving:.0f}% in {region}, "
            f"snapshot of {observed:%Y-%m-%d})"
        ),
        as_of=when.isoformat(),
    )
