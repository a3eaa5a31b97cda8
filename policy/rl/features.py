"""What a learned policy sees at each tick: one float vector built from the job's state and
each pool's risk forecast, padded to a fixed number of pool slots.

Every feature is scaled by the job (its work, slack and changeover), so one model serves every job
shape, changeover and observation mode. The risk forecast is the one the decisions read
(:data:`spotwise.pricing.forecast.risk_forecasters.SHIPPED_RISK`, fitted as ``risk_aware`` fits it),
so the quantities the rule policy decides on are features too: how far the forecast spot share
covers the work left, the slack against the reserve, and each pool's expected run in changeovers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from spotwise.policy.policies.base import ON_DEMAND, SPOT0, JobContext, Observation
from spotwise.policy.policies.rules import slack_ticks
from spotwise.policy.risk import fresh_any_up, job_history
from spotwise.pricing.forecast.risk_forecasters import SHIPPED_RISK

GLOBAL_FEATURES = 14
POOL_FEATURES = 8


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

    def observe(self, obs: Observation) -> None:
        """Feed this tick to the risk forecast (every tick, once; again is a no-op)."""
        if obs.tick > self._seen_tick:
            self.forecast.update(obs.tick, obs.belief(), fresh_any_up(obs))
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
        pools = v[GLOBAL_FEATURES:].reshape(self.max_pools, POOL_FEATURES)
        askable = np.zeros(n_pools, dtype=bool)
        askable[askable_pools] = True
        pools[:n_pools, 0] = belief
        pools[:n_pools, 2] = 0.0
        if obs.state >= SPOT0:
            pools[obs.state - SPOT0, 2] = 1.0
        pools[:n_pools, 3] = askable
        pools[:n_pools, 4] = hopeful
        longest = max(runs[z] for z in askable_pools) if askable_pools else 0.0
        for z in range(n_pools):
            pools[z, 5] = _log_ratio(runs[z], self._unit, span=7.0)
            pools[z, 7] = runs[z] / longest if longest > 0 else 0.0
        return v.copy()
