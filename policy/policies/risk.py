"""A job's side of the risk forecast (:mod:`spotwise.pricing.forecast.risk_forecasters`): the
history and prior a job is given, what its past fits, and what it knows fresh about some pool
being up."""

from __future__ import annotations

from spotwise.policy.policies.base import SPOT0, JobContext, Observation
from spotwise.policy.policies.past_fit import PastFit
from spotwise.pricing.forecast.prior import DEFAULT_PRIOR, PoolPrior
from spotwise.pricing.forecast.risk_forecasters import SHIPPED_RISK, History, RiskConfig


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


def fit_past(context: JobContext, config: RiskConfig = SHIPPED_RISK) -> PastFit:
    """What the context's past fits with ``config`` (:class:`PastFit`)."""
    return PastFit.of(context.past_available, context.job.hours_per_tick, prior_of(context), config)
