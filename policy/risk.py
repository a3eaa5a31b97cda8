"""One risk forecast that the decisions read: per pool, the expected remaining spot run, the
hazard and P(preempted within h), fitted on the past a job is given, started from a prior
where that past is short, and updated each tick with what the controller saw.

Forecasters are registered by name (:data:`RISK_FORECASTERS`); :data:`SHIPPED` is the one the
policies act on unless told otherwise.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from spotwise.policy.hazard import MarketForecast
from spotwise.policy.policies.base import JobContext


class RiskForecaster(ABC):
    """Per pool: how long spot will last, from the pool's past and what the job sees."""

    name: ClassVar[str]

    @abstractmethod
    def update(self, tick: int, belief: np.ndarray) -> None:
        """Add tick ``tick`` of the job (once per tick) with each pool's availability as last
        seen (bool [pools])."""

    @abstractmethod
    def expected_run(self, pool: int, *, fresh: bool = False) -> float:
        """Expected further available ticks of ``pool``: of its current run, or of a run that
        starts now (``fresh``)."""

    @abstractmethod
    def spot_share(self, changeover_ticks: int) -> float:
        """Forecast share of the coming ticks that some pool's spot can work."""

    def hazard(self, pool: int) -> float:
        """Preemptions per tick of ``pool`` now."""
        return 1.0 / max(self.expected_run(pool), 1.0)

    def p_preempted(self, pool: int, ticks: float) -> float:
        """P(``pool`` is taken back within ``ticks``), with the hazard held constant."""
        return 1.0 - math.exp(-max(ticks, 0.0) * self.hazard(pool))


class SurvivalForecaster(RiskForecaster):
    """The recency-weighted empirical survival model of each pool's availability runs
    (:mod:`spotwise.policy.hazard`), shrunk toward "as long again" and the prior."""

    name = "survival"
    pooled = False

    def __init__(self, context: JobContext, half_life_hours: float, prior_weight: float) -> None:
        job = context.job
        self._market = MarketForecast(
            context.past_available,
            half_life_hours / job.hours_per_tick,
            prior_weight,
            context.prior,
            job.hours_per_tick,
            pooled=self.pooled,
        )

    def update(self, tick: int, belief: np.ndarray) -> None:
        self._market.observe(tick, belief)

    def expected_run(self, pool: int, *, fresh: bool = False) -> float:
        hazard = self._market.pools
        return hazard.mean_run(pool) if fresh else hazard.expected_remaining(pool)

    def spot_share(self, changeover_ticks: int) -> float:
        return self._market.spot_share(changeover_ticks)

    @property
    def age(self) -> np.ndarray:
        """int [pools]: ticks each pool has been up as far as the job knows."""
        return self._market.pools.age


class PooledForecaster(SurvivalForecaster):
    """The same survival model with every pool judged by the runs of all of them: the pooled
    prior, updated online, for pools too new to have runs of their own."""

    name = "pooled"
    pooled = True


RISK_FORECASTERS: dict[str, Callable[[JobContext, float, float], RiskForecaster]] = {
    SurvivalForecaster.name: SurvivalForecaster,
    PooledForecaster.name: PooledForecaster,
}
SHIPPED = SurvivalForecaster.name


def fit_forecaster(
    context: JobContext,
    *,
    name: str = SHIPPED,
    half_life_hours: float = 24.0,
    prior_weight: float = 1.0,
) -> RiskForecaster:
    """The forecaster ``name`` fitted on what ``context`` gives a job.

    Raises:
        KeyError: naming the registered forecasters.
    """
    if name not in RISK_FORECASTERS:
        raise KeyError(f"unknown risk forecaster {name!r}; known: {sorted(RISK_FORECASTERS)}")
    return RISK_FORECASTERS[name](context, half_life_hours, prior_weight)
