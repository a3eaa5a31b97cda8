"""A job's side of the risk forecast (:mod:`spotwise.pricing.forecast.risk_forecasters`): the
history and prior a job is given, what its past fits (once for every job on the same past), and
what it knows fresh about some pool being up."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spotwise.policy.policies.base import SPOT0, JobContext, Observation
from spotwise.policy.policies.slack_budget import SpellBook
from spotwise.pricing.forecast.prior import DEFAULT_PRIOR, PoolPrior
from spotwise.pricing.forecast.risk_forecasters import (
    SHIPPED_RISK,
    History,
    RiskConfig,
    RiskForecaster,
)


def prior_of(context: JobContext) -> PoolPrior:
    """The job's prior, or :data:`DEFAULT_PRIOR` when it was given none."""
    return context.prior or DEFAULT_PRIOR


def job_history(context: JobContext) -> History:
    """What a job is given to fit a forecaster on: its past and its prior (or the default)."""
    return History(context.past_available, context.job.hours_per_tick, prior_of(context))


def fresh_any_up(obs: Observation) -> bool | None:
    """Whether some pool is up as of this tick or the last (the job runs on spot, or its last
    request saw one up); None when nothing that fresh was seen (``all`` mode: the truth)."""
    if obs.seen_age is None:
        return bool(obs.available.any())
    if obs.state >= SPOT0:
        return True
    fresh = obs.seen_age <= 1
    if not fresh.any():
        return None
    return bool((obs.belief() & fresh).any())


@dataclass(frozen=True, slots=True)
class PastFit:
    """What a job's past fits: the risk forecast of its pools and the spells of some pool, and
    of each pool, being up. Fitted once for every job on the same past (the policy API's
    requests), each job updating its own copy."""

    config: RiskConfig
    forecast: RiskForecaster
    spells: SpellBook
    pool_spells: tuple[SpellBook, ...]

    @classmethod
    def of(cls, context: JobContext, config: RiskConfig = SHIPPED_RISK) -> PastFit:
        """Fit ``config`` and the spells on the context's past and prior."""
        hours = context.job.hours_per_tick
        half_life = config.half_life_hours / hours
        prior = prior_of(context)
        past = context.past_available
        return cls(
            config=config,
            forecast=config.fit(job_history(context)),
            spells=SpellBook(np.asarray(past.any(axis=0)), half_life, prior, hours),
            pool_spells=tuple(
                SpellBook(np.asarray(past[z]), half_life, prior, hours) for z in range(len(past))
            ),
        )

    def copy(self) -> PastFit:
        """A copy a job may update."""
        return PastFit(
            config=self.config,
            forecast=self.forecast.copy(),
            spells=self.spells.copy(),
            pool_spells=tuple(book.copy() for book in self.pool_spells),
        )
