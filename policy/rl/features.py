"""What a learned policy sees at each tick: one float vector built from the job's state and
each pool's risk forecast, padded to a fixed number of pool slots.

Every feature is scaled by the job (its work, slack and changeover), so one model serves every job
shape, changeover and observation mode. The risk forecast is the one the decisions read
(:data:`spotwise.pricing.forecast.risk_forecasters.SHIPPED_RISK`, fitted as ``risk_aware`` fits it),
so the quantities the rule policy decides on are features too: how far the forecast spot share
covers the work left, the slack against the reserve, and each pool's expected run in changeovers
(v2, with the thresholds of :class:`FeatureRules`), and (v3) the slack budget's: the outage's
age against the wait the slack affords, whether no wait fits, the outage's expected rest and the
best run against what pays for leaving on demand; (v4) each pool's price now against on-demand,
and what landing there costs (the request and the checkpoint's egress from where it lies) in
on-demand changeovers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from spotwise.policy.policies.base import ON_DEMAND, SPOT0, JobContext, Observation
from spotwise.policy.policies.risk import fresh_any_up, job_history, prior_of
from spotwise.policy.policies.risk_aware import pays_run
from spotwise.policy.policies.rules import safety_margin, slack_ticks
from spotwise.policy.policies.slack_budget import SlackBudget, SpellBook
from spotwise.policy.pools.regions import NOWHERE, Regions
from spotwise.pricing.forecast.risk_forecasters import SHIPPED_RISK

GLOBAL_FEATURES = 18
POOL_FEATURES = 10
RUNS_HERE = 2
"""The per-pool feature that is 1 for the pool the job's spot instance runs in."""


@dataclass(frozen=True, slots=True)
class FeatureRules:
    """The rule thresholds the v2 features were defined with (``risk_aware``'s of commit
    ``4869db5``): fixed here, so a model's inputs never move when the rule policy changes."""

    idle_run: float = 1.0
    switch_run: float = 3.0
    caution: float = 0.7
    reserve_share: float = 0.25


PARAMS = FeatureRules()
HALF_LIFE_HOURS = SHIPPED_RISK.half_life_hours


def observation_size(max_pools: int) -> int:
    """Length of the feature vector for ``max_pools`` slots."""
    return GLOBAL_FEATURES + POOL_FEATURES * max_pools


def _log_ratio(value: float, unit: float, span: float = 3.0) -> float:
    """log(value / unit) / span, clipped to [-1, 1] (a ratio of e^-span to e^span)."""
    if unit <= 0:
        return 1.0
    return float(np.clip(math.log(max(value, 1e-6) / unit) / span, -1.0, 1.0))


