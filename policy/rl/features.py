"""What a learned policy sees at each tick: one float vector built from the job's state and
each pool's risk forecast, padded to a fixed number of pool slots."""

from __future__ import annotations

import math

import numpy as np

from spotwise.policy.hazard import MarketForecast
from spotwise.policy.policies.base import ON_DEMAND, SPOT0, JobContext, Observation
from spotwise.policy.policies.rules import slack_ticks
from spotwise.policy.risk import prior_of

GLOBAL_FEATURES = 8
POOL_FEATURES = 6
HALF_LIFE_HOURS = 24.0


def observation_size(max_pools: int) -> int:
    """Length of the feature vector for ``max_pools`` slots."""
    return GLOBAL_FEATURES + POOL_FEATURES * max_pools


class FeatureBuilder:
    """Turns (job context, observation) into the learned policy's input; never looks ahead."""

    def __init__(self, context: JobContext, max_pools: int) -> None:
        n_pools = len(context.pools)
        if n_pools > max_pools:
            raise ValueError(f"{n_pools} pools, but the model was trained for at most {max_pools}")
        self.context, self.max_pools = context, max_pools
        job = context.job
        self.forecast = MarketForecast(
            context.past_available,
            HALF_LIFE_HOURS / job.hours_per_tick,
            prior=prior_of(context),
            hours_per_tick=job.hours_per_tick,
        )
        self._unit = float(max(job.changeover, 1))
        self._vector = np.zeros(observation_size(max_pools), dtype=np.float32)
        pools = self._vector[GLOBAL_FEATURES:].reshape(max_pools, POOL_FEATURES)
        pools[:n_pools, 1] = 1.0
        pools[:n_pools, 5] = context.spot_price / context.on_demand_price

    def observe(self, obs: Observation) -> None:
        """Feed this tick to the risk forecast (every tick, once; again is a no-op)."""
        self.forecast.observe(obs.tick, obs.belief())

    def vector(self, obs: Observation) -> np.ndarray:
        """The features of this tick (a fresh array); observes the tick first."""
        job, forecast = self.context.job, self.forecast
        self.observe(obs)
        v = self._vector
        work_left = job.work - obs.progress
        time_left = job.deadline - obs.tick
        share = forecast.spot_share(job.changeover)
        v[0] = obs.progress / job.work
        v[1] = time_left / job.deadline
        v[2] = slack_ticks(obs, self.context) / max(job.deadline - job.work, 1)
        v[3] = obs.changeover_left / self._unit
        v[4] = obs.state == ON_DEMAND
        v[5] = obs.state >= SPOT0
        v[6] = share
        v[7] = min(3.0, share * time_left / max(work_left, 1.0)) / 3.0
        n_pools = len(self.context.pools)
        pools = v[GLOBAL_FEATURES:].reshape(self.max_pools, POOL_FEATURES)
        belief = obs.belief()
        pools[:n_pools, 0] = belief
        pools[:n_pools, 2] = 0.0
        if obs.state >= SPOT0:
            pools[obs.state - SPOT0, 2] = 1.0
        age = forecast.pools.age
        for z in range(n_pools):
            pools[z, 3] = math.log1p(age[z]) / 7.0
            run = forecast.pools.expected_remaining(z) if belief[z] else 0.0
            pools[z, 4] = math.log1p(run / self._unit) / 5.0
        return v.copy()
