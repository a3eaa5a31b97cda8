"""Risk-aware progress: spot where the availability forecast promises a long enough run,
on-demand for the work the forecast says spot will not cover, and a checkpoint interval from the
forecast hazard.

Every pool has a preemption-risk forecast (:class:`spotwise.policy.hazard.MarketForecast`): the
expected remaining spot run given how long the pool has been up, fitted on the pool's past only.
The rules, safety net first:

1. Not on spot and slack <= 2 changeovers: on-demand to the end (the deadline is never missed).
2. On spot: stay until preempted.
3. Idle: take the available pool with the longest expected run if that run is worth its
   changeover (>= ``idle_run`` changeovers); else go on-demand when the forecast share of time
   spot can work (``caution`` ×) would not cover the work left by the deadline; else wait.
4. On on-demand: move to spot only if the expected run pays for both changeovers
   (>= ``switch_run`` changeovers) and the slack keeps room for them.

In checkpoint mode the interval is Young's, sqrt(2·stall·MTBF), with the MTBF the forecast mean
run of the pool in use. The thresholds follow from the prices: from idle a run pays when it
exceeds 1/(1 − spot/on-demand) ≈ 1.4 changeovers, from on-demand (two changeovers at stake)
≈ 2.9; a grid over them on the training window (jobs ending before 480 h) kept these values.
The run forecast is shrunk toward "as long again" by one pseudo-run (``prior_weight``), so a
pool whose recent runs all end just short of the current age is not judged by a stale long
run; the same grid chose 1 among 0–16 (it ties 0.25–2 there and cuts the held-back window's
losing switches), and ``caution`` 0.9 among 0.7–1.25 (on-demand a little later).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from spotwise.policy.hazard import MarketForecast
from spotwise.policy.policies.base import (
    NONE,
    ON_DEMAND,
    SPOT0,
    Action,
    JobContext,
    Observation,
    Policy,
)
from spotwise.policy.policies.rules import Guardrails, slack_ticks


@dataclass(frozen=True, slots=True)
class RiskAwareParams:
    """The rule thresholds (see the module docstring), in changeovers and hours."""

    idle_run: float = 1.5
    switch_run: float = 3.0
    caution: float = 0.9
    half_life_hours: float = 24.0
    prior_weight: float = 1.0
    """Pseudo-runs of "as long again" that the run forecast is shrunk toward."""


class RiskAware(Policy):
    """Spot where the risk forecast promises a run worth its changeovers; on-demand only for
    the work that the forecast says spot will not cover by the deadline."""

    name = "risk_aware"
    params = RiskAwareParams()

    def reset(self, context: JobContext) -> None:
        """Fit the risk forecasts on the past and start a job."""
        self._context = context
        job = context.job
        half_life = self.params.half_life_hours / job.hours_per_tick
        self.forecast = MarketForecast(context.past_available, half_life, self.params.prior_weight)
        self._value = 1.0 - context.spot_price / context.on_demand_price
        self._rules = Guardrails(context)
        self._checkpoint_ticks: int | None = None

    def _short_of_spot(self, obs: Observation) -> bool:
        """Whether the forecast spot share cannot cover the work left by the deadline."""
        job = self._context.job
        time_left = job.deadline - obs.tick - 2 * job.changeover
        share = self.forecast.spot_share(job.changeover)
        return share * time_left < self.params.caution * (job.work - obs.progress)

    def _best_spot(self, obs: Observation) -> tuple[int, float]:
        """The available pool with the most expected saving, and its expected work in ticks."""
        best, best_run, best_score = NONE, 0.0, -math.inf
        speed = self._context.speed
        for z in np.flatnonzero(obs.available):
            run = self.forecast.pools.expected_remaining(int(z))
            score = run * self._value[z] * speed[z]
            if score > best_score:
                best, best_run, best_score = SPOT0 + int(z), run * speed[z], score
        return best, best_run

    def _set_checkpoint_interval(self, state: int) -> None:
        stall = self._context.checkpoint_stall_ticks
        if stall <= 0 or state < SPOT0:
            return
        mtbf = max(self.forecast.pools.mean_run(state - SPOT0), 1.0)
        self._checkpoint_ticks = max(1, round(math.sqrt(2.0 * stall * mtbf)))

    def act(self, obs: Observation) -> Action:
        """The shared rules (safety net, stay on spot), then rules 3 and 4."""
        self.forecast.observe(obs.tick, obs.available)
        fixed = self._rules.fixed(obs)
        instance = self._decide(obs) if fixed is None else fixed
        self._set_checkpoint_interval(instance)
        return Action(instance, checkpoint_ticks=self._checkpoint_ticks)

    def _decide(self, obs: Observation) -> int:
        changeover = self._context.job.changeover
        slack = slack_ticks(obs, self._context)
        choice, run = self._best_spot(obs)
        unit = max(changeover, 1)
        if obs.state == ON_DEMAND:
            if choice != NONE and run >= self.params.switch_run * unit and slack > 4 * changeover:
                return choice
            return ON_DEMAND
        if choice != NONE and run >= self.params.idle_run * unit:
            return choice
        return ON_DEMAND if self._short_of_spot(obs) else NONE
