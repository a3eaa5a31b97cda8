"""Priced markets for the suite: a trace set's pools given their cloud, region, spot price
series and on-demand price from the bundled real price files, for the classes where a decision
between pools of different prices, regions and clouds arises.

Two pricings, each said in the market's ``pricing`` line:

- ``listed``: every pool at its own listing. AWS pools (p3.2xlarge, V100): the spot price
  history of their zone (``describe-spot-price-history`` of 2019-12 .. 2020-01), replayed in the
  trace's relative time from the file's first day (a zone with no history of its own takes its
  region's median); on demand at the reference $3.06/h. GCP pools (a2-highgpu-8g, 8 × A100 40 GB):
  their region's newest spot and on-demand list prices.
- ``spread``: the real spread between zones: the p3.2xlarge zone listings of the same file run
  from $0.918/h to $3.06/h and more (us-east-2c, eu-west-1c), as the spot market's thin zones
  price. The pools are ranked by their share of time up in the set's training part, and the most
  available pool gets the dearest listing, the least available the cheapest: cheap pools that
  go and come back beside a dear one that stays, the setting where a failover that never leaves
  the dear pool loses most. Prices are kept as fractions of on demand (so a GCP pool's is its
  region's on-demand price times the same fraction).

Each pool keeps its own region, so moves between regions pay the clouds' egress list prices for
the checkpoint (:mod:`spotwise.policy.regions`). Nothing here is a forecast or a claim on its
own: the suite runs policies on these markets, held back and cold, against the exact bound.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from spotwise.policy.errors import PolicyError
from spotwise.policy.traces import Pool, TraceSet
from spotwise.pricing.clouds.aws.spot_prices import read_price_history_csv
from spotwise.pricing.clouds.gcp.price_changes import read_gcp_prices
from spotwise.pricing.frames import region_of_zone
from spotwise.pricing.quotes import REFERENCE_ON_DEMAND_USD

AWS_HISTORY = "prices/aws_spot_price_history_2019-12_2020-01.csv"
GCP_LISTS = "prices/gcp_spot_ondemand_changepoints.csv"
SHAPES = {"v100_1": ("aws", "p3.2xlarge"), "a100_40gb_8": ("gcp", "a2-highgpu-8g")}
"""A trace pool's suffix → the cloud and the instance type its prices are read for."""
LADDER = (0.918, 1.0767, 1.1469, 3.06)
"""$/h: p3.2xlarge spot listings of the bundled AWS history, cheapest to dearest (zone medians
of us-east-1c, eu-west-2a, eu-central-1a, us-east-2c), against $3.06/h on demand."""
LADDER_PICK = {2: (0, 3), 3: (0, 2, 3), 4: (0, 1, 2, 3)}
"""Which listings a market of 2, 3 or 4 pools gets (the cheapest and the dearest always)."""


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


def place_of(trace_set: str, pool: str) -> tuple[str, str, str, str]:
    """(cloud, zone, region, instance type) of a trace pool named ``<zone>_<shape>``.

    Raises:
        PolicyError: for a pool whose shape no price file covers.
    """
    zone, _, shape = pool.partition("_")
    if shape not in SHAPES:
        raise PolicyError(f"{trace_set}/{pool}: no bundled price of shape {shape!r}")
    cloud, instance_type = SHAPES[shape]
    return cloud, zone, region_of_zone(cloud, zone), instance_type


def priceable(trace_set: str, traces: TraceSet) -> tuple[str, ...]:
    """The pools of a set that a price file covers."""
    return tuple(p for p in traces.names if p.partition("_")[2] in SHAPES)


def churny_pools(
    traces: TraceSet, names: tuple[str, ...], count: int, end_tick: int
) -> tuple[str, ...]:
    """``count`` pools that go down and come back most in the ticks before ``end_tick`` (each
    region's first, then the rest), never one that is never up there."""
    past = traces.subset(list(names)).available[:, :end_tick].astype(np.int8)
    drops = (np.diff(past, axis=1) == -1).sum(axis=1)
    live = [i for i in np.argsort(-drops, kind="stable") if past[i].any()]
    chosen: list[int] = []
    seen_regions: set[str] = set()
    for i in live:
        region = place_of("", names[i])[2]
        if region not in seen_regions:
            chosen.append(int(i))
            seen_regions.add(region)
    chosen += [int(i) for i in live if int(i) not in chosen]
    return tuple(names[i] for i in chosen[:count])


