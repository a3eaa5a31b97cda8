"""The policy interface: every policy sees the present tick and the past, and picks an action.

Actions are small ints: :data:`NONE` (wait), :data:`ON_DEMAND`, or ``spot(z)`` for spot in
pool ``z``. Policies are registered by name in :mod:`spotwise.policy.registry` and built with
:func:`policy.load`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from spotwise.policy.job import JobTicks
from spotwise.policy.observe import ObserveMode
from spotwise.policy.traces import Pool
from spotwise.pricing.forecast.prior import PoolPrior

if TYPE_CHECKING:
    from spotwise.policy.policies.past_fit import PastFit
    from spotwise.policy.pools.regions import Regions
    from spotwise.pricing.forecast.risk_forecasters import RiskForecaster

NONE = 0
ON_DEMAND = 1
SPOT0 = 2


def spot(pool: int) -> int:
    """The action (and state) 'spot in pool ``pool``'."""
    return SPOT0 + pool


@dataclass(frozen=True, slots=True, kw_only=True)
class JobContext:
    """What a policy knows when a job starts."""

    job: JobTicks
    pools: tuple[Pool, ...]
    spot_price: np.ndarray
    """float [pools]: each pool's list spot price per hour (ticks may differ, see prices)."""
    on_demand_price: float
    speed: np.ndarray
    """float [pools]: progress per productive spot tick; on-demand progresses 1 per tick."""
    past_available: np.ndarray
    """bool [pools, ticks before the job's start]."""
    checkpoint_stall_ticks: float = 0.0
    """Progress a checkpoint stalls, in ticks (0 = the simulator is not in checkpoint mode)."""
    future_available: np.ndarray | None = None
    """bool [pools, job ticks]: only for policies that read the future (the omniscient bound)."""
    future_prices: np.ndarray | None = None
    """float [pools, job ticks] spot prices: only for policies that read the future."""
    observe: ObserveMode = "all"
    probe_ticks: int = 0
    """Ticks a failed launch request leaves an idle job unable to start anything (0 in ``all``
    mode, where a policy never asks blind)."""
    prior: PoolPrior | None = None
    """What similar pools say before this job's own pools have a history (cold starts)."""
    regions: Regions | None = None
    """The pools' regions, their on-demand prices and the egress between them (None: one
    region, on demand at ``on_demand_price``, moves free of egress)."""
    checkpoint_gb: float = 0.0
    """The checkpoint a move carries to another region."""
    request_usd: float = 0.0
    """$ a launch that lands is billed beside its hours."""
    failed_request_ends: bool = False
    """Whether a launch request that fails ends the instance the job had (an orchestrator that
    tears down before it relaunches) rather than keeping it (EC2 Fleet)."""
    past_fit: PastFit | None = None
    """The past fitted once for many jobs (None: each policy fits its own)."""


@dataclass(slots=True)
class Observation:
    """The present tick as a policy sees it (one object per run, updated in place)."""

    tick: int
    """Ticks since the job started."""
    progress: float
    """Productive ticks done (in the reference instance's ticks)."""
    state: int
    """Current instance after this tick's preemption check: NONE, ON_DEMAND or spot(z)."""
    changeover_left: int
    """Ticks of changeover still to go on the current instance."""
    preempted: bool
    """Whether the spot instance was taken back at the start of this tick."""
    available: np.ndarray
    """bool [pools]: spot available at this tick."""
    prices: np.ndarray
    """float [pools]: spot price per hour at this tick."""
    last_seen: np.ndarray | None = None
    """bool [pools]: the last availability seen of each pool (False if never seen); None means
    ``available`` (the ``all`` mode)."""
    seen_age: np.ndarray | None = None
    """float [pools]: ticks since that was seen (0 = this tick, inf = never); None = all 0."""
    region: int = -1
    """The region the job's checkpoint is in (its last instance's; -1: none written yet)."""
    od_region: int = -1
    """The region of the on-demand instance, while the job runs on one (-1 otherwise)."""
    preempted_pool: int = -1
    """The pool of the spot instance taken back at the start of this tick (-1: none), as the
    cloud's notice names it."""

    def belief(self) -> np.ndarray:
        """bool [pools]: each pool's availability as last seen (``available`` in ``all`` mode)."""
        return self.available if self.last_seen is None else self.last_seen

    def hopeful(self) -> np.ndarray:
        """bool [pools]: up as last seen, or never seen (``available`` in ``all`` mode)."""
        if self.seen_age is None:
            return self.available
        return self.belief() | np.isinf(self.seen_age)

    def askable(self) -> list[int]:
        """Pools a launch request may name: all but those seen down at this tick (blind), or
        the available ones (``all``)."""
        if self.seen_age is None:
            return [int(z) for z in np.flatnonzero(self.available)]
        return [int(z) for z in np.flatnonzero(self.belief() | (self.seen_age > 0))]


@dataclass(frozen=True, slots=True)
class Action:
    """What a policy picks for a tick."""

    instance: int
    """NONE (wait), ON_DEMAND or spot(z)."""
    bid: float | None = None
    """Max spot price per hour: the instance is taken back when the price rises above it."""
    checkpoint_ticks: int | None = None
    """Checkpoint interval, in ticks (simulator checkpoint mode; None: the simulator's)."""
    also: tuple[int, ...] = ()
    """More pools the launch request names with ``instance``'s (an EC2 Fleet request): it lands
    in the cheapest available one, ties going to the earlier named."""
    region: int | None = None
    """For on demand: the region to run in (None: where the checkpoint is, else the region
    where on demand costs least)."""

    def named_pools(self) -> tuple[int, ...]:
        """Every pool the launch request names, in order (none unless ``instance`` is spot)."""
        return (self.instance - SPOT0, *self.also) if self.instance >= SPOT0 else ()


WAIT = Action(NONE)
RUN_ON_DEMAND = Action(ON_DEMAND)


def request(pools: Sequence[int], checkpoint_ticks: int | None = None) -> Action:
    """A launch request naming ``pools`` in order of preference (WAIT when there are none)."""
    if not len(pools):
        return Action(NONE, checkpoint_ticks=checkpoint_ticks)
    first, *rest = (int(z) for z in pools)
    return Action(spot(first), checkpoint_ticks=checkpoint_ticks, also=tuple(rest))


class Policy(ABC):
    """Picks wait, on-demand or spot in a pool at every tick of a job."""

    name: ClassVar[str]
    reads_future: ClassVar[bool] = False
    """True only for the omniscient bound: the simulator then shows it the whole job."""
    forecast: RiskForecaster | None = None
    """The risk forecast it acts on, fitted in :meth:`reset` (None: it reads none)."""
    why: str | None = None
    """Why its last action, where a rule of its own decided it (None: nothing beyond what
    the job's slack and forecast say; the API then explains it from those)."""

    @abstractmethod
    def reset(self, context: JobContext) -> None:
        """Start a new job."""

    @abstractmethod
    def act(self, obs: Observation) -> Action:
        """The action for this tick (seeing only this tick and the past)."""
