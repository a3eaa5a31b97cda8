"""Pool terms from the market store: the prices and the preemption risk of every pool of one
instance type, or of every cloud's shapes of one GPU (the GPU table's equivalents), each with
where it came from and when it held, the cloud's notice window and its checkpoint storage and
egress list prices.

- Spot: the newest spot price of the pool in the store.
- On demand: per region, given with ``--on-demand-price``, else the store's price list, else
  estimated from a Spot Advisor saving of the same era as the spot prices, else the labelled
  reference price (:mod:`spotwise.pricing.quotes`); a pool with none of these is left out, and
  the plan says why.
- Risk (MTBF): the risk forecaster the decisions read, fitted on the pool's own 1-node traces.
  A pool with no trace takes, in turn: its own Azure eviction band (Resource Graph's share of
  spot VMs evicted an hour, ``collect azure``: the MTBF of a constant hazard at the band's
  middle, :func:`band_risk`); the prior the traced pools give (of its type, else of any type
  or cloud: their median, with their range as its uncertainty); the prior of the eviction bands
  stored for other pools, of any cloud; and only then the labelled default. A Spot Advisor band
  (AWS) counts the interruptions of running instances in a month, a scale a thousand times
  longer than a trace's runs of capacity, so it is shown beside the risk, never mixed into it.

Anything older than :data:`~spotwise.pricing.quotes.STALE_AFTER_DAYS` when the plan is made is
flagged stale.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from spotwise.policy.errors import PolicyError
from spotwise.policy.pools.clouds import STORAGE_LISTS
from spotwise.pricing.clouds.profile import StorageList
from spotwise.pricing.clouds.registry import PROFILES
from spotwise.pricing.collect_commands import collect_all, collect_each, collect_shape
from spotwise.pricing.forecast.prior import DEFAULT_PRIOR
from spotwise.pricing.forecast.risk_forecasters import SHIPPED_RISK
from spotwise.pricing.quotes import Quote, is_stale, on_demand_quote, store_quote
from spotwise.pricing.store import MarketStore

if TYPE_CHECKING:
    from spotwise.pricing.gpus import GpuShape


@dataclass(frozen=True, slots=True, kw_only=True)
class Risk:
    """A pool's mean time to preemption, where it came from, and how sure it is."""

    mtbf_hours: float
    kind: str
    """``trace`` (the pool's own), ``band`` (its eviction band), ``prior`` (other pools' traces
    or bands) or ``default``."""
    source: str
    as_of: pd.Timestamp | None = None
    """The newest tick the number rests on."""
    low_hours: float | None = None
    high_hours: float | None = None
    """The range of the traced pools a prior comes from (None for a pool's own trace)."""

    def describe(self) -> str:
        """One line: the MTBF, its range (the other pools' for a prior, the band's edges for a
        band), and its source."""
        whose = "the band's edges" if self.kind == "band" else "other pools"
        spread = (
            f" ({whose} {self.low_hours:.1f}–{self.high_hours:.1f} h)"
            if self.low_hours is not None and self.high_hours is not None
            else ""
        )
        return f"MTBF {self.mtbf_hours:.1f} h{spread} from {self.source}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Band:
    """An interruption band and its snapshot date: AWS's Spot Advisor (0 < 5 %, …, 4 > 20 %
    a month) or Azure's eviction rate (the same steps, an hour)."""

    band: int
    observed: pd.Timestamp
    provider: str


HOURLY_BANDS = frozenset(name for name, profile in PROFILES.items() if profile.hourly_bands)
"""The clouds whose bands count evictions an hour (Azure Resource Graph's eviction rate): on the
scale of a running VM's life, so they give a pool with no trace its MTBF."""
BAND_RATES = {0: (0.0, 0.05), 1: (0.05, 0.10), 2: (0.10, 0.15), 3: (0.15, 0.20), 4: (0.20, 0.30)}
"""Each band's share evicted an hour, low to high (the open top band, 20 % and more, taken as
20-30 %)."""


def _mtbf_at(share: float) -> float:
    """The mean hours to eviction under a constant hazard that evicts ``share`` an hour."""
    return -1.0 / math.log1p(-share)


