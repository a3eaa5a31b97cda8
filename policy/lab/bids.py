"""The bid lab: a policy with a bid against the same policy without one, on real price
histories (``spotwise bench bids``).

Each zone of one instance type in a ``describe-spot-price-history`` CSV (the bundled one by
default) is a pool, on an hourly grid, its price the last change at or before each hour; its
capacity is always there, so price is the only thing that takes an instance back. Without a
bid a running instance pays whatever the price rises to; with one (the simulator honours
``Action.bid``) it is evicted when the price rises above the bid, and the policy fails over.
Each variant runs the same jobs: cost, evictions and deadline misses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spotwise.policy.errors import PolicyError
from spotwise.policy.job import JobSpec
from spotwise.policy.policies.base import SPOT0, Action, JobContext, Observation, Policy
from spotwise.policy.registry import load
from spotwise.policy.simulate import JobResult, job_starts, simulate
from spotwise.policy.traces import Pool, TraceSet
from spotwise.pricing.clouds.aws.spot_prices import read_price_history_csv
from spotwise.pricing.quotes import REFERENCE_INSTANCE_TYPE, REFERENCE_ON_DEMAND_USD

HOUR_S = 3600


class Bidding(Policy):
    """``policy`` (a causal one) with every spot request capped at ``bid`` USD/h."""

    name = "bidding"

    def __init__(self, policy: Policy, bid: float) -> None:
        if policy.reads_future:
            raise PolicyError(f"{policy.name} reads the future: a bid changes nothing it does")
        self.policy, self.bid = policy, bid

    def reset(self, context: JobContext) -> None:
        """Start a job: the wrapped policy's own start."""
        self.policy.reset(context)

    def act(self, obs: Observation) -> Action:
        """The wrapped policy's choice, with the bid on a spot one."""
        action = self.policy.act(obs)
        if action.instance < SPOT0:
            return action
        return Action(action.instance, self.bid, action.checkpoint_ticks, action.also)


def price_traces(csv: Path, instance_type: str, region: str | None = None) -> TraceSet:
    """One always-available pool per zone of ``instance_type`` in ``csv`` (of ``region``, or
    all), priced hourly.

    Raises:
        PolicyError: when the file has no prices of ``instance_type`` there.
    """
    prices = read_price_history_csv(csv).frames["prices"]
    mine = prices[prices["instance_type"] == instance_type]
    if region is not None:
        mine = mine[mine["region"] == region]
    if mine.empty:
        pairs = prices[["instance_type", "region"]].drop_duplicates()
        known = ", ".join(sorted(f"{t} in {r}" for t, r in pairs.itertuples(index=False)))
        raise PolicyError(
            f"{csv}: no spot prices of {instance_type!r} in {region or 'any region'}; give one "
            f"of {known} (--instance-type, --region)"
        )
    ts = pd.to_datetime(mine["ts"], utc=True)
    hours = pd.date_range(ts.min().ceil("h"), ts.max().floor("h"), freq="h")
    zones = sorted(set(mine["zone"]))
    grid = np.full((len(zones), len(hours)), np.nan)
    for i, zone in enumerate(zones):
        series = mine[mine["zone"] == zone].assign(ts=ts).sort_values("ts")
        held = series.set_index("ts")["price"].astype(float)
        held = held[~held.index.duplicated(keep="last")]
        grid[i] = held.reindex(hours, method="ffill").to_numpy()
    # a zone's hours before its first price take its first price
    first = np.where(np.isnan(grid), np.inf, 0).argmin(axis=1)
    for i, j in enumerate(first):
        grid[i, :j] = grid[i, j]
    return TraceSet(
        pools=tuple(Pool(name=z) for z in zones),
        gap_seconds=HOUR_S,
        available=np.ones_like(grid, dtype=bool),
        prices=grid,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BidRun:
    """One variant's jobs, summed."""

    bid: float | None
    jobs: int
    cost_usd: float
    mean_cost_usd: float
    evictions: int
    deadline_misses: int
    spot_hours: int
    on_demand_hours: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "bid_usd_per_hour": self.bid,
            "jobs": self.jobs,
            "cost_usd": round(self.cost_usd, 2),
            "mean_cost_usd": round(self.mean_cost_usd, 3),
            "evictions": self.evictions,
            "deadline_misses": self.deadline_misses,
            "spot_hours": self.spot_hours,
            "on_demand_hours": self.on_demand_hours,
        }


