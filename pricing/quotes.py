"""Prices with where they came from and when they held (docs/design.md, "Money is real
or labelled"): the newest price of a pool or region in the store, an on-demand price estimated from
a Spot Advisor saving of the same era, a price the user gave, or the one reference price of the
bundled benchmark, labelled as not a quote. The executor's price book and the planner both
quote from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spotwise.pricing.collect_commands import collect_command, for_shape

if TYPE_CHECKING:  # pandas and the store load only when a quote is read (the CLI starts fast)
    import pandas as pd

    from spotwise.pricing.store import MarketStore

REFERENCE_INSTANCE_TYPE = "p3.2xlarge"
REFERENCE_SPOT_USD = 0.918
"""The p3.2xlarge spot price of the bundled CBL traces ($/h)."""
REFERENCE_ON_DEMAND_USD = 3.06
"""The p3.2xlarge on-demand price the bundled benchmark compares against ($/h)."""
REFERENCE_SOURCE = "reference p3.2xlarge price (not a quote)"
SAME_ERA_DAYS = 180
"""How far a Spot Advisor snapshot may lie from the spot prices it turns into on-demand ones."""
STALE_AFTER_DAYS = 7
"""A price or forecast older than this, when it is shown, is flagged stale."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Quote:
    """A price per hour, where it came from, and when it held (None: given now by the user,
    or a reference that never held anywhere)."""

    usd_per_hour: float
    source: str
    as_of: str | None = None
    """ISO 8601 time of the price (UTC)."""

    def describe(self) -> str:
        """The price as a person reads it, with its source and time."""
        when = f" as of {self.as_of[:16].replace('T', ' ')} UTC" if self.as_of else ""
        return f"${self.usd_per_hour:,.3f}/h ({self.source}{when})"

    @property
    def kind(self) -> str:
        """One word for a table: store, estimate, given or reference."""
        if self.source.startswith("store"):
            return "store"
        if self.source.startswith("estimated"):
            return "estimate"
        if self.source.startswith("given"):
            return "given"
        return "reference"

    def stale(self, now: pd.Timestamp) -> bool:
        """Whether the price held more than :data:`STALE_AFTER_DAYS` before ``now`` (a given or
        reference price has no time and is never stale; a reference is labelled instead)."""
        return is_stale(self.as_of, now)


def is_stale(as_of: str | pd.Timestamp | None, now: pd.Timestamp) -> bool:
    """Whether ``as_of`` lies more than :data:`STALE_AFTER_DAYS` before ``now``."""
    import pandas as pd

    if as_of is None:
        return False
    when = pd.Timestamp(as_of)
    when = when.tz_localize("UTC") if when.tzinfo is None else when
    return bool(now - when > pd.Timedelta(days=STALE_AFTER_DAYS))


def given(price: float, flag: str) -> Quote:
    """A price the user gave with ``flag``."""
    return Quote(usd_per_hour=price, source=f"given with {flag}")


def reference(
    market: str, instance_type: str, what: str, flag: str, region: str | None = None
) -> Quote:
    """The reference price of ``market`` (spot or on_demand), for the reference instance type
    only.

    Raises:
        ValueError: for another instance type, naming the flag that gives the price and the
            command that collects it (its cloud's, else each cloud's: :func:`for_shape`).
    """
    if instance_type.lower() != REFERENCE_INSTANCE_TYPE:
        collect = for_shape(
            instance_type,
            lambda cloud: collect_command(
                cloud,
                regions=[region] if region else [],
                shapes=[instance_type],
                on_demand=market == "on_demand",
            ),
        )
        raise ValueError(f"no {what} in the store: give it with {flag}, or collect it ({collect})")
    price = REFERENCE_SPOT_USD if market == "spot" else REFERENCE_ON_DEMAND_USD
    return Quote(usd_per_hour=price, source=REFERENCE_SOURCE)


def store_quote(
    store: MarketStore, market: str, column: str, place: str, instance_type: str
) -> Quote | None:
    """The newest ``market`` price of ``instance_type`` where ``column`` (zone or region) is
    ``place``, or None."""
    import pandas as pd

    if column not in ("zone", "region"):
        raise ValueError(f"column must be zone or region, got {column!r}")
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


def advisor_estimate(
    store: MarketStore, region: str, instance_type: str, spot_here: Sequence[Quote]
) -> Quote | None:
    """spot / (1 − saving): the mean stored spot quote of the region's pools and the Spot
    Advisor saving of the snapshot nearest to it, if one lies within :data:`SAME_ERA_DAYS` (a
    saving of another year says little about these prices)."""
    import pandas as pd

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
    if distance.iloc[nearest] > pd.Timedelta(days=SAME_ERA_DAYS):
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


def on_demand_quote(
    store: MarketStore,
    region: str,
    instance_type: str,
    spot_here: Sequence[Quote],
    *,
    given_price: float | None = None,
) -> Quote:
    """The on-demand price of ``instance_type`` in ``region``: given, else the store's newest
    (the AWS Price List, or GCP's), else estimated from a Spot Advisor saving of the same era
    as ``spot_here``, else the labelled reference price.

    Raises:
        ValueError: when none applies, naming the flag and the collecting command.
    """
    if given_price is not None:
        return given(given_price, "--on-demand-price")
    return (
        store_quote(store, "on_demand", "region", region, instance_type)
        or advisor_estimate(store, region, instance_type, spot_here)
        or reference(
            "on_demand",
            instance_type,
            f"on-demand price of {instance_type} in {region}",
            "--on-demand-price",
            region,
        )
    )
