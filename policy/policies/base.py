"""The policy interface: every policy sees the present tick and the past, and picks an action.

Actions are small ints: :data:`NONE` (wait), :data:`ON_DEMAND`, or ``spot(z)`` for spot in
pool ``z``. Policies are registered by name in :mod:`spotwise.policy.registry` and built with
:func:`policy.load`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from spotwise.policy.job import JobTicks
from spotwise.policy.traces import Pool

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


@dataclass(frozen=True, slots=True)
class Action:
    """What a policy picks for a tick."""

    instance: int
    """NONE (wait), ON_DEMAND or spot(z)."""
    bid: float | None = None
    """Max spot price per hour: the instance is taken back when the price rises above it."""
    checkpoint_ticks: int | None = None
    """Checkpoint interval, in ticks (simulator checkpoint mode; None: the simulator's)."""


WAIT = Action(NONE)
RUN_ON_DEMAND = Action(ON_DEMAND)


class Policy(ABC):
    """Picks wait, on-demand or spot in a pool at every tick of a job."""

    name: ClassVar[str]
    reads_future: ClassVar[bool] = False
    """True only for the omniscient bound: the simulator then shows it the whole job."""

    @abstractmethod
    def reset(self, context: JobContext) -> None:
        """Start a new job."""

    @abstractmethod
    def act(self, obs: Observation) -> Action:
        """The action for this tick (seeing only this tick and the past)."""
