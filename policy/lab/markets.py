"""Priced markets for the suite: a trace set's pools given their cloud, region, spot price
series and on-demand price from the bundled real price files, for the classes where a decision
between pools of different prices, regions and clouds arises.

A trace pool is named ``<zone>_<gpu>[_<memory>]_<count>`` (``us-east-1c_v100_1``,
``europe-west4-a_a100_40gb_8``): the GPU table (``data/gpu_shapes.csv``) gives the shapes that
carry those GPUs, and the bundled price files (read as every ``data load`` reads them) the one
of those shapes priced in that zone or its region: the pool's cloud and instance type. Two
pricings, each said in the market's ``pricing`` line:

- ``listed``: every pool at its own listing: the spot price series of its zone (a price history:
  replayed in the trace's relative time from the file's first day), or of its region (a price
  list: its newest listing), and its region's on-demand price, else the labelled reference price
  of the reference instance type. A zone with no history of its own takes its region's median.
- ``spread``: the real spread between zones: the reference instance type's zone listings in the
  same files run from $0.918/h to $3.06/h and more (thin zones price spot at on demand). The pools
  are ranked by their share of time up in the set's training part, and the most available pool
  gets the dearest listing, the least available the cheapest: cheap pools that go and come back
  beside a dear one that stays, the setting where a failover that never leaves the dear pool
  loses most. Prices are kept as fractions of on demand.

Each pool keeps its own region, so moves between regions pay the clouds' egress list prices for
the checkpoint (:mod:`spotwise.policy.pools.regions`). Nothing here is a forecast or a claim on its
own: the suite runs policies on these markets, held back and cold, against the exact bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from spotwise.policy.errors import PolicyError
from spotwise.policy.traces import Pool, TraceSet
from spotwise.pricing import gpus
from spotwise.pricing.frames import region_of_zone
from spotwise.pricing.ingest import read_paths
from spotwise.pricing.quotes import REFERENCE_INSTANCE_TYPE, REFERENCE_ON_DEMAND_USD

PRICES = "prices"
"""The folder of bundled price files, under the data folder."""
LADDER = (0.918, 1.0767, 1.1469, 3.06)
"""$/h: spot listings of the reference instance type (p3.2xlarge) in the bundled price history,
cheapest to dearest (zone medians of us-east-1c, eu-west-2a, eu-central-1a, us-east-2c), against
its $3.06/h on demand."""
LADDER_PICK = {2: (0, 3), 3: (0, 2, 3), 4: (0, 1, 2, 3)}
"""Which listings a market of 2, 3 or 4 pools gets (the cheapest and the dearest always)."""
_POOL = re.compile(r"^(?P<zone>[a-z0-9-]+?)_(?P<gpu>[a-z0-9]+?)(?:_(?P<gb>\d+)gb)?_(?P<count>\d+)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class MarketSpec:
    """A priced market: some pools of a trace set, how they are priced, the checkpoint a move
    carries and whether a failed request ends what runs."""

    trace_set: str
    pools: tuple[str, ...]
    pricing: str
    """``listed`` or ``spread``."""
    checkpoint_gb: float = 0.0
    failed_request_ends: bool = False

    @property
    def name(self) -> str:
        """One label: set, pools, pricing, checkpoint, request terms."""
        ends = " teardown" if self.failed_request_ends else ""
        gb = f" {self.checkpoint_gb:g}GB" if self.checkpoint_gb else ""
        return f"{self.trace_set} {len(self.pools)} pools {self.pricing}{gb}{ends}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    """Where a trace pool runs and what: its cloud, zone, region and instance type."""

    cloud: str
    zone: str
    region: str
    instance_type: str


class PriceFiles:
    """The bundled price files, read once: every ``prices`` row of every file under
    ``data/prices``."""

    def __init__(self, data: Path) -> None:
        self._data = data
        self._rows: pd.DataFrame | None = None

    def rows(self) -> pd.DataFrame:
        """Every price row (``provider, region, zone, instance_type, market, ts, price``)."""
        if self._rows is None:
            read = read_paths([self._data / PRICES])
            frames = [f.frames["prices"] for f in read.files if "prices" in f.frames]
            self._rows = pd.concat(frames, ignore_index=True)
        return self._rows

    def place_of(self, pool: str) -> Place:
        """The cloud, region and instance type of a trace pool named ``<zone>_<gpu>_<count>``:
        the GPU table's shape carrying those GPUs that the price files price there.

        Raises:
            PolicyError: for a name of another form, or a pool no price file covers.
        """
        match = _POOL.match(pool)
        if match is None:
            raise PolicyError(f"{pool}: not a pool named <zone>_<gpu>[_<memory>gb]_<count>")
        zone, count = match["zone"], int(match["count"])
        rows = self.rows()
        spot = rows[rows["market"] == "spot"]
        for shape in gpus.shapes(match["gpu"], count):
            if match["gb"] and shape.gpu_memory_gb != float(match["gb"]):
                continue
            region = region_of_zone(shape.cloud, zone)
            here = spot[
                (spot["provider"] == shape.cloud)
                & (spot["instance_type"].str.lower() == shape.machine_type.lower())
                & ((spot["zone"] == zone) | (spot["region"] == region))
            ]
            if not here.empty:
                return Place(
                    cloud=shape.cloud, zone=zone, region=region, instance_type=shape.machine_type
                )
        raise PolicyError(f"{pool}: no bundled spot price of a shape with {count} × {match['gpu']}")

    def priceable(self, traces: TraceSet) -> tuple[str, ...]:
        """The pools of ``traces`` with a spot and an on-demand price."""
        out = []
        for name in traces.names:
            try:
                self.on_demand(self.place_of(name))
            except PolicyError:
                continue
            out.append(name)
        return tuple(out)

    def spot_series(self, place: Place, seconds: np.ndarray) -> np.ndarray:
        """$/h at each of ``seconds`` from the trace's start: the zone's price history (its
        region's median where the zone has none), replayed from the file's first day; a
        region's newest listing where the files list prices by region."""
        rows = self._of(place, "spot")
        own = rows[rows["zone"] == place.zone].sort_values("ts")
        if own.empty and (rows["zone"] == "").any():
            newest = rows[rows["zone"] == ""].sort_values("ts")["price"].iloc[-1]
            return np.full(len(seconds), float(newest))
        if own.empty:
            return np.full(len(seconds), float(rows["price"].median()))
        start, end = own["ts"].min(), own["ts"].max()
        span = max((end - start).total_seconds(), 1.0)
        at = start + pd.to_timedelta(seconds % span, unit="s")
        index = np.searchsorted(own["ts"].to_numpy(), at.to_numpy(), side="right") - 1
        return own["price"].to_numpy()[np.maximum(index, 0)]

    def on_demand(self, place: Place) -> float:
        """$/h on demand in the pool's region: its newest listing, else the labelled reference
        price of the reference instance type.

        Raises:
            PolicyError: when neither is known.
        """
        rows = self._of(place, "on_demand")
        if not rows.empty:
            return float(rows.sort_values("ts")["price"].iloc[-1])
        if place.instance_type.lower() == REFERENCE_INSTANCE_TYPE:
            return REFERENCE_ON_DEMAND_USD
        raise PolicyError(f"no on-demand price of {place.instance_type} in {place.region}")

    def _of(self, place: Place, market: str) -> pd.DataFrame:
        rows = self.rows()
        return rows[
            (rows["market"] == market)
            & (rows["provider"] == place.cloud)
            & (rows["region"] == place.region)
            & (rows["instance_type"].str.lower() == place.instance_type.lower())
        ]


def churny_pools(
    traces: TraceSet, names: tuple[str, ...], regions: dict[str, str], count: int, end_tick: int
) -> tuple[str, ...]:
    """``count`` pools that go down and come back most in the ticks before ``end_tick`` (each
    region's first, then the rest), never one that is never up there."""
    past = traces.subset(list(names)).available[:, :end_tick].astype(np.int8)
    drops = (np.diff(past, axis=1) == -1).sum(axis=1)
    live = [int(i) for i in np.argsort(-drops, kind="stable") if past[i].any()]
    chosen: list[int] = []
    for i in live:
        if regions[names[i]] not in {regions[names[c]] for c in chosen}:
            chosen.append(i)
    chosen += [i for i in live if i not in chosen]
    return tuple(names[i] for i in chosen[:count])


def priced(spec: MarketSpec, traces: TraceSet, files: PriceFiles, end_tick: int) -> TraceSet:
    """The spec's pools of ``traces`` with their clouds, regions and prices (``end_tick``: the
    set's training part, where ``spread`` ranks the pools)."""
    sub = traces.subset(list(spec.pools))
    seconds = np.arange(sub.n_ticks, dtype=float) * sub.gap_seconds
    pools, prices = [], []
    for name in spec.pools:
        place = files.place_of(name)
        od = files.on_demand(place)
        pools.append(Pool(name=name, cloud=place.cloud, region=place.region, on_demand_price=od))
        prices.append(files.spot_series(place, seconds))
    if spec.pricing == "spread":
        share = sub.available[:, :end_tick].mean(axis=1)
        picks = LADDER_PICK[len(spec.pools)]
        for rank, i in enumerate(np.argsort(-share, kind="stable")):
            fraction = LADDER[picks[len(picks) - 1 - rank]] / REFERENCE_ON_DEMAND_USD
            prices[i] = np.full(sub.n_ticks, fraction * float(pools[i].on_demand_price or 0.0))
    elif spec.pricing != "listed":
        raise PolicyError(f"unknown pricing {spec.pricing!r}; choose listed or spread")
    return replace(sub, pools=tuple(pools), prices=np.stack(prices))


def market_specs(
    sets: dict[str, TraceSet], end_ticks: dict[str, int], files: PriceFiles, *, quick: bool
) -> list[MarketSpec]:
    """The suite's markets: per priced set, every pool at its listing; 2 and 4 (or all) of its
    churniest pools at spread prices, with moves free of egress, with 50 GB checkpoints, and
    where a failed request ends what runs; ``quick``: the spread markets of two pools."""
    specs = []
    for name, traces in sets.items():
        names = files.priceable(traces)
        if len(names) < 2:
            continue
        regions = {p: files.place_of(p).region for p in names}
        sizes = (2,) if quick else tuple(sorted({2, min(4, len(names))}))
        if not quick:
            specs.append(
                MarketSpec(trace_set=name, pools=names, pricing="listed", checkpoint_gb=50.0)
            )
        for k in sizes:
            pools = churny_pools(traces, names, regions, k, end_ticks[name])
            if len(pools) < 2:
                continue
            specs.append(MarketSpec(trace_set=name, pools=pools, pricing="spread"))
            specs.append(
                MarketSpec(trace_set=name, pools=pools, pricing="spread", checkpoint_gb=50.0)
            )
            specs.append(
                MarketSpec(trace_set=name, pools=pools, pricing="spread", failed_request_ends=True)
            )
    return specs
