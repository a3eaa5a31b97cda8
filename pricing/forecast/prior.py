"""A pool's risk before its own history says anything: the prior a risk forecast starts from
(:class:`PoolPrior`), the one for a pool nothing is known about (:data:`DEFAULT_PRIOR`), and
the one pooled over pools that were seen (:func:`pooled_prior`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolPrior:
    """A pool's risk before its own history says anything: a mean availability run and the
    share of time spot can be had, each worth some pseudo-observations, and where they came from."""

    mean_run_hours: float
    available_share: float
    weight_runs: float = 2.0
    """Pseudo-runs the mean run counts as."""
    weight_hours: float = 24.0
    """Pseudo-hours the available share counts as."""
    source: str = "default"

    def __post_init__(self) -> None:
        if not (self.mean_run_hours > 0 and math.isfinite(self.mean_run_hours)):
            raise ValueError(f"mean_run_hours must be positive, got {self.mean_run_hours}")
        if not 0.0 <= self.available_share <= 1.0:
            raise ValueError(f"available_share must be in [0, 1], got {self.available_share}")


DEFAULT_PRIOR = PoolPrior(
    mean_run_hours=2.0,
    available_share=0.5,
    weight_runs=1.0,
    source="default: nothing is known about this pool or similar ones",
)
"""The prior of a pool nothing is known about: spot runs last a couple of hours and spot is there
half the time, each worth one pseudo-run or a day, so what the job sees soon outweighs it. (A
Spot Advisor band counts interruptions of running instances in a month, not runs of capacity:
it is shown beside a risk, never turned into one.)"""


def pooled_prior(past_available: np.ndarray, hours_per_tick: float, source: str) -> PoolPrior:
    """Mean availability run and available share over every pool of ``past_available`` (bool
    [pools, ticks]): what a store that saw those pools would say about one it has not."""
    past = past_available.astype(np.int8)
    starts = int(np.sum(np.diff(past, axis=1, prepend=0) == 1))
    up_ticks = int(past.sum())
    return PoolPrior(
        mean_run_hours=max(up_ticks, 1) / max(starts, 1) * hours_per_tick,
        available_share=up_ticks / max(past.size, 1),
        source=source,
    )
