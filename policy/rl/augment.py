"""Stormier copies of training traces, so a learned policy sees markets rougher than the calm
past it is trained on (domain randomisation).

A copy takes capacity away on top of the real trace: outages that hit one pool, and storms that
hit every pool of a region at once, each arriving at random with an exponential length. Only
availability is taken away, never added, and a copy is as long as its trace; the suite's
held-back cut still decides which jobs train.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from spotwise.policy.traces import TraceSet


@dataclasses.dataclass(frozen=True, slots=True)
class Storms:
    """How rough a copy is: outages per pool-day and storms per region-day, and their mean
    lengths in hours."""

    outages_per_day: float = 1.0
    outage_hours: float = 2.0
    storms_per_day: float = 0.3
    storm_hours: float = 6.0


def _down(
    rng: np.random.Generator, n_ticks: int, hours_per_tick: float, per_day: float, mean_hours: float
) -> np.ndarray:
    """bool [ticks]: where random outages (Poisson arrivals, exponential lengths) hold."""
    down = np.zeros(n_ticks, dtype=bool)
    days = n_ticks * hours_per_tick / 24
    for _ in range(int(rng.poisson(per_day * days))):
        start = int(rng.integers(n_ticks))
        length = max(1, round(rng.exponential(mean_hours) / hours_per_tick))
        down[start : start + length] = True
    return down


def stormier(traces: TraceSet, seed: int, storms: Storms = Storms()) -> TraceSet:
    """A copy of ``traces`` with random outages and regional storms taken out of it."""
    rng = np.random.default_rng(seed)
    hours = traces.gap_seconds / 3600
    available = traces.available.copy()
    regional: dict[str, np.ndarray] = {}
    for z, pool in enumerate(traces.pools):
        region = pool.name.rsplit("_", 2)[0][:-1]  # us-east-1a_v100_1 -> us-east-1
        if region not in regional:
            regional[region] = _down(
                rng, traces.n_ticks, hours, storms.storms_per_day, storms.storm_hours
            )
        own = _down(rng, traces.n_ticks, hours, storms.outages_per_day, storms.outage_hours)
        available[z] &= ~(own | regional[region])
    return dataclasses.replace(traces, available=available)