def band_risk(band: Band) -> Risk:
    """A pool's risk from its hourly eviction band: the MTBF at the band's middle share, the
    band's edges its range (an open edge: none)."""
    low, high = BAND_RATES[band.band]
    label = f"{low:.0%}-{high:.0%}" if band.band < 4 else f"{low:.0%}+"
    return Risk(
        mtbf_hours=_mtbf_at((low + high) / 2),
        kind="band",
        source=(
            f"its {band.provider} eviction band {band.band} ({label} evicted an hour, observed "
            f"{band.observed:%Y-%m-%d}) at its middle, a constant hazard"
        ),
        as_of=band.observed,
        low_hours=_mtbf_at(high) if band.band < 4 else None,
        high_hours=_mtbf_at(low) if low > 0 else None,
    )


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
    shape: GpuShape | None = None
    """The GPU table's row of the pool's shape (a plan by GPU), with its source."""
    notice_s: float | None = None
    """Seconds between the cloud's preemption notice and the take-back (None: unknown)."""
    storage_list: StorageList | None = None
    """The cloud's checkpoint storage and egress list prices (None: the plan's own terms)."""

    @property
    def name(self) -> str:
        """``cloud:zone-or-region:instance type``."""
        return f"{self.provider}:{self.zone or self.region}:{self.instance_type}"

    @property
    def spot_price(self) -> float:
        """The spot quote's price, $/h."""
        return self.spot.usd_per_hour

    @property
    def on_demand_price(self) -> float:
        """The on-demand quote's price, $/h."""
        return self.on_demand.usd_per_hour

    @property
    def mtbf_hours(self) -> float:
        """The risk's mean time to preemption, hours."""
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
    """The pools the store can price, and those it cannot (with why)."""

    pools: list[PoolTerms]
    left_out: dict[str, str] = field(default_factory=dict)
    """Pool name → why it has no plan."""
    spot_types: tuple[str, ...] = ()
    """Instance types the store has spot prices of (to say what there is, when this one is
    not among them)."""
    unpriced: dict[str, str] = field(default_factory=dict)
    """For a plan by GPU: cloud → the command that collects a price of its shapes, for each
    cloud with such shapes and no stored spot price of any."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Context:
    """What every pool of one plan shares: the user's on-demand price, the clouds' notice
    windows, and the risks fitted once for the whole plan."""

    on_demand_price: float | None = None
    notices: Mapping[str, float] = field(default_factory=dict)
    risks: _RiskCache = field(default_factory=lambda: _RiskCache())


def pools_from_store(
    store: MarketStore,
    instance_type: str,
    provider: str = "all",
    on_demand_price: float | None = None,
    *,
    notices: Mapping[str, float] | None = None,
    shape: GpuShape | None = None,
) -> StorePools:
    """Every pool of ``instance_type`` (any letter case) with a spot price in the store
    (``provider`` = aws, gcp, azure or all), priced and with its risk (``notices``: each
    cloud's notice window in seconds; ``shape``: the GPU table's row of the type)."""
    context = _Context(on_demand_price=on_demand_price, notices=dict(notices or {}))
    return _pools_of(store, instance_type.strip().lower(), provider, context, shape)


def pools_for_gpu(
    store: MarketStore,
    gpu: str,
    count: int,
    provider: str = "all",
    on_demand_price: float | None = None,
    *,
    notices: Mapping[str, float] | None = None,
) -> StorePools:
    """The pools of every cloud's shapes with ``count`` of ``gpu`` (or the fewest more, where a
    cloud sells none with exactly that many: :func:`spotwise.pricing.gpus.equivalents`), and
    for each cloud with no stored price of them, the command that collects one."""
    from spotwise.pricing import gpus

    context = _Context(on_demand_price=on_demand_price, notices=dict(notices or {}))
    found = StorePools(pools=[])
    for cloud, shapes in gpus.equivalents(gpu, count).items():
        if provider not in ("all", cloud):
            continue
        before = (len(found.pools), len(found.left_out))
        for shape in shapes:
            one = _pools_of(store, shape.shape.lower(), cloud, context, shape)
            found.pools.extend(one.pools)
            found.left_out.update(one.left_out)
        if (len(found.pools), len(found.left_out)) == before:
            found.unpriced[cloud] = collect_all(cloud, shapes=[s.shape for s in shapes], gpu=gpu)
    return found


def _pools_of(
    store: MarketStore,
    instance_type: str,
    provider: str,
    context: _Context,
    shape: GpuShape | None,
) -> StorePools:
    """The pools of one instance type: each spot price with its on-demand price and risk."""
    spot = _spot_quotes(store, instance_type, provider)
    if not spot:
        types = store.query(
            "SELECT DISTINCT lower(instance_type) AS t FROM prices WHERE market = 'spot' ORDER BY t"
        )
        return StorePools(pools=[], spot_types=tuple(types["t"]))
    bands = _bands(store, instance_type)
    risks = context.risks.of(store, instance_type)
    hourly = {
        region: band_risk(band) for region, band in bands.items() if band.provider in HOURLY_BANDS
    }
    pools, left_out = [], {}
    for key, quote in spot.items():
        pool_provider, region, zone, pool_type = key
        same_region = [q for k, q in spot.items() if k[:2] == (pool_provider, region)]
        try:
            od = on_demand_quote(
                store, region, pool_type, same_region, given_price=context.on_demand_price
            )
        except ValueError as exc:
            left_out[f"{pool_provider}:{zone or region}:{pool_type}"] = str(exc)
            continue
        pools.append(
            PoolTerms(
                provider=pool_provider,
                region=region,
                zone=zone,
                instance_type=pool_type,
                spot=quote,
                on_demand=od,
                risk=risks.get((pool_provider, zone))
                or (hourly.get(region) if pool_provider in HOURLY_BANDS else None)
                or risks[("", "")],
                band=bands.get(region),
                shape=shape,
                notice_s=context.notices.get(pool_provider),
                storage_list=STORAGE_LISTS.get(pool_provider),
            )
        )
    return StorePools(pools=pools, left_out=left_out)


def _spot_quotes(
    store: MarketStore, instance_type: str, provider: str
) -> dict[tuple[str, str, str, str], Quote]:
    """(provider, region, zone, type) → the newest spot quote, of every pool of the type."""
    where = "" if provider == "all" else "AND provider = ?"
    params: list[Any] = [instance_type] + ([] if provider == "all" else [provider])
    rows = store.query(
        f"""SELECT DISTINCT provider, region, zone, instance_type FROM prices
            WHERE market = 'spot' AND lower(instance_type) = ? {where} ORDER BY ALL""",
        params,
    )
    quotes = {}
    for row in rows.itertuples(index=False, name=None):
        column, place = ("zone", row[2]) if row[2] else ("region", row[1])
        quote = store_quote(store, "spot", column, place, row[3])
        if quote is not None:
            quotes[row] = quote
    return quotes


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
        + f"; collect them: {collect_shape(instance_type)}"
    )


def require_gpu_pools(found: StorePools, gpu: str, count: int) -> None:
    """Refuse a GPU no cloud has a stored price of, with each cloud's collecting command.

    Raises:
        PolicyError: when no shape of ``gpu`` × ``count`` has a spot price in the store.
    """
    if found.pools or found.left_out:
        return
    if not found.unpriced:
        raise PolicyError(f"no cloud's shape in the GPU table carries {count} × {gpu}")
    commands = "; ".join(f"{c}: {cmd}" for c, cmd in found.unpriced.items())
    raise PolicyError(f"no stored price of a shape with {count} × {gpu}: collect one ({commands})")


def _bands(store: MarketStore, instance_type: str | None) -> dict[str, Band]:
    """The newest band of each region of ``instance_type`` (None: of each region and type,
    keyed ``region/type``)."""
    where, params = (
        ("WHERE lower(instance_type) = ?", [instance_type]) if instance_type else ("", [])
    )
    rows = store.query(
        f"""SELECT provider, region, lower(instance_type) AS type,
                   arg_max(interruption_band, observed) AS band, max(observed) AS observed
            FROM bands {where} GROUP BY ALL""",
        params,
    )
    return {
        (r.region if instance_type else f"{r.region}/{r.type}"): Band(
            band=int(r.band), observed=pd.Timestamp(r.observed), provider=str(r.provider)
        )
        for r in rows.itertuples()
    }


class _RiskCache:
    """Risks per instance type, and the prior of all traced pools fitted once for a plan that
    looks at several types."""

    def __init__(self) -> None:
        self._all: list[Any] | None = None
        self._bands: list[Risk] | None = None

    def of(self, store: MarketStore, instance_type: str) -> dict[tuple[str, str], Risk]:
        """Risk per (provider, zone) from the pool's own traces, and under ``("", "")`` the
        prior of a pool with none: the traced pools of this type, else of any type, else the
        default."""
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
        # only a type with no trace at all borrows the traces of the others (fitting them all
        # is work a traced type does not need, and is done once a plan)
        if own:
            peers, whose = own, f"{instance_type} pools"
        else:
            if self._all is None:
                self._all = pool_risks(store, horizon_minutes=60.0)
            clouds = ", ".join(sorted({r.provider for r in self._all}))
            peers, whose = self._all, f"pools of other types ({clouds})"
        if peers:
            risks[("", "")] = _prior(
                [r.mtbf_hours for r in peers],
                [r.as_of for r in peers],
                f"the prior of {len(peers)} traced {whose}: their median, risk forecast "
                f"{SHIPPED_RISK.label}",
            )
        else:
            risks[("", "")] = self._band_prior(store)
        return risks

    def _band_prior(self, store: MarketStore) -> Risk:
        """With no trace at all: the prior of every hourly eviction band stored (any type,
        any cloud), else the labelled default."""
        if self._bands is None:
            every = _bands(store, None).values()
            self._bands = [band_risk(b) for b in every if b.provider in HOURLY_BANDS]
        if not self._bands:
            return Risk(
                mtbf_hours=DEFAULT_PRIOR.mean_run_hours,
                kind="default",
                source=(
                    f"the {DEFAULT_PRIOR.source} (load traces: spotwise data load; or collect "
                    f"eviction bands: {collect_each(sorted(HOURLY_BANDS))})"
                ),
            )
        clouds = ", ".join(sorted(HOURLY_BANDS))
        return _prior(
            [r.mtbf_hours for r in self._bands],
            [r.as_of for r in self._bands if r.as_of is not None],
            f"the prior of {len(self._bands)} pools' eviction bands ({clouds}; no pool is "
            "traced): their median",
        )


def _prior(mtbfs: Sequence[float], as_ofs: Sequence[pd.Timestamp], source: str) -> Risk:
    """The risk of an untraced pool: the median of other pools' MTBFs, their range its
    uncertainty."""
    return Risk(
        mtbf_hours=float(statistics.median(mtbfs)),
        kind="prior",
        source=source,
        as_of=max(as_ofs) if as_ofs else None,
        low_hours=float(min(mtbfs)),
        high_hours=float(max(mtbfs)),
    )
