"""Hand-made traces (of availability, or of node counts) and a scripted policy for
tick-by-tick tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from spotwise.policy.job import JobSpec
from spotwise.policy.nodes.capacity import CapacityTraces
from spotwise.policy.policies.base import Action, JobContext, Observation, Policy
from spotwise.policy.traces import Pool, TraceSet


def traces(
    *rows: str,
    gap: int = 3600,
    prices: list[list[float]] | None = None,
    speeds: list[float] | None = None,
    places: Sequence[tuple[str, str, float | None]] | None = None,
) -> TraceSet:
    """Pools from strings of '1' (available) and '0' (not), one string per pool; ``places``:
    each pool's cloud, region and on-demand price."""
    names = [f"z{i}" for i in range(len(rows))]
    where = places or [("", "", None)] * len(rows)
    return TraceSet(
        pools=tuple(
            Pool(
                name=n,
                speed=(speeds or [1.0] * len(rows))[i],
                cloud=where[i][0],
                region=where[i][1],
                on_demand_price=where[i][2],
            )
            for i, n in enumerate(names)
        ),
        gap_seconds=gap,
        available=np.array([[c == "1" for c in row] for row in rows]),
        prices=None if prices is None else np.array(prices, dtype=float),
    )


def capacity(*rows: list[int]) -> CapacityTraces:
    """Pools with the given spot nodes per tick (1-hour ticks)."""
    counts = np.array(rows)
    return CapacityTraces(
        names=tuple(f"p{i}" for i in range(len(rows))),
        gap_seconds=3600,
        capacity=counts,
        cluster_size=int(counts.max()),
    )


def job(
    work: float, deadline: float, changeover: float, spot: float = 1.0, on_demand: float = 3.0
) -> JobSpec:
    """A job in hours; with the default 1 h ticks, hours are ticks."""
    return JobSpec(
        compute_hours=work,
        deadline_hours=deadline,
        changeover_hours=changeover,
        spot_price=spot,
        on_demand_price=on_demand,
    )


class Scripted(Policy):
    """Plays a fixed list of actions (the last one repeats) and records what it saw."""

    name = "scripted"

    def __init__(self, actions: Sequence[int | Action], bid: float | None = None) -> None:
        self.actions = actions
        self.bid = bid
        self.seen: list[tuple[int, float, int, bool]] = []
        self.regions: list[int] = []
        """The checkpoint's region at each tick."""

    def reset(self, context: JobContext) -> None:
        self.seen.clear()
        self.regions.clear()

    def act(self, obs: Observation) -> Action:
        self.seen.append((obs.tick, obs.progress, obs.state, obs.preempted))
        self.regions.append(obs.region)
        chosen = self.actions[min(obs.tick, len(self.actions) - 1)]
        return chosen if isinstance(chosen, Action) else Action(chosen, bid=self.bid)


def observation(
    tick: int,
    progress: float,
    state: int,
    available: list[bool],
    *,
    preempted: bool = False,
    last_seen: list[bool] | None = None,
    seen_age: list[float] | None = None,
) -> Observation:
    """One tick as a policy sees it (no changeover under way, spot at 1.0 an hour)."""
    return Observation(
        tick=tick,
        progress=progress,
        state=state,
        changeover_left=0,
        preempted=preempted,
        available=np.array(available, dtype=bool),
        prices=np.ones(len(available)),
        last_seen=None if last_seen is None else np.array(last_seen, dtype=bool),
        seen_age=None if seen_age is None else np.array(seen_age, dtype=float),
    )
