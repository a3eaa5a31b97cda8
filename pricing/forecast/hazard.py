"""Per-pool preemption risk from availability history: a recency-weighted empirical survival
model of spot availability runs.

A run is a stretch of consecutive available ticks; it ends in a preemption. Given that a pool
has been available for ``age`` ticks, the expected remaining run is the weighted mean of
``L - age`` over past runs longer than ``age`` (weights halve every ``half_life`` ticks since
the run ended, so the model follows regime shifts), shrunk toward "as long again" (``age``)
with ``prior_weight``: when only old runs outlasted ``age``, their weights are small and the
estimate is not theirs. A :class:`~spotwise.pricing.forecast.prior.PoolPrior` adds pseudo-runs
of its mean length, so a pool with no history starts from what similar pools say instead of
from nothing. The hazard per tick is its inverse. Only ticks already observed enter the model,
so it never looks ahead.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from spotwise.pricing.forecast.prior import PoolPrior


MIN_OUTAGES = 3.0
"""Weighted past outages below which :meth:`MarketForecast.wait_limit` does not budget."""


class AvailabilityHazard:
    """Run lengths of every pool seen so far, and the age of each pool's current run."""

    def __init__(
        self,
        past_available: np.ndarray,
        half_life_ticks: float,
        prior_weight: float = 0.0,
        prior_run: tuple[float, float] | None = None,
        *,
        pooled: bool = False,
    ) -> None:
        """Learn from ``past_available`` (bool [pools, ticks]) and continue with :meth:`observe`;
        ``prior_run`` is (mean run in ticks, pseudo-runs) from similar pools; ``pooled`` judges
        every pool by the runs of all of them."""
        self.pooled = pooled
        n_pools, n_past = past_available.shape
        self.half_life = float(half_life_ticks)
        self.prior_weight = float(prior_weight)
        self.prior_run = prior_run
        self._prior_end = -n_past
        """The prior counts as runs that ended before the history, and fades as they would."""
        self._age = np.zeros(n_pools, dtype=int)
        self._now = -1
        self._arrays: list[tuple[np.ndarray, np.ndarray]] = []
        for z in range(n_pools):
            edges = np.diff(past_available[z].astype(np.int8), prepend=0, append=0)
            starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
            closed = ends < n_past
            if len(ends) and not closed[-1]:
                self._age[z] = int(ends[-1] - starts[-1])
            lengths = (ends - starts)[closed].astype(float)
            self._arrays.append((lengths, (ends[closed] - n_past).astype(float)))

    def copy(self) -> AvailabilityHazard:
        """A copy that observes apart from this one (what it holds is replaced, never changed
        in place, so the arrays are shared)."""
        twin = copy.copy(self)
        twin._arrays = list(self._arrays)
        return twin

    @property
    def age(self) -> np.ndarray:
        """int [pools]: ticks each pool has been available without a break (0 = unavailable)."""
        return self._age

    def observe(self, tick: int, available: np.ndarray) -> None:
        """Add tick ``tick`` (ticks since the job started; each tick counted once)."""
        if tick == self._now:
            return
        self._now = tick
        for z in np.flatnonzero(~available & (self._age > 0)):
            lengths, ends = self._arrays[z]
            self._arrays[z] = (np.append(lengths, self._age[z]), np.append(ends, tick))
        self._age = np.where(available, self._age + 1, 0)

    def run_ended(self, tick: int, pool: int) -> None:
        """A run of ``pool`` ended at ``tick`` (before :meth:`observe` of that tick): the run
        under way, or, where none was seen, a run of one tick that began and ended unseen."""
        if self._age[pool] > 0:
            return  # seen: observe() closes it
        lengths, ends = self._arrays[pool]
        self._arrays[pool] = (np.append(lengths, 1.0), np.append(ends, float(tick)))

    def expected_remaining(self, pool: int, age: int | None = None) -> float:
        """Expected further available ticks of ``pool`` given it has been up ``age`` ticks.

        With no past run longer than ``age`` the current age is the estimate (a run that has
        lasted a while is expected to last as long again).
        """
        age = int(self._age[pool]) if age is None else age
        lengths, ends = self._runs(pool)
        longer = lengths > age
        as_long_again = float(max(age, 1))
        total, weight = self.prior_weight * as_long_again, self.prior_weight
        if self.prior_run is not None:
            mean, runs = self.prior_run
            runs *= 0.5 ** ((self._now - self._prior_end) / self.half_life)
            total, weight = total + runs * max(mean, as_long_again), weight + runs
        if longer.any():
            weights = 0.5 ** ((self._now - ends[longer]) / self.half_life)
            total += np.sum(weights * (lengths[longer] - age))
            weight += np.sum(weights)
        if weight == 0:
            return as_long_again
        return float(total / weight)

    def expected_remaining_up_within(self, pool: int, ticks: float) -> float:
        """Expected available ticks of ``pool``, this one included, if it is up now having been
        seen down ``ticks`` ago (inf: never seen): its run began 0 to ``ticks`` − 1 ticks ago.

        The mean of :meth:`expected_remaining` over those ages, each weighted by the share of
        past runs that outlast it (runs begin at any time; older ones must have lasted), on a
        geometric grid of ages; 1 tick is a fresh run (:meth:`mean_run`). After a long unseen
        while, a pool found up is likely in an older run, and with a falling hazard that run
        has more ahead of it."""
        lengths, ends = self._runs(pool)
        longest = float(lengths.max()) if len(lengths) else 1.0
        if self.prior_run is not None:
            longest = max(longest, 4.0 * self.prior_run[0])
        top = min(ticks, longest)
        if top <= 1:
            return self.mean_run(pool)
        edges = np.unique(np.round(np.geomspace(1.0, top + 1.0, 13)).astype(int)) - 1
        weights = 0.5 ** ((self._now - ends) / self.half_life)
        prior_runs = 0.0
        if self.prior_run is not None:
            prior_runs = self.prior_run[1] * 0.5 ** ((self._now - self._prior_end) / self.half_life)
        total = weight = 0.0
        for age, width in zip(edges[:-1], np.diff(edges), strict=True):
            # the weighted count of past runs (and prior pseudo-runs) that outlast ``age``
            reach = float(np.sum(weights[lengths > age]))
            if self.prior_run is not None:
                reach += prior_runs * float(np.exp(-age / self.prior_run[0]))
            total += reach * width * self.expected_remaining(pool, age=int(age))
            weight += reach * width
        return float(total / weight) if weight > 0 else self.mean_run(pool)

    def p_end_within(self, pool: int, ticks: float) -> float:
        """P(the current run of ``pool`` ends within ``ticks``), from the same weighted runs:
        the weighted share of past runs longer than the current age that end within ``ticks``
        more; the shrinkage ("as long again") and the prior count as exponential runs of their
        mean. 1.0 when the pool is down."""
        age = int(self._age[pool])
        if age == 0:
            return 1.0
        lengths, ends = self._runs(pool)
        longer = lengths > age
        as_long_again = float(age)
        ended = self.prior_weight * -np.expm1(-ticks / as_long_again)
        weight = self.prior_weight
        if self.prior_run is not None:
            mean, runs = self.prior_run
            runs *= 0.5 ** ((self._now - self._prior_end) / self.half_life)
            ended += runs * -np.expm1(-ticks / max(mean, as_long_again))
            weight += runs
        if longer.any():
            weights = 0.5 ** ((self._now - ends[longer]) / self.half_life)
            ended += np.sum(weights * (lengths[longer] - age <= ticks))
            weight += np.sum(weights)
        if weight == 0:
            return float(-np.expm1(-ticks / as_long_again))
        return float(ended / weight)

    def _runs(self, pool: int) -> tuple[np.ndarray, np.ndarray]:
        if not self.pooled:
            return self._arrays[pool]
        return (
            np.concatenate([lengths for lengths, _ in self._arrays]),
            np.concatenate([ends for _, ends in self._arrays]),
        )

    def weighted_runs(self, pool: int) -> tuple[np.ndarray, np.ndarray]:
        """The past runs of ``pool`` (ticks) and their recency weights (no prior)."""
        lengths, ends = self._runs(pool)
        return lengths, 0.5 ** ((self._now - ends) / self.half_life)

    def mean_run(self, pool: int) -> float:
        """Recency-weighted mean run length of ``pool`` in ticks (the MTBF while on spot)."""
        return self.expected_remaining(pool, age=0)


