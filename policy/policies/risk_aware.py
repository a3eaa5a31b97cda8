"""Risk-aware progress: spot where the availability forecast promises a run worth its
changeovers, on demand through the outages the slack cannot afford to wait out, and back to
spot as soon as a run pays for the changeovers it costs.

Every pool has a preemption-risk forecast (the shipped one of
:mod:`spotwise.pricing.forecast.risk_forecasters`): the expected remaining spot run given how
long the pool has been up, fitted on the pool's past only and started from the prior of other
pools when that past is short. Seeing only what launch requests teach, a pool counts as it was
last seen, and a pool seen down has a fresh run ahead of it when it comes back. The rules, the
shared ones first (:mod:`spotwise.policy.policies.rules`):

1. Not on spot and the slack down to the safety margin: on demand to the end (no deadline is
   ever missed). On spot: stay until preempted.
2. Idle with a pool up (or, blind, not seen down) whose expected run outlasts its changeover:
   take it (blind: a request naming every such pool, longest expected run first).
3. Idle with none: wait the outage out for at most the slack budget's limit ``τ``
   (:mod:`spotwise.policy.policies.slack_budget`: the longest wait for which the work left
   fits in the slack above the safety margin, at the slack that spot spends per tick of work:
   a changeover a run and, per outage, the wait or two changeovers to run on demand through
   it), then run on demand. Where no limit fits (the slack cannot carry the work left on spot
   whatever the job does), run on demand through an outage when that pays: it saves the
   outage's expected rest less two changeovers of slack, each tick of slack worth the spot work
   it buys, and costs that time on demand. Blind, waiting asks again (a failed request costs
   only its own time), and no outage is under way until every pool was seen in the last tick:
   a preemption says nothing of the other pools, so they are asked before any on demand where
   that pays in slack. A failed request costs its ticks and one that lands saves the two
   changeovers of running on demand; it fails as often as a preemption is an outage (the
   slack budget's outages per preemption ``q``, 1 until the job has seen the pools apart), so
   the job asks first only when ``(1 − q)·2D > q·P`` (``P`` the request's ticks): where the
   pools go down together it pays for on demand at once.
4. On demand: go back to spot when a pool's expected run pays for the changeovers the move
   costs. A run of ``L`` ticks on spot instead of on demand saves ``(L − D)(o − s)`` and costs
   a changeover onto spot (``D·s``) and, when it ends, one back to on demand (``D·o``), so it
   pays when ``L > 2D / (1 − s/o)`` (2.9 changeovers at the reference prices): a run that
   covers a changeover and more. Where no wait limit fits (the slack cannot carry the work
   left on spot), the round trip's two changeovers of slack are charged too, at the spot work
   they would buy later (``2D·w``, ``w`` the slack's worth of rule 3) times the chance that the
   run ends before it pays for them (``1 − exp(−2D / ((1 − s/o)·L))``): in a storm, whose
   spells are short, a job short of slack keeps it for runs likelier to pay for it.
   Blind, a pool seen down k ticks ago is judged by a run that began up to k ticks ago (asking
   every tick would land in flickers), and asking costs a job on demand nothing.

5. The forecast is a job's past; a storm it has not seen would spend the slack it budgets for
   outages it expects to be rare. Where the slack left could not carry the work left on spot
   at the runs of other pools (the prior's mean run: a changeover per run), the job keeps to
   uniform progress's line (:func:`~spotwise.policy.policies.rules.behind_the_line`), with
   the two changeovers of its hysteresis as leeway: idle, an outage is overdue once the job
   is more than two changeovers behind the line whatever the forecast's wait limit; on
   demand, no spot run is taken until the job is back within them. A job with slack to spare
   (a loose deadline, a short changeover) is left to its forecast; a tight one goes on demand
   in a storm as early as uniform progress would, and back to spot as soon as the forecast
   says a run pays.

Apart from that line, nothing here is a fixed fraction of the slack: what the job keeps is what
its forecast of the work left needs in changeovers and waits, and it moves as the job sees the
market. Outages the job has not seen cost nothing in that forecast (the prior adds
pseudo-outages of no length), so a cold job buys on demand on what it has seen, never on
another pool's word; the outage under way when the job started is counted when it ends (a
random start falls in a long outage more often than in a short one).

In checkpoint mode the interval is Young's, sqrt(2·stall·MTBF), with the MTBF the forecast mean
run of the pool in use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from spotwise.policy.policies.base import (
    ON_DEMAND,
    RUN_ON_DEMAND,
    SPOT0,
    WAIT,
    Action,
    JobContext,
    Observation,
    Policy,
    request,
)
from spotwise.policy.policies.risk import fit_past, fresh_any_up, prior_of
from spotwise.policy.policies.rules import (
    Guardrails,
    behind_the_line,
    safety_margin,
    slack_ticks,
    uniform_progress_line,
)
from spotwise.policy.policies.slack_budget import SlackBudget
from spotwise.pricing.forecast.risk_forecasters import SHIPPED_RISK, RiskConfig, RiskForecaster


@dataclass(frozen=True, slots=True)
class RiskAwareParams:
    """The rule threshold from idle (in changeovers) and the risk forecast's values
    (:data:`SHIPPED_RISK`'s unless a sweep or a test tunes them)."""

    idle_run: float = 1.0
    """From idle, a run must outlast its changeover."""
    line_changeovers: float = 2.0
    """How far behind uniform progress's line (changeovers) a job short of slack may fall
    waiting out an outage, and must be back within before it leaves on demand (rule 5)."""
    half_life_hours: float = SHIPPED_RISK.half_life_hours
    prior_weight: float = SHIPPED_RISK.prior_weight
    forecaster: str = SHIPPED_RISK.forecaster
    reversion_hours: float = SHIPPED_RISK.reversion_hours

    @property
    def risk(self) -> RiskConfig:
        """The risk forecast configuration of these values: :data:`SHIPPED_RISK` itself unless
        one is tuned."""
        return SHIPPED_RISK.variant(
            forecaster=self.forecaster,
            half_life_hours=self.half_life_hours,
            prior_weight=self.prior_weight,
            reversion_hours=self.reversion_hours,
        )


def some_pool_up(obs: Observation) -> bool | None:
    """Whether some pool is up as far as the job knows it fresh (:func:`fresh_any_up`), except
    that, blind and not on spot, no pool up is known only once every pool was seen within the
    last tick: a pool just seen down (a preemption, a request naming only some pools) says
    nothing of the others (None: not known)."""
    any_up = fresh_any_up(obs)
    if any_up is False and obs.seen_age is not None and not bool((obs.seen_age <= 1).all()):
        return None
    return any_up


def pays_run(spot_price: float, on_demand_price: float) -> float:
    """Changeovers a spot run must outlast to pay for leaving on demand and coming back:
    2 / (1 − spot/on-demand)."""
    return 2.0 / max(1.0 - spot_price / on_demand_price, 1e-6)


class RiskAware(Policy):
    """Spot where the risk forecast promises a run worth its changeovers; on demand through the
    outages the slack cannot afford, and back to spot when a run pays for the move."""

    name = "risk_aware"
    params = RiskAwareParams()
    forecast: RiskForecaster

    def reset(self, context: JobContext) -> None:
        """Fit the risk forecasts on the past and start a job."""
        self._context = context
        self._blind = context.observe != "all"
        fitted = context.past_fit
        if fitted is not None and fitted.config == self.params.risk:
            fit = fitted.copy()
        else:
            fit = fit_past(context, self.params.risk)
        self.forecast = fit.forecast
        self._value = 1.0 - context.spot_price / context.on_demand_price
        self._pays = np.array(
            [pays_run(float(p), context.on_demand_price) for p in context.spot_price]
        )
        self._rules = Guardrails(context)
        self._n_pools = len(context.pools)
        self._checkpoint_ticks: int | None = None
        self._spells = fit.spells
        self._pool_spells = list(fit.pool_spells)
        self._memo: dict[tuple[int, int], float] = {}
        self._memo_tick = -1
        self._refresh = max(1, context.job.changeover)

    def act(self, obs: Observation) -> Action:
        """The shared rules (safety net, stay on spot), then rules 2 to 4."""
        any_up = some_pool_up(obs)
        if obs.preempted and obs.preempted_pool >= 0:
            self.forecast.taken_back(obs.tick, obs.preempted_pool)
        self.forecast.update(obs.tick, obs.belief(), any_up)
        self._spells.observe(obs.tick, any_up)
        belief, age = obs.belief(), obs.seen_age
        for z, book in enumerate(self._pool_spells):
            fresh = age is None or age[z] == 0 or (obs.state == SPOT0 + z)
            book.observe(obs.tick, bool(belief[z]) if fresh else None)
        self.why = None
        fixed = self._rules.fixed(obs)
        action = self._decide(obs) if fixed is None else Action(fixed)
        self._set_checkpoint_interval(action.instance)
        return Action(action.instance, checkpoint_ticks=self._checkpoint_ticks, also=action.also)

    def _decide(self, obs: Observation) -> Action:
        unit = max(self._context.job.changeover, 1)
        ranked = self._ranked(obs)
        if obs.state == ON_DEMAND:
            worth = self._worth_leaving(obs, ranked)
            return self._take(worth) if worth else RUN_ON_DEMAND
        worth = [z for z, run in ranked if run > self.params.idle_run * unit]
        hopeful = obs.hopeful()
        if any(hopeful[z] for z in worth):
            return self._take(worth)
        asked = worth or [z for z, _ in ranked]
        if self._blind and self._unconfirmed(obs, asked) and self._asking_pays():
            return request(asked)
        if self._outage_overdue(obs):
            return RUN_ON_DEMAND
        return request(asked) if self._blind else WAIT

    def _worth_leaving(self, obs: Observation, ranked: list[tuple[int, float]]) -> list[int]:
        """The pools whose expected run pays for leaving on demand: in money, a run of ``L``
        ticks with ``L·(1 − s/o) > 2D`` (the two changeovers' price); and, where the slack
        cannot carry the work left on spot (no wait limit fits), for the slack too: a round
        trip spends two changeovers of slack, each tick worth
        :meth:`SlackBudget.slack_worth` ticks of spot work, charged at the chance that the run
        is shorter than what pays for its changeovers (a run of the forecast's mean,
        exponential)."""
        if self._behind(obs):
            return []
        d = max(self._context.job.changeover, 1)
        paying = [(z, run) for z, run in ranked if run > self._pays[z] * d]
        if not paying:
            return []
        budget = self._budget()
        if budget.wait_limit(self._spare(obs), self._context.job.work - obs.progress) is not None:
            return [z for z, _ in paying]
        trip = 2 * d * budget.slack_worth()  # the spot work a round trip's slack buys
        worth = []
        for z, run in paying:
            short = -math.expm1(-self._pays[z] * d / run)
            if (run - short * trip) * self._value[z] > 2 * d:
                worth.append(z)
        return worth

    def _asking_pays(self) -> bool:
        """Blind, before on demand: whether asking the pools not seen in the last tick pays in
        slack. A failed request costs its ticks ``P``; one that lands saves the two
        changeovers of running on demand and back; it fails as often as a preemption is an
        outage (the slack budget's outages per preemption ``q``), so it pays when
        ``(1 − q)·2D > q·P``."""
        q = self._budget().outages_per_preemption
        d = max(self._context.job.changeover, 1)
        return (1.0 - q) * 2 * d > q * max(self._context.probe_ticks, 1)

    def _unconfirmed(self, obs: Observation, pools: list[int]) -> bool:
        """Blind: whether one of ``pools`` was last seen before the last request's answer (a
        preemption says nothing of the other pools; ask them before paying for on demand)."""
        assert obs.seen_age is not None
        fresh = max(self._context.probe_ticks, 1)
        return any(obs.seen_age[z] > fresh for z in pools)

    def _budget(self) -> SlackBudget:
        """The slack budget, with the spot run of the pool whose runs have been longest."""
        best_run = max(book.mean_up() for book in self._pool_spells)
        return SlackBudget(self._spells, best_run, self._context.job.changeover)

    def _behind(self, obs: Observation) -> bool:
        """Whether rule 5 holds the job to uniform progress's line and it has fallen further
        behind than the line lets it: only where the slack left could not carry the work left
        at the prior's runs (a changeover per run)."""
        if not behind_the_line(obs, self._context, self.params.line_changeovers):
            return False
        context = self._context
        d = context.job.changeover
        prior_run = prior_of(context).mean_run_hours / context.job.hours_per_tick
        runs = (context.job.work - obs.progress) / max(prior_run - d, 1.0)
        if runs * d <= self._spare(obs):
            return False
        hours = context.job.hours_per_tick
        lag = (uniform_progress_line(context, obs.tick) - obs.progress) * hours
        self.why = (
            f"on-demand: {lag:.2f} h behind uniform progress, and the slack left could not "
            f"carry the work left at the prior's {prior_run * hours:.2f} h runs; spot again "
            f"once within {self.params.line_changeovers:g} changeovers of it"
        )
        return True

    def _spare(self, obs: Observation) -> float:
        """Slack above the safety margin."""
        context = self._context
        margin = safety_margin(context.job.changeover, context.probe_ticks)
        return slack_ticks(obs, context) - margin

    def _outage_overdue(self, obs: Observation) -> bool:
        """Whether the outage under way has lasted the slack budget's limit; where no limit
        lets the slack carry the work left, whether running on demand through its expected
        rest pays: it saves that rest less two changeovers of slack, each tick worth the spot
        work it buys (:meth:`SlackBudget.slack_worth`), and costs that time on demand instead
        of on spot and the two changeovers' price. Either way, it is overdue once the job is
        behind uniform progress's line (rule 5)."""
        if self._behind(obs):
            return True
        job = self._context.job
        budget = self._budget()
        age = self._spells.outage_age(obs.tick)
        limit = budget.wait_limit(self._spare(obs), job.work - obs.progress)
        if limit is not None:
            return age >= limit
        d = job.changeover
        rest = self._spells.remaining_outage(age)
        money = (rest - d) + d * (float(self._pays.min()) - 1.0)
        return budget.slack_worth() * (rest - 2 * d) > money

    def _take(self, pools: list[int]) -> Action:
        return request(pools) if self._blind else Action(SPOT0 + pools[0])

    def _ranked(self, obs: Observation) -> list[tuple[int, float]]:
        """Pools that may be had, most expected saving first, with their expected work in
        ticks: the available ones, or, blind, every pool not just seen down."""
        speed, belief = self._context.speed, obs.belief()
        scored = []
        for z in obs.askable():
            run = self._expected_run(obs, z, bool(belief[z]))
            scored.append((run * self._value[z] * speed[z], z, run * speed[z]))
        scored.sort(key=lambda item: -item[0])
        return [(z, run) for _, z, run in scored]

    def _expected_run(self, obs: Observation, pool: int, up: bool) -> float:
        """Expected run of ``pool`` if it is taken now: its current run's rest when it is seen
        up; blind, one of unknown age up to the ticks since it was seen down; else a fresh one.
        """
        if up:
            return self.forecast.expected_run(pool)
        if obs.seen_age is not None and obs.seen_age[pool] > 1:
            return self._run_up_within(obs.tick, pool, float(obs.seen_age[pool]))
        return self.forecast.expected_run(pool, fresh=True)

    def _run_up_within(self, tick: int, pool: int, ticks: float) -> float:
        """The forecast's run of a pool found up within ``ticks``, remembered for a changeover
        (it moves slowly; asked of every pool every idle tick, it is the policy's main cost)."""
        if tick - self._memo_tick >= self._refresh:
            self._memo.clear()
            self._memo_tick = tick
        if math.isinf(ticks):
            bucket = -1
        elif ticks < 16:
            bucket = int(ticks)
        else:  # quarter octaves
            bucket = 1000 + round(4 * math.log2(ticks))
        key = (pool, bucket)
        if key not in self._memo:
            self._memo[key] = self.forecast.expected_run_up_within(pool, ticks)
        return self._memo[key]

    def _set_checkpoint_interval(self, state: int) -> None:
        stall = self._context.checkpoint_stall_ticks
        if stall <= 0 or state < SPOT0:
            return
        mtbf = max(self.forecast.expected_run(state - SPOT0, fresh=True), 1.0)
        self._checkpoint_ticks = max(1, round(math.sqrt(2.0 * stall * mtbf)))