class PriceFiles:
    """The bundled price files, read once."""

    def __init__(self, data: Path) -> None:
        self._data = data
        self._aws: pd.DataFrame | None = None
        self._gcp: pd.DataFrame | None = None

    def aws(self) -> pd.DataFrame:
        """The AWS spot price history (``prices`` rows)."""
        if self._aws is None:
            self._aws = read_price_history_csv(self._data / AWS_HISTORY).frames["prices"]
        return self._aws

    def gcp(self) -> pd.DataFrame:
        """The GCP spot and on-demand list prices (``prices`` rows)."""
        if self._gcp is None:
            self._gcp = read_gcp_prices(self._data / GCP_LISTS).frames["prices"]
        return self._gcp

    def gcp_newest(self, region: str, instance_type: str) -> tuple[float, float]:
        """(spot, on demand) $/h of ``instance_type`` in ``region``, the newest listed.

        Raises:
            PolicyError: when the file lists none.
        """
        rows = self.gcp()
        rows = rows[(rows["region"] == region) & (rows["instance_type"] == instance_type)]
        newest = rows.sort_values("ts").groupby("market")["price"].last()
        if not {"spot", "on_demand"} <= set(newest.index):
            raise PolicyError(
                f"{GCP_LISTS}: no spot and on-demand price of {instance_type} in {region}"
            )
        return float(newest["spot"]), float(newest["on_demand"])

    def aws_series(
        self, zone: str, region: str, instance_type: str, ticks: np.ndarray
    ) -> np.ndarray:
        """$/h at each of ``ticks`` (seconds from the trace's start): the zone's history (its
        region's median where the zone has none) replayed from the file's first day."""
        rows = self.aws()
        rows = rows[rows["instance_type"] == instance_type]
        start, end = rows["ts"].min(), rows["ts"].max()
        span = (end - start).total_seconds()
        at = start + pd.to_timedelta(ticks % span, unit="s")
        own = rows[rows["zone"] == zone].sort_values("ts")
        if own.empty:
            same = rows[rows["region"] == region]
            return np.full(len(ticks), float(same["price"].median()))
        index = np.searchsorted(own["ts"].to_numpy(), at.to_numpy(), side="right") - 1
        return own["price"].to_numpy()[np.maximum(index, 0)]


def priced(spec: MarketSpec, traces: TraceSet, files: PriceFiles, end_tick: int) -> TraceSet:
    """The spec's pools of ``traces`` with their clouds, regions and prices (``end_tick``: the
    set's training part, where ``spread`` ranks the pools)."""
    sub = traces.subset(list(spec.pools))
    seconds = np.arange(sub.n_ticks, dtype=float) * sub.gap_seconds
    pools, prices = [], []
    for name in spec.pools:
        cloud, zone, region, instance_type = place_of(spec.trace_set, name)
        if cloud == "gcp":
            spot, od = files.gcp_newest(region, instance_type)
            series = np.full(sub.n_ticks, spot)
        else:
            od = REFERENCE_ON_DEMAND_USD
            series = files.aws_series(zone, region, instance_type, seconds)
        pools.append(Pool(name=name, cloud=cloud, region=region, on_demand_price=od))
        prices.append(series)
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
    sets: dict[str, TraceSet], end_ticks: dict[str, int], *, quick: bool
) -> list[MarketSpec]:
    """The suite's markets: per priced set, every pool at its listing; 2 and 4 (or all) of its
    churniest pools at spread prices, with moves free of egress and with 50 GB checkpoints, and
    where a failed request ends what runs; ``quick``: the spread markets of two pools."""
    specs = []
    for name, traces in sets.items():
        names = priceable(name, traces)
        if len(names) < 2:
            continue
        sizes = (2,) if quick else tuple(sorted({2, min(4, len(names))}))
        if not quick:
            specs.append(
                MarketSpec(trace_set=name, pools=names, pricing="listed", checkpoint_gb=50.0)
            )
        for k in sizes:
            pools = churny_pools(traces, names, k, end_ticks[name])
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