class MarketForecast:
    """The risk forecast of every pool plus the forecast share of ticks spot can work."""

    def __init__(
        self,
        past_available: np.ndarray,
        half_life_ticks: float,
        prior_weight: float = 0.0,
        prior: PoolPrior | None = None,
        hours_per_tick: float = 1.0,
        *,
        pooled: bool = False,
        reversion_ticks: float | None = None,
    ) -> None:
        """Learn from ``past_available`` (bool [pools, ticks before the job]), starting from
        ``prior`` (its hours read with ``hours_per_tick``) where given; ``reversion_ticks``: how
        fast the recent share reverts to the long-run one (None: it does not)."""
        n_pools, n_past = past_available.shape
        pool_run = any_run = None
        up_weight = weight = 0.0
        self._decay = 0.5 ** (1.0 / half_life_ticks)
        self._reversion = reversion_ticks
        long_up = long_weight = 0.0
        if prior is not None:
            run = prior.mean_run_hours / hours_per_tick
            pool_run = (run, prior.weight_runs)
            # independent pools: some pool is up unless all are down
            any_share = 1.0 - (1.0 - prior.available_share) ** n_pools
            any_run = pool_run
            weight = prior.weight_hours / hours_per_tick * self._decay**n_past
            up_weight = any_share * weight
            long_weight = prior.weight_hours / hours_per_tick
            long_up = any_share * long_weight
        self.pools = AvailabilityHazard(
            past_available, half_life_ticks, prior_weight, pool_run, pooled=pooled
        )
        any_past: np.ndarray = np.asarray(past_available.any(axis=0, keepdims=True))
        self.any_pool = AvailabilityHazard(any_past, half_life_ticks, 0.0, any_run)
        self.outages = AvailabilityHazard(~any_past, half_life_ticks)
        """Runs of ticks with no pool up: the outages an idle job would wait through."""
        self._past_outages = float(self.outages.weighted_runs(0)[1].sum())
        weights = self._decay ** np.arange(n_past)[::-1]
        self._up_weight = up_weight + float(np.sum(weights * any_past[0]))
        self._weight = weight + float(np.sum(weights))
        self._long_up = long_up + float(np.sum(any_past[0]))
        self._long_weight = long_weight + n_past
        self._now = -1

    def copy(self) -> MarketForecast:
        """A copy that observes apart from this one."""
        twin = copy.copy(self)
        twin.pools, twin.any_pool = self.pools.copy(), self.any_pool.copy()
        twin.outages = self.outages.copy()
        return twin

    def observe(self, tick: int, available: np.ndarray, any_up: bool | None = None) -> None:
        """Add tick ``tick`` (ticks since the job started; each tick counted once), with
        ``available`` each pool's availability as last seen and ``any_up`` whether some pool is
        up where that is known fresher (else: some pool as last seen)."""
        if tick == self._now:
            return
        self._now = tick
        self.pools.observe(tick, available)
        up = bool(available.any()) if any_up is None else any_up
        self.any_pool.observe(tick, np.array([up]))
        self.outages.observe(tick, np.array([not up]))
        self._up_weight = self._decay * self._up_weight + up
        self._weight = self._decay * self._weight + 1.0
        self._long_up += up
        self._long_weight += 1.0

    def wait_limit(
        self, slack_ticks: float, horizon_ticks: float, changeover_ticks: float
    ) -> float | None:
        """How long an idle job may wait out an outage (ticks since the last pool went down)
        before it runs on-demand, so that the slack lasts to the deadline: the longest limit
        whose expected idle ticks, plus two changeovers per outage that outlasts it, over the
        outages expected in ``horizon_ticks`` fit in ``slack_ticks``. Expected outages are past
        ones (recency-weighted) over their mean cycle. None when the history before the job
        held fewer than :data:`MIN_OUTAGES` weighted outages: the outages a job has seen end
        are the short ones (a long one is still under way), too biased to budget by."""
        lengths, weights = self.outages.weighted_runs(0)
        total = float(weights.sum())
        if not (self._past_outages >= MIN_OUTAGES and total > 0):  # NaN too: no budget
            return None
        if slack_ticks <= 0:
            return 0.0
        share = weights / total
        mean_outage = float(np.sum(share * lengths))
        outages = horizon_ticks / max(mean_outage + self.any_pool.mean_run(0), 1.0)
        if outages * mean_outage <= slack_ticks:
            return math.inf  # slack for every outage expected: wait them all out
        limits = np.unique(lengths)
        idle = np.array([np.sum(share * np.minimum(lengths, t)) for t in limits])
        moves = np.array([np.sum(share[lengths > t]) for t in limits]) * 2 * changeover_ticks
        fits = limits[outages * (idle + moves) <= slack_ticks]
        return float(fits.max()) if len(fits) else 0.0

    def spot_share(self, changeover_ticks: int, horizon_ticks: float | None = None) -> float:
        """Forecast share of the next ``horizon_ticks`` that spot can work: the share of ticks
        with some pool available, less one changeover per run. The recent share reverts to the
        long-run one (an Ornstein-Uhlenbeck mean, when a reversion time is set), so a storm
        that just passed weighs less on a long horizon."""
        if self._weight == 0:
            return 0.0
        available = self._up_weight / self._weight
        if self._reversion and horizon_ticks and self._long_weight > 0:
            x = horizon_ticks / self._reversion
            recent = (1.0 - np.exp(-x)) / x
            available = recent * available + (1 - recent) * self._long_up / self._long_weight
        run = self.any_pool.mean_run(0)
        return available * max(0.0, 1.0 - changeover_ticks / max(run, 1.0))
