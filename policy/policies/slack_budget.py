"""The slack budget: how long an idle job may wait out an outage (no pool it can land in is up)
before it runs on demand, and what a tick of slack is worth when there is too little of it.

Every tick an idle job waits costs a tick of slack and no money; running on demand through an
outage costs money and two changeovers of slack (one to start on demand, one back to spot).
What decides between them is whether slack is left for what is still to come: a job that
spends its slack early runs on demand to the end while spot comes and goes (greedy's loss on
tight deadlines). Per tick of work on spot the job's forecast says what slack it costs: a
changeover per run and, for each outage that follows a preemption, its wait or the two
changeovers of running on demand through it. The job waits an outage out for at most the
longest time ``τ`` such that the work left fits in the spare slack (above the safety margin) at
that rate, and runs on demand past ``τ``: with slack for every outage, ``τ`` is infinite (wait,
as greedy).

Outages and up spells are those of "some pool is up" (and, per pool, of the pool), as the job
has seen them: its history and its own ticks, weighted by recency, the one under way counted
as long as it has lasted. The prior gives one pseudo-spell of its mean lengths to the means
(the run a job expects), but only pseudo-outages of no length to what outages cost: running on
demand is bought on outages the job has seen, never on another pool's word.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from spotwise.pricing.forecast.prior import PoolPrior


class SpellBook:
    """The spells of "some pool up" and "no pool up" a job has seen, recency-weighted, and the
    age of the outage under way."""

    def __init__(
        self,
        past_any_up: np.ndarray,
        half_life_ticks: float,
        prior: PoolPrior,
        hours_per_tick: float,
    ) -> None:
        """``past_any_up``: bool [ticks before the job], whether some pool was up."""
        self._decay = 0.5 ** (1.0 / half_life_ticks)
        self._half_life = half_life_ticks
        n_past = len(past_any_up)
        up_mean, down_mean = prior_spells(prior)
        self.prior_up = up_mean / hours_per_tick
        self.prior_down = down_mean / hours_per_tick
        self._prior_weight = 0.5 ** (n_past / half_life_ticks)
        """One pseudo-spell, fading as the history's spells do."""
        self._ups: list[tuple[float, float]] = []
        self._downs: list[tuple[float, float]] = []
        """(length, end tick) of each finished spell; ticks before the job are negative."""
        self._up: bool | None = None
        self._since = 0.0
        """When the spell under way began."""
        if n_past:
            past = np.asarray(past_any_up, dtype=bool)
            changes = np.flatnonzero(past[1:] != past[:-1]) + 1
            bounds = np.concatenate([[0], changes]) - n_past
            for start, end, up in zip(bounds[:-1], bounds[1:], past[changes - 1], strict=True):
                (self._ups if up else self._downs).append((float(end - start), float(end)))
            self._up, self._since = bool(past[-1]), float(bounds[-1])
        self._now = -1.0

    def copy(self) -> SpellBook:
        """A copy that observes apart from this one."""
        twin = copy.copy(self)
        twin._ups, twin._downs = list(self._ups), list(self._downs)
        return twin

    def _add(self, tick: float, up: bool | None) -> None:
        if up is None:
            return
        if self._up is None:
            self._up, self._since = up, tick
        elif up != self._up:
            spells = self._ups if self._up else self._downs
            spells.append((tick - self._since, tick))
            self._up, self._since = up, tick

    def observe(self, tick: int, any_up: bool | None) -> None:
        """Add the job's tick ``tick`` (once per tick): whether some pool is up, None when the
        job does not know it this tick (the state as last known holds)."""
        if tick <= self._now:
            return
        self._now = float(tick)
        self._add(float(tick), any_up)

    def outage_age(self, tick: int) -> float:
        """Ticks since some pool was last known up (0 while one is)."""
        if self._up is None:
            return 0.0
        return 0.0 if self._up else tick - self._since

    def _weighted(self, spells: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
        """Lengths and recency weights of the spells, the one under way counted as long as it
        has lasted (a storm under way weighs at once, not when it ends)."""
        current = self._up is not None and (spells is self._ups) == self._up
        if current and self._now > self._since:
            spells = [*spells, (self._now - self._since, self._now)]
        if not spells:
            return np.zeros(0), np.zeros(0)
        lengths, ends = np.array(spells).T
        return lengths, self._decay ** (self._now - ends)

    def _prior_weight_now(self) -> float:
        return self._prior_weight * 0.5 ** (max(self._now, 0.0) / self._half_life)

    def mean_up(self) -> float:
        """Weighted mean spell of "some pool up" (ticks), with the prior's."""
        return _mean(*self._weighted(self._ups), self.prior_up, self._prior_weight_now())

    def mean_down(self) -> float:
        """Weighted mean outage (ticks), with the prior's."""
        return _mean(*self._weighted(self._downs), self.prior_down, self._prior_weight_now())

    def up_share(self) -> float:
        """Share of the time some pool is up: mean up spell over mean cycle."""
        up, down = self.mean_up(), self.mean_down()
        return up / max(up + down, 1e-9)

    def remaining_outage(self, age: float) -> float:
        """Expected further ticks of an outage that has lasted ``age``: the weighted mean of
        ``O − age`` over past outages longer than ``age``, beside the prior's (exponential: its
        mean) and one of "as long again" (``age``: an outage longer than any seen is judged by
        how long it has lasted, as the run forecast judges a run)."""
        lengths, weights = self._weighted(self._downs)
        longer = lengths > age
        prior_w = self._prior_weight_now()
        total = float(weights[longer].sum()) + prior_w + 1.0
        rest = float((lengths[longer] - age) @ weights[longer]) + prior_w * self.prior_down
        return (rest + age) / total

    def outage_costs(self, taus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each wait limit in ``taus`` (ticks): the expected wait of an outage,
        ``E[min(O, τ)]``, and the chance it outlasts the limit, ``P(O > τ)``, over the outages
        the job has seen (the one under way as long as it has lasted). The prior adds
        pseudo-outages of no length: what costs money (running on demand) must be earned by
        outages seen, never bought on another pool's word."""
        lengths, weights = self._weighted(self._downs)
        total = float(weights.sum()) + self._prior_weight_now()
        if total <= 0:
            return np.zeros(len(taus)), np.zeros(len(taus))
        capped = np.minimum(lengths[None, :], taus[:, None])
        longer = lengths[None, :] > taus[:, None]
        return capped @ weights / total, longer @ weights / total

    def limits(self) -> np.ndarray:
        """The wait limits worth comparing (ticks): 0, every outage length seen and a geometric
        grid up to four prior outages or the longest seen."""
        lengths, _ = self._weighted(self._downs)
        top = max(float(lengths.max()) if len(lengths) else 0.0, 4 * self.prior_down, 1.0)
        return np.unique(np.concatenate([[0.0], lengths, np.geomspace(1.0, top + 1, 24) - 1]))


class SlackBudget:
    """The slack the rest of a job needs on spot: per tick of work, a changeover per spot run
    and, for each outage that follows a preemption, its wait (at most ``τ``) or two changeovers
    to run on demand through it."""

    def __init__(self, spells: SpellBook, run: float, changeover: float) -> None:
        """``run``: the mean spot run (ticks) of the pool whose runs have been longest."""
        self.changeover = changeover
        self.productive = max(run - changeover, 1.0)
        """Expected spot work of a run (ticks)."""
        self.outages_per_preemption = min(1.0, run / max(spells.mean_up(), 1.0))
        """Outages per preemption: 1 for one pool, and for pools seen moving together; fewer
        when another pool is often up as one goes down."""
        self._spells = spells

    def per_work(self, taus: np.ndarray) -> np.ndarray:
        """Slack spent per tick of spot work, for each wait limit in ``taus``."""
        waited, longer = self._spells.outage_costs(taus)
        outages = self.outages_per_preemption
        per_run = self.changeover + outages * (waited + self.changeover * longer)
        return per_run / self.productive

    def wait_limit(self, spare: float, work: float) -> float | None:
        """The longest wait ``τ`` for an outage such that ``work`` ticks on spot fit in
        ``spare`` ticks of slack: inf when every outage may be waited out; None when none fits
        (the slack cannot carry the work left on spot, whatever the job does in outages)."""
        taus = np.append(self._spells.limits(), math.inf)
        fits = taus[work * self.per_work(taus) <= spare]
        return float(fits.max()) if len(fits) else None

    def slack_worth(self) -> float:
        """Ticks of spot work a tick of slack buys when the slack cannot carry the work left:
        at best a run per two changeovers (running on demand through each outage), or, waiting
        outages out, the up time per down time of some pool."""
        share = self._spells.up_share()
        waiting = share / max(1.0 - share, 1e-6)
        return max(self.productive / max(2 * self.changeover, 1.0), waiting)


def _mean(lengths: np.ndarray, weights: np.ndarray, prior: float, prior_weight: float) -> float:
    total = float(weights.sum()) + prior_weight
    if total <= 0:
        return prior
    return (float(lengths @ weights) + prior * prior_weight) / total


def prior_spells(prior: PoolPrior) -> tuple[float, float]:
    """Mean spells (hours) of "some pool up" and "no pool up" that ``prior`` implies: a pool is
    down ``m·(1 − a)/a`` hours after a run of ``m``, and the pools are taken to move together
    (a storm takes a region's pools at once; taken as independent, nine pools would almost
    never all be down) until the job sees them apart."""
    share = min(max(prior.available_share, 1e-3), 1 - 1e-3)
    return prior.mean_run_hours, prior.mean_run_hours * (1 - share) / share