class FeatureBuilder:
    """Turns (job context, observation) into the learned policy's input; never looks ahead."""

    def __init__(self, context: JobContext, max_pools: int) -> None:
        n_pools = len(context.pools)
        if n_pools > max_pools:
            raise ValueError(f"{n_pools} pools, but the model was trained for at most {max_pools}")
        self.context, self.max_pools = context, max_pools
        self.forecast = SHIPPED_RISK.fit(job_history(context))
        hours, half_life = context.job.hours_per_tick, HALF_LIFE_HOURS / context.job.hours_per_tick
        self._spells = SpellBook(
            np.asarray(context.past_available.any(axis=0)), half_life, prior_of(context), hours
        )
        self._pool_spells = [
            SpellBook(np.asarray(row), half_life, prior_of(context), hours)
            for row in context.past_available
        ]
        self._pays = min(pays_run(float(p), context.on_demand_price) for p in context.spot_price)
        self._seen_tick = -1
        self.ranking: list[int] = []
        """The pools a request may name now, most expected saving first (as ``risk_aware``
        ranks them)."""
        self._unit = float(max(context.job.changeover, 1))
        self._blind = context.observe != "all"
        self._vector = np.zeros(observation_size(max_pools), dtype=np.float32)
        pools = self._vector[GLOBAL_FEATURES:].reshape(max_pools, POOL_FEATURES)
        pools[:n_pools, 1] = 1.0
        pools[:n_pools, 6] = context.spot_price / context.on_demand_price
        regions = context.regions or Regions.of(context.pools, context.on_demand_price)
        self._pool_region = regions.of_pool
        self._egress = regions.egress_per_gb * context.checkpoint_gb
        self._changeover_usd = (
            context.on_demand_price * context.job.changeover * context.job.hours_per_tick
        )

    def observe(self, obs: Observation) -> None:
        """Feed this tick to the risk forecast (every tick, once; again is a no-op)."""
        if obs.tick > self._seen_tick:
            any_up = fresh_any_up(obs)
            self.forecast.update(obs.tick, obs.belief(), any_up)
            self._spells.observe(obs.tick, any_up)
            belief, age = obs.belief(), obs.seen_age
            for z, book in enumerate(self._pool_spells):
                fresh = age is None or age[z] == 0 or obs.state == SPOT0 + z
                book.observe(obs.tick, bool(belief[z]) if fresh else None)
            self._seen_tick = obs.tick

    def vector(self, obs: Observation) -> np.ndarray:
        """The features of this tick (a fresh array); observes the tick first."""
        context, forecast = self.context, self.forecast
        job = context.job
        self.observe(obs)
        n_pools = len(context.pools)
        belief = obs.belief()
        runs = [
            forecast.expected_run(z, fresh=not belief[z]) * float(context.speed[z])
            for z in range(n_pools)
        ]
        askable_pools = obs.askable()
        value = 1.0 - context.spot_price / context.on_demand_price
        self.ranking = sorted(askable_pools, key=lambda z: -runs[z] * float(value[z]))
        work_left = job.work - obs.progress
        time_left = job.deadline - obs.tick
        slack = slack_ticks(obs, context)
        usable = max(time_left - 2 * job.changeover, 0.0)
        best_run = max(forecast.expected_run(z, fresh=True) for z in range(n_pools))
        share = forecast.spot_share(0, usable) * max(0.0, 1 - job.changeover / best_run)
        reserve = PARAMS.reserve_share * (job.deadline - job.work) * work_left / job.work
        v = self._vector
        v[0] = obs.progress / job.work
        v[1] = time_left / job.deadline
        v[2] = slack / max(job.deadline - job.work, 1)
        v[3] = obs.changeover_left / self._unit
        v[4] = obs.state == ON_DEMAND
        v[5] = obs.state >= SPOT0
        v[6] = self._blind
        v[7] = _log_ratio(share * usable, PARAMS.caution * max(work_left, 1e-6))
        v[8] = _log_ratio(slack, max(reserve, 1e-6))
        room = max(4 * job.changeover, reserve + 2 * job.changeover)
        v[9] = _log_ratio(slack, max(room, 1e-6))
        # the rule policy's own tests, as flags: a pool worth taking from idle (its run
        # outlasts its changeover) or from on-demand (it pays for both), room to switch, and
        # spot falling short of the work left
        hopeful = obs.hopeful()
        v[10] = any(runs[z] > PARAMS.idle_run * self._unit and hopeful[z] for z in askable_pools)
        v[11] = any(runs[z] > PARAMS.switch_run * self._unit for z in askable_pools)
        v[12] = slack > room
        v[13] = share * usable < PARAMS.caution * work_left or slack < reserve
        self._budget_features(obs, v)
        pools = v[GLOBAL_FEATURES:].reshape(self.max_pools, POOL_FEATURES)
        askable = np.zeros(n_pools, dtype=bool)
        askable[askable_pools] = True
        pools[:n_pools, 0] = belief
        pools[:n_pools, 2] = 0.0
        if obs.state >= SPOT0:
            pools[obs.state - SPOT0, RUNS_HERE] = 1.0
        pools[:n_pools, 3] = askable
        pools[:n_pools, 4] = hopeful
        longest = max(runs[z] for z in askable_pools) if askable_pools else 0.0
        for z in range(n_pools):
            pools[z, 5] = _log_ratio(runs[z], self._unit, span=7.0)
            pools[z, 7] = runs[z] / longest if longest > 0 else 0.0
        pools[:n_pools, 8] = np.minimum(obs.prices / context.on_demand_price, 10.0)
        move = np.full(n_pools, context.request_usd)
        if obs.region != NOWHERE:
            move += self._egress[obs.region][self._pool_region]
        pools[:n_pools, 9] = [_log_ratio(m, self._changeover_usd) for m in move]
        return v.copy()

    def _budget_features(self, obs: Observation, v: np.ndarray) -> None:
        """(v3) The slack budget's quantities (:mod:`~spotwise.policy.policies.slack_budget`):
        the outage's age against the wait the slack affords, whether no wait fits, the outage's
        expected rest against two changeovers, and the best pool's run against what pays for
        leaving on demand."""
        job, context = self.context.job, self.context
        d = float(job.changeover)
        run = max(book.mean_up() for book in self._pool_spells)
        budget = SlackBudget(self._spells, run, d)
        spare = slack_ticks(obs, context) - safety_margin(d, context.probe_ticks)
        limit = budget.wait_limit(spare, job.work - obs.progress)
        age = self._spells.outage_age(obs.tick)
        if limit is not None and math.isinf(limit):
            v[14] = -1.0  # every outage may be waited out
        else:
            v[14] = _log_ratio(age + 1.0, (limit or 0.0) + 1.0)
        v[15] = limit is None
        v[16] = _log_ratio(self._spells.remaining_outage(age), 2 * max(d, 1.0))
        v[17] = _log_ratio(run, self._pays * max(d, 1.0))
