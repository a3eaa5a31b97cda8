"""What a job believes of each pool at a tick: how long a spot run there lasts, how often the
pool is up, whether it is up now, and how long an outage of every pool lasts.

The run lengths are the risk forecast's (:data:`~spotwise.pricing.forecast.risk_forecasters.
SHIPPED_RISK`: a recency-weighted survival model of each pool's runs, fitted on the job's past,
started from the pooled prior of similar pools and updated with what the job sees). The share of
time a pool is up is a recency-weighted count of the ticks the job knew it (its history, its own
instance, its requests' answers) beside the prior's share. A pool last seen ``k`` ticks ago is up
now with the chance a two-state process of those means gives (runs of mean ``L``, outages of mean
``O = L·(1 − a)/a``): ``a + (b − a)·exp(−k·(1/L + 1/O))``, ``b`` what was seen.

A flat belief (:attr:`CoreParams.learn` off: the ablation that shows what the forecast is worth)
reads the prior alone, for every pool, and never updates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from spotwise.policy.policies.base import SPOT0, JobContext, Observation
from spotwise.policy.policies.risk import prior_of
from spotwise.policy.policies.slack_budget import SpellBook
from spotwise.pricing.forecast.risk_forecasters import SHIPPED_RISK, RiskForecaster

SHARE_PRIOR_HOURS = 6.0
"""Hours of sightings the prior's share of time up counts as: a few requests that find a pool
down outweigh it within the hours a job runs."""


class PoolBeliefs:
    """Per pool: expected run if the job lands there now, mean run, share of time up, chance
    it is up now; and the expected rest of an outage of every pool."""

    def __init__(
        self,
        context: JobContext,
        forecast: RiskForecaster,
        spells: SpellBook,
        *,
        learn: bool,
        pool_spells: Sequence[SpellBook] = (),
        share_prior_hours: float = SHARE_PRIOR_HOURS,
    ) -> None:
        """``forecast`` and ``spells``: the risk forecast of the job's pools and the spells of
        some pool being up, which the job updates; with ``learn`` off, the prior's alone;
        ``pool_spells``: each pool's spells of being up, as sighted; ``share_prior_hours``: the
        hours of sightings the prior's share counts as."""
        self._pool_spells = tuple(book.copy() for book in pool_spells)
        """Each pool's spells as this job sights them (its own copies)."""
        self._counted = np.full(len(context.pools), -np.inf)
        """The tick of each pool's last sighting counted."""
        self.learn = learn
        n_pools = len(context.pools)
        hours = context.job.hours_per_tick
        prior = prior_of(context)
        self.prior_run = max(prior.mean_run_hours / hours, 1.0)
        self.prior_share = min(max(prior.available_share, 0.02), 0.98)
        self._decay = 0.5 ** (hours / SHIPPED_RISK.half_life_hours)
        past = np.asarray(context.past_available, dtype=float)
        if learn and past.shape[1]:
            weights = self._decay ** np.arange(past.shape[1])[::-1]
            up_w, all_w = past @ weights, np.full(n_pools, float(weights.sum()))
        else:
            up_w, all_w = np.zeros(n_pools), np.zeros(n_pools)
        prior_w = share_prior_hours / hours
        self._up_w = up_w + self.prior_share * prior_w
        self._all_w = all_w + prior_w
        self.forecast = forecast if learn else None
        self.spells = spells
        self._tick = -1
        self._memo: dict[tuple[int, int], float] = {}
        self._runs: np.ndarray | None = None
        self._runs_tick = -2

    def observe(self, obs: Observation) -> None:
        """Add this tick's sightings of each pool (once per tick; the forecast and the spells
        are updated by their owner)."""
        if obs.tick == self._tick:
            return
        self._tick = obs.tick
        if not self.learn:
            return
        if obs.tick % 16 == 0:
            self._memo.clear()  # the runs seen move the forecast, slowly
        if obs.seen_age is None:
            fresh = np.ones(len(self._up_w), dtype=bool)
        else:  # a sighting not counted yet (a request's answer shows the next tick)
            seen_at = obs.tick - obs.seen_age
            fresh = seen_at > self._counted
            self._counted = np.where(fresh, seen_at, self._counted)
        if obs.state >= SPOT0:
            fresh[obs.state - SPOT0] = True
        belief = obs.belief()
        self._up_w = self._up_w * self._decay + (fresh & belief)
        self._all_w = self._all_w * self._decay + fresh
        for z in np.flatnonzero(fresh):
            if z < len(self._pool_spells):
                self._pool_spells[z].observe(obs.tick, bool(belief[z]))

    def share(self) -> np.ndarray:
        """float [pools]: the share of time each pool is up."""
        return np.clip(self._up_w / self._all_w, 0.02, 0.98)

    def mean_run(self) -> np.ndarray:
        """float [pools]: the mean spot run of each pool (ticks), once a tick."""
        if self._runs is None or self._runs_tick != self._tick:
            self._runs_tick = self._tick
            if self.forecast is None:
                self._runs = np.full(len(self._up_w), self.prior_run)
            else:
                fresh = [self.forecast.expected_run(z, fresh=True) for z in range(len(self._up_w))]
                self._runs = np.maximum(fresh, 1.0)
        return self._runs

    def run_if_landed(self, obs: Observation, z: int) -> float:
        """Expected ticks pool ``z`` stays up from now if the job is (or lands) there: its run's
        rest where its age is known (the job runs there, or sees every pool); blind, a run begun
        since the pool was last seen down, or a fresh run where it was not (a pool last seen up
        has a run of an age the job does not know)."""
        if self.forecast is None:
            return self.prior_run
        if obs.state == SPOT0 + z or obs.seen_age is None:
            return max(self.forecast.expected_run(z), 1.0)
        age = float(obs.seen_age[z])
        if obs.belief()[z] or math.isinf(age) or age <= 1:
            return max(self.forecast.expected_run(z, fresh=True), 1.0)
        bucket = int(age) if age < 16 else 1000 + round(4 * math.log2(age))
        key = (z, bucket)
        if key not in self._memo:
            self._memo[key] = max(self.forecast.expected_run_up_within(z, age), 1.0)
        return self._memo[key]

    def up_chance(self, obs: Observation, mean_run: np.ndarray, share: np.ndarray) -> np.ndarray:
        """float [pools]: the chance each pool is up now. A pool last seen up, or never seen:
        its run and outage means as a two-state process. A pool last seen down ``k`` ticks ago
        in an outage that has lasted ``X``: the chance that outage ended within those ``k``
        ticks, ``1 − exp(−k / R)``, ``R`` its expected rest at ``X`` (the pool's outages seen,
        the one under way as long as it has lasted: a long outage is expected to last longer)."""
        belief = obs.belief().astype(float)
        if obs.seen_age is None:
            return belief
        outage = self.outage(mean_run, share)
        up = mean_run / (mean_run + outage)
        rate = 1.0 / mean_run + 1.0 / outage
        age = np.where(np.isinf(obs.seen_age), 1e9, obs.seen_age)
        chance = up + (belief - up) * np.exp(-age * rate)
        if self.learn and self._pool_spells:
            for z in np.flatnonzero((belief == 0) & np.isfinite(obs.seen_age)):
                book = self._pool_spells[z]
                rest = max(book.remaining_outage(book.outage_age(obs.tick)), 1.0)
                chance[z] = min(chance[z], -math.expm1(-age[z] / rest))
        return chance

    def outage(self, mean_run: np.ndarray, share: np.ndarray) -> np.ndarray:
        """float [pools]: each pool's mean outage (ticks): what its runs and share of time up
        imply, or as long as its outages were seen to be, the longer."""
        outage = mean_run * (1.0 - share) / share
        if self.learn and self._pool_spells:
            seen = np.array([book.mean_down() for book in self._pool_spells])
            outage = np.maximum(outage, seen)
        return outage

    def outage_rest(self, tick: int) -> float:
        """Expected ticks until some pool is up again, in an outage of every pool that has
        lasted since it began."""
        return max(self.spells.remaining_outage(self.spells.outage_age(tick)), 1.0)
