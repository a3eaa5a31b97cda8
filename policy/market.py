"""Pool terms from the market store: the prices and the preemption risk of every pool of one
instance type, each with where it came from and when it held.

- Spot: the newest spot price of the pool in the store.
- On demand: per region, given with ``--on-demand-price``, else the store's price list, else
  estimated from a Spot Advisor saving of the same era as the spot prices, else the labelled
  reference price (:mod:`spotwise.pricing.quotes`); a pool with none of these is left out, and
  the plan says why.
- Risk (MTBF): the risk forecaster the decisions read, fitted on the pool's own 1-node traces;
  a pool with no trace gets the prior those traced pools give (their median, with their range
  as its uncertainty: the same forecast, on the same scale). A Spot Advisor band counts the
  interruptions of running instances in a month, a scale a thousand times longer than a trace's
  runs of capacity, so it is shown beside the risk, never mixed into it.

Anything older than :data:`~spotwise.pricing.quotes.STALE_AFTER_DAYS` when the plan is made is
flagged stale.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from spotwise.policy.errors import PolicyError
from spotwise.pricing.forecast.prior import DEFAULT_PRIOR
from spotwise.pricing.forecast.risk_forecasters import SHIPPED_RISK
from spotwise.pricing.quotes import Quote, is_stale, on_demand_quote, store_quote
from spotwise.pricing.store import MarketStore


@dataclass(frozen=True, slots=True, kw_only=True)
class Risk:
    """A pool's mean time to preemption, where it came from, and how sure it is."""

    mtbf_hours: float
    kind: str
    """``trace`` (the pool's own), ``prior`` (other traced pools) or ``default``."""
    source: str
    as_of: pd.Timestamp | None = None
    """The newest tick the number rests on."""
    low_hours: float | None = None
    high_hours: float | None = None
    """The range of the traced pools a prior comes from (None for a pool's own trace)."""

    def describe(self) -> str:
        spread = (
            f" (traced pools {self.low_hours:.1f}–{self.high_hours:.1f} h)"
            if self.low_hours is not None and self.high_hours is not None
            else ""
        )
        return f"MTBF {self.mtbf_hours:.1f} h{spread} from {self.source}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Band:
    """A Spot Advisor interruption band (0 < 5 %, …, 4 > 20 % a month) and its snapshot date."""

    band: int
    observed: pd.Timestamp


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolTerms:
    """One pool as the planner sees it."""

    provider: str
    region: str
    zone: str
    instance_type: str
    spot: Quote
    on_demand: Quote
    risk: Risk
    band: Band | None = None

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.zone or self.region}:{self.instance_type}"

    @property
    def spot_price(self) -> float:
        return self.spot.usd_per_hour

    @property
    def on_demand_price(self) -> float:
        return self.on_demand.usd_per_hour

    @property
    def mtbf_hours(self) -> float:
        return self.risk.mtbf_hours

    def stale_inputs(self, now: pd.Timestamp) -> list[str]:
        """Which of the pool's inputs held more than a week before ``now``."""
        stale = []
        if self.spot.stale(now):
            stale.append("spot price")
        if self.on_demand.stale(now):
            stale.append("on-demand price")
        if is_stale(self.risk.as_of, now):
            stale.append("risk")
        return stale


@dataclass(frozen=True, slots=True)
class StorePools:
    """The pools of one instance type the store can price, and those it cannot (with why)."""

    pools: list[PoolTerms]
    left_out: dict[str, str] = field(default_factory=dict)
    """Pool name → why it has no plan."""
    spot_types: tuple[str, ...] = ()
    """Instance types the store has spot prices of (to say what there is, when this one is
    not among them)."""