def _summed(bid: float | None, results: Sequence[JobResult]) -> BidRun:
    """One variant's results as one row."""
    cost = sum(r.cost for r in results)
    return BidRun(
        bid=bid,
        jobs=len(results),
        cost_usd=cost,
        mean_cost_usd=cost / len(results),
        evictions=sum(r.preemptions for r in results),
        deadline_misses=sum(not r.done for r in results),
        spot_hours=sum(r.spot_ticks for r in results),
        on_demand_hours=sum(r.on_demand_ticks for r in results),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BidBench:
    """A policy without a bid and with each bid on the same jobs over one price history."""

    prices: str
    """The price history's file name."""
    instance_type: str
    region: str | None
    """None: every zone in the file."""
    pools: tuple[str, ...]
    hours: int
    median_spot_usd_per_hour: float
    max_spot_usd_per_hour: float
    on_demand_usd_per_hour: float
    policy: str
    compute_hours: float
    deadline_hours: float
    changeover_hours: float
    start_every_hours: float
    runs: tuple[BidRun, ...]
    """Without a bid first, then one per bid."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as ``bench bids`` prints it."""
        return {
            "prices": self.prices,
            "instance_type": self.instance_type,
            "region": self.region,
            "pools": list(self.pools),
            "hours": self.hours,
            "median_spot_usd_per_hour": self.median_spot_usd_per_hour,
            "max_spot_usd_per_hour": self.max_spot_usd_per_hour,
            "on_demand_usd_per_hour": self.on_demand_usd_per_hour,
            "policy": self.policy,
            "job": {
                "compute_hours": self.compute_hours,
                "deadline_hours": self.deadline_hours,
                "changeover_hours": self.changeover_hours,
                "start_every_hours": self.start_every_hours,
            },
            "runs": [run.to_dict() for run in self.runs],
        }


def bench_bids(
    csv: Path,
    *,
    instance_type: str = REFERENCE_INSTANCE_TYPE,
    region: str | None = "us-east-1",
    on_demand_price: float = REFERENCE_ON_DEMAND_USD,
    bids: Sequence[float] = (),
    policy: str = "greedy",
    compute_hours: float = 24.0,
    deadline_hours: float = 36.0,
    changeover_hours: float = 1.0,
    start_every_hours: float = 12.0,
) -> BidBench:
    """``policy`` without a bid and with each of ``bids`` (default: the on-demand price, and
    the median spot price × 1.05) on the same jobs over ``csv``'s prices of ``instance_type``
    in ``region`` (None: every zone in the file).

    Raises:
        PolicyError: for an instance type the file lacks, a bid that is not positive, or a
            job that does not fit the history.
    """
    traces = price_traces(csv, instance_type, region)
    assert traces.prices is not None
    median = float(np.median(traces.prices))
    chosen = list(bids) or [on_demand_price, round(1.05 * median, 4)]
    if any(not b > 0 for b in chosen):
        raise PolicyError(f"--bid must be a positive USD/h, got {min(chosen)}")
    spec = JobSpec(
        compute_hours=compute_hours,
        deadline_hours=deadline_hours,
        changeover_hours=changeover_hours,
        spot_price=median,
        on_demand_price=on_demand_price,
    )
    deadline_ticks = spec.ticks(HOUR_S).deadline
    starts = job_starts(traces.n_ticks, HOUR_S, deadline_ticks, 0.0, start_every_hours)
    if not starts:
        raise PolicyError(
            f"a {deadline_hours} h deadline does not fit the {traces.n_ticks} h of prices: "
            "shorten --deadline-hours"
        )
    runs = []
    for bid in [None, *chosen]:
        results = []
        for start in starts:
            base = load(policy)
            bidding = base if bid is None else Bidding(base, bid)
            results.append(simulate(bidding, traces, spec, start))
        runs.append(_summed(bid, results))
    return BidBench(
        prices=str(csv.name),
        instance_type=instance_type,
        region=region,
        pools=tuple(traces.names),
        hours=traces.n_ticks,
        median_spot_usd_per_hour=round(median, 4),
        max_spot_usd_per_hour=round(float(np.max(traces.prices)), 4),
        on_demand_usd_per_hour=on_demand_price,
        policy=policy,
        compute_hours=compute_hours,
        deadline_hours=deadline_hours,
        changeover_hours=changeover_hours,
        start_every_hours=start_every_hours,
        runs=tuple(runs),
    )