def pools_from_store(
    store: MarketStore,
    instance_type: str,
    provider: str = "all",
    on_demand_price: float | None = None,
) -> StorePools:
    """Every pool of ``instance_type`` (any letter case) with a spot price in the store
    (``provider`` = aws, gcp or all), priced and with its risk."""
    instance_type = instance_type.strip().lower()
    where = "" if provider == "all" else "AND provider = ?"
    params: list[Any] = [instance_type] + ([] if provider == "all" else [provider])
    spot_rows = store.query(
        f"""SELECT DISTINCT provider, region, zone, instance_type FROM prices
            WHERE market = 'spot' AND lower(instance_type) = ? {where} ORDER BY ALL""",
        params,
    )
    if spot_rows.empty:
        types = store.query(
            "SELECT DISTINCT lower(instance_type) AS t FROM prices WHERE market = 'spot' ORDER BY t"
        )
        return StorePools(pools=[], spot_types=tuple(types["t"]))
    bands = _bands(store, instance_type)
    risks = _risks(store, instance_type)
    spot = {
        row: store_quote(store, "spot", "zone" if row[2] else "region", row[2] or row[1], row[3])
        for row in spot_rows.itertuples(index=False, name=None)
    }
    pools, left_out = [], {}
    for (pool_provider, region, zone, pool_type), quote in spot.items():
        if quote is None:
            continue
        name = f"{pool_provider}:{zone or region}:{pool_type}"
        same_region = [
            q
            for (p, r, _, _), q in spot.items()
            if q is not None and (p, r) == (pool_provider, region)
        ]
        try:
            od = on_demand_quote(store, region, pool_type, same_region, given_price=on_demand_price)
        except ValueError as exc:
            left_out[name] = str(exc)
            continue
        pools.append(
            PoolTerms(
                provider=pool_provider,
                region=region,
                zone=zone,
                instance_type=pool_type,
                spot=quote,
                on_demand=od,
                risk=risks.get((pool_provider, zone)) or risks[("", "")],
                band=bands.get(region),
            )
        )
    return StorePools(pools=pools, left_out=left_out)


def require_pools(found: StorePools, instance_type: str) -> None:
    """Refuse an instance type the store has no spot price of, naming what it has and the
    command that collects it.

    Raises:
        PolicyError: when the store has no spot price of ``instance_type``.
    """
    if found.pools or found.left_out:
        return
    have = ", ".join(found.spot_types[:8]) + (" …" if len(found.spot_types) > 8 else "")
    raise PolicyError(
        f"no spot price of {instance_type} in the store"
        + (f" (it has {have})" if have else " (it is empty: spotwise data load)")
        + f"; collect them: spotwise collect aws --region us-east-1 --instance-types "
        f"{instance_type}"
    )


def _bands(store: MarketStore, instance_type: str) -> dict[str, Band]:
    rows = store.query(
        """SELECT region, arg_max(interruption_band, observed) AS band, max(observed) AS observed
           FROM bands WHERE lower(instance_type) = ? GROUP BY ALL""",
        [instance_type],
    )
    return {
        r.region: Band(band=int(r.band), observed=pd.Timestamp(r.observed))
        for r in rows.itertuples()
    }


def _risks(store: MarketStore, instance_type: str) -> dict[tuple[str, str], Risk]:
    """Risk per (provider, zone) from the pool's own traces, and under ``("", "")`` the prior
    of a pool with none: the traced pools of this type, else of any type, else the default."""
    from spotwise.pricing.forecast.run import pool_risks

    own = pool_risks(store, horizon_minutes=60.0, instance_type=instance_type)
    risks = {
        (r.provider, r.zone): Risk(
            mtbf_hours=r.mtbf_hours,
            kind="trace",
            source=(
                f"risk forecast {SHIPPED_RISK.label} over {r.trace_hours:.0f} h of this "
                "pool's traces"
            ),
            as_of=r.as_of,
        )
        for r in own
    }
    # only a type with no trace at all borrows the traces of the others (fitting them all is
    # work a traced type does not need)
    peers, whose = (
        (own, f"{instance_type} pools")
        if own
        else (pool_risks(store, horizon_minutes=60.0), "pools of other types")
    )
    risks[("", "")] = _prior(
        [r.mtbf_hours for r in peers], [r.as_of for r in peers], f"{len(peers)} traced {whose}"
    )
    return risks


def _prior(mtbfs: Sequence[float], as_ofs: Sequence[pd.Timestamp], whose: str) -> Risk:
    """The risk of an untraced pool: the median of the traced pools' MTBFs, their range its
    uncertainty (or the labelled default when nothing is traced)."""
    if not mtbfs:
        return Risk(
            mtbf_hours=DEFAULT_PRIOR.mean_run_hours,
            kind="default",
            source=f"the {DEFAULT_PRIOR.source} (load traces: spotwise data load)",
        )
    return Risk(
        mtbf_hours=float(statistics.median(mtbfs)),
        kind="prior",
        source=f"the prior of {whose}: their median, risk forecast {SHIPPED_RISK.label}",
        as_of=max(as_ofs),
        low_hours=float(min(mtbfs)),
        high_hours=float(max(mtbfs)),
    )
