"""The core policy: what to run priced by its expected cost to finish, with the slack budget
deciding when an outage is waited out.

Two questions are answered at every tick, from the same risk forecast:

- **When** (the slack budget of :mod:`spotwise.policy.policies.risk_aware`): idle in an outage,
  wait it out for as long as the slack left can afford it, then on demand; on demand, back to
  spot once a run pays for its changeovers. The shared safety net stays a hard rule.
- **Where** (:mod:`.options`): every spot pool it may ask, every on-demand region and the
  instance it has, priced by the expected cost to finish the job: the pool's price for its
  forecast run, the checkpoint's egress, the request's charge, then the rest of the job from
  the work and slack left. A launch request names the pools that cost less to finish in than on
  demand, least first. A running instance is left when landing elsewhere is expected to cost less
  to finish by more than the move's changeover (a cheaper pool that came back, a pool whose run
  is forecast to outlast this one's by more than the move costs); while the job runs, a pool is
  asked again only a changeover after it was last seen down.

The bid of a spot decision is the price at which staying there would cost as much to finish as
the best other option: above it, moving pays. The checkpoint interval is Young's,
``sqrt(2·δ·M)``, ``M`` the forecast run of the pool in use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from spotwise.policy.core.beliefs import PoolBeliefs
from spotwise.policy.core.continuation import Continuation
from spotwise.policy.core.options import Option, Segments, land, on_demand, request, stay
from spotwise.policy.policies.base import (
    NONE,
    ON_DEMAND,
    SPOT0,
    Action,
    JobContext,
    Observation,
)
from spotwise.policy.policies.risk_aware import RiskAware, RiskAwareParams
from spotwise.policy.policies.rules import late, safety_margin, slack_ticks
from spotwise.policy.pools.regions import NOWHERE, Regions


@dataclass(frozen=True, slots=True, kw_only=True)
class CoreParams(RiskAwareParams):
    """The core's values (saved with a tuned policy; tuning never subclasses)."""

    learn: bool = True
    """Read the risk forecast (False: every pool is the prior, never updated: the ablation that
    shows what the forecast is worth)."""
    spread: float = 2.0
    """A factor on the spot supply's standard deviation in the continuation (runs and outages
    are heavier-tailed than exponential)."""
    move_margin: float = 6.0
    """Changeovers' worth of money a move must save beyond its own cost."""
    move_on_runs: bool = False
    """Move for a longer forecast run too (False: a pool landed in is judged by a run no longer
    than the one the job is on, so only its price and the move's cost move the job)."""


@dataclass(slots=True)
class TickPrices:
    """A tick's options, priced, and the one chosen (none: the slack budget or the safety net
    decided without prices)."""

    options: list[Option] = field(default_factory=list)
    chosen: Option | None = None


class CorePolicy(RiskAware):
    """Where to run priced by the expected cost to finish; when to wait by the slack budget."""

    name = "core"
    params: CoreParams = CoreParams()
    _rule_why: str | None = None

    def reset(self, context: JobContext) -> None:
        """Fit the forecast on the job's past (none for a flat belief) and start a job."""
        if not self.params.learn:
            context = replace(context, past_available=context.past_available[:, :0], past_fit=None)
        super().reset(context)
        self._regions = context.regions or Regions.of(context.pools, context.on_demand_price)
        self._beliefs = PoolBeliefs(
            context,
            self.forecast,
            self._spells,
            learn=self.params.learn,
            pool_spells=self._pool_spells,
        )
        self._h = context.job.hours_per_tick
        self._od_tick = self._regions.on_demand * self._h
        self._pool_region = self._regions.of_pool
        self._egress = self._regions.egress_per_gb * context.checkpoint_gb
        self._speed = np.asarray(context.speed, dtype=float)
        self._checkpoint_ticks = None
        self.last = TickPrices()
        self._named: list[int] = []

    def act(self, obs: Observation) -> Action:
        """The slack budget's when, the cost to finish's where."""
        self._beliefs.observe(obs)
        sighted = self._worth_running(obs)
        action = super().act(sighted) if self.params.learn else self._act_on_prior(sighted)
        self.last = TickPrices()
        if obs.changeover_left > 0 and not late(obs, self._context):  # let it start
            region = obs.od_region if obs.state == ON_DEMAND else None
            return self._placed(Action(obs.state, region=region), obs)
        if late(obs, self._context) or self._rules.engaged:
            return self._placed(action, obs)
        if obs.state >= SPOT0:
            return self._placed(self._move_or_stay(obs, action), obs)
        if action.instance >= SPOT0:
            return self._placed(self._where(obs, action), obs)
        return self._placed(action, obs)

    def _work_cost(self, obs: Observation) -> np.ndarray:
        """float [pools]: $ per tick of work on each pool's spot for a mean run (a run of ``L``
        ticks works ``L − D`` and bills ``L``, its request and a share of egress)."""
        run = self._beliefs.mean_run()
        productive = np.maximum(run - self._context.job.changeover, 0.0) * self._speed
        per_run = self._context.request_usd + 0.5 * self._egress.mean(axis=0)[self._pool_region]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(
                productive > 0, (obs.prices * self._h * run + per_run) / productive, np.inf
            )

    def _worth_running(self, obs: Observation) -> Observation:
        """``obs`` with the pools whose spot costs as much as on demand shown down (a run there
        never pays, so the slack budget neither asks them nor waits for them). A pool whose
        runs are short is left to the slack budget's own test (a run must outlast its
        changeover): its runs' tail, not their mean, is what pays."""
        dear = obs.prices >= self._regions.on_demand.min()
        if obs.state >= SPOT0:
            dear[obs.state - SPOT0] = False
        if not dear.any():
            return obs
        seen = None if obs.last_seen is None else obs.last_seen & ~dear
        age = None if obs.seen_age is None else np.where(dear, 0.0, obs.seen_age)
        return replace(obs, available=obs.available & ~dear, last_seen=seen, seen_age=age)

    def _act_on_prior(self, obs: Observation) -> Action:
        """The slack budget's action without learning anything (the flat belief)."""
        self.why = None
        fixed = self._rules.fixed(obs)
        action = self._decide(obs) if fixed is None else Action(fixed)
        return Action(action.instance, also=action.also)

    def _placed(self, action: Action, obs: Observation) -> Action:
        """``action`` with its on-demand region, bid and checkpoint interval."""
        region = action.region
        if action.instance == ON_DEMAND and region is None:
            region = self._od_region(obs)
        self._set_checkpoint_interval(action.instance)
        return Action(
            action.instance,
            bid=action.bid,
            checkpoint_ticks=self._checkpoint_ticks,
            also=action.also,
            region=region,
        )

    def _od_region(self, obs: Observation) -> int:
        """On demand runs where it runs already, else where the rest of the job costs least
        on demand from the checkpoint."""
        if obs.state == ON_DEMAND:
            return obs.od_region
        work = (self._context.job.work - obs.progress) * self._h
        return self._regions.cheapest_on_demand(obs.region, self._context.checkpoint_gb, work)

    # -- pricing -------------------------------------------------------------------------

    def _segments(self, obs: Observation) -> Segments:
        context = self._context
        lost = 0.0
        if context.checkpoint_stall_ticks > 0 and obs.state != NONE and self._checkpoint_ticks:
            lost = self._checkpoint_ticks / 2
        return Segments(
            work=context.job.work - obs.progress,
            slack=slack_ticks(obs, context),
            changeover=context.job.changeover,
            lost=lost,
            failed_slack=max(context.probe_ticks, 1),
        )

    def _continuation(self, obs: Observation) -> Continuation:
        beliefs = self._beliefs
        return Continuation.of(
            self._work_cost(obs),
            beliefs.share(),
            beliefs.mean_run(),
            self._context.job.changeover,
            float(self._od_tick.min()),
            any_share=beliefs.spells.up_share(),
            spread=self.params.spread,
        )

    def _move_usd(self, here: int) -> np.ndarray:
        """$ the request and the checkpoint's egress cost, landing in each pool."""
        egress = self._egress[here][self._pool_region] if here != NOWHERE else 0.0
        return self._context.request_usd + np.zeros(len(self._pool_region)) + egress

    def _on_demand_options(
        self,
        obs: Observation,
        seg: Segments,
        cont: Continuation,
        hold: float,
        restarting: bool = False,
    ) -> list[Option]:
        """On demand in each region, held ``hold`` ticks (``restarting``: the instance the job
        runs on is gone, so every region starts a new one)."""
        regions = np.arange(self._regions.count)
        here = obs.region
        move = self._context.request_usd + (
            self._egress[here] if here != NOWHERE else np.zeros(len(regions))
        )
        running = (obs.state == ON_DEMAND) & (regions == obs.od_region) & (not restarting)
        switching = ~running
        costs = on_demand(seg, cont, self._od_tick, move, hold, switching)
        return [
            Option("on-demand", float(costs[r]), region=int(r),
                   move_usd=float(move[r]) if switching[r] else 0.0, run_ticks=hold)
            for r in regions
        ]  # fmt: skip

    def _landings(
        self,
        obs: Observation,
        seg: Segments,
        cont: Continuation,
        pools: list[int],
        longest: float = math.inf,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per pool of ``pools``: $ to finish landing there, its forecast run (at most
        ``longest``), its up chance."""
        beliefs = self._beliefs
        runs = np.minimum([beliefs.run_if_landed(obs, z) for z in pools], longest)
        move = self._move_usd(obs.region)[pools]
        price = obs.prices[pools] * self._h
        landed = land(seg, cont, price, runs * self._speed[pools], move)
        chance = beliefs.up_chance(obs, beliefs.mean_run(), beliefs.share())[pools]
        return landed, runs, chance

    def _where(self, obs: Observation, action: Action) -> Action:
        """The slack budget asks for spot: name the pools that cost less to finish in than on
        demand, least first (on demand where none does)."""
        pools = list(action.named_pools())
        if obs.state == ON_DEMAND:  # one request per pool per changeover
            allowed = set(self._askable_while_running(obs, -1))
            pools = [z for z in pools if z in allowed]
            if not pools:
                return Action(ON_DEMAND, region=obs.od_region)
        seg, cont = self._segments(obs), self._continuation(obs)
        od = self._on_demand_options(obs, seg, cont, hold=seg.work + seg.changeover)
        best_od = min(od, key=lambda o: o.cost)
        landed, runs, chance = self._landings(obs, seg, cont, pools)
        options = [*od]
        if obs.state == ON_DEMAND and self._context.failed_request_ends:
            # a failed request ends the on-demand instance: the job starts it again
            again = replace(seg, slack=seg.slack - seg.failed_slack)
            hold = again.work + again.changeover
            failed = min(o.cost for o in self._on_demand_options(obs, again, cont, hold, True))
            expected, named = request(landed, chance, failed)
            if expected >= best_od.cost:
                named = []
        else:
            _, named = request(landed, np.ones(len(pools)), best_od.cost)
        if not named:
            self.last = TickPrices(options, best_od)
            return Action(ON_DEMAND, region=best_od.region)
        first = named[0]
        chosen = self._spot_option(
            obs, pools[first], float(landed[first]), runs[first], chance[first]
        )
        self.last = TickPrices([*options, chosen], chosen)
        self._named = [pools[i] for i in named]
        return Action(
            SPOT0 + self._named[0], bid=self._bid(chosen, obs), also=tuple(self._named[1:])
        )

    def _spot_option(
        self, obs: Observation, pool: int, cost: float, run: float, chance: float
    ) -> Option:
        return Option(
            "spot",
            float(cost),
            pool=pool,
            move_usd=float(self._move_usd(obs.region)[pool]),
            run_ticks=float(run),
            up_chance=float(chance),
        )

    def _move_or_stay(self, obs: Observation, action: Action) -> Action:
        """On spot: stay, unless landing elsewhere is expected to cost less to finish by more
        than the move's changeover."""
        current = obs.state - SPOT0
        seg, cont = self._segments(obs), self._continuation(obs)
        run_now = self._beliefs.run_if_landed(obs, current)
        here = Option("stay", stay(seg, cont, float(obs.prices[current] * self._h),
                                   run_now * self._speed[current]),
                      pool=current, run_ticks=run_now)  # fmt: skip
        options = [here]
        pools = self._askable_while_running(obs, current)
        if pools and seg.slack - seg.lost > self._margin_ticks():
            longest = math.inf if self.params.move_on_runs else run_now
            landed, runs, chance = self._landings(obs, seg, cont, pools, longest)
            price = obs.prices[pools] * self._h
            margin = self.params.move_margin * seg.changeover * price
            failed = here.cost  # a failed request keeps what runs
            if self._context.failed_request_ends:  # it ends it: the job starts again there
                again = replace(seg, slack=seg.slack - seg.failed_slack)
                failed = float(
                    land(
                        again,
                        cont,
                        np.array([obs.prices[current] * self._h]),
                        np.array([run_now * self._speed[current]]),
                        np.array([self._context.request_usd]),
                    )[0]
                )
            expected, named = request(landed + margin, chance, failed)
            if named and expected < here.cost:
                first = named[0]
                move = self._spot_option(obs, pools[first], expected, runs[first], chance[first])
                options.append(move)
                self.last = TickPrices(options, move)
                self._named = [pools[i] for i in named]
                return Action(SPOT0 + self._named[0], bid=self._bid(move, obs),
                              also=tuple(self._named[1:]))  # fmt: skip
        self.last = TickPrices(options, here)
        return Action(obs.state, bid=self._bid(here, obs))

    def _margin_ticks(self) -> float:
        job = self._context.job
        return safety_margin(job.changeover, self._context.probe_ticks)

    def _askable_while_running(self, obs: Observation, current: int) -> list[int]:
        """Pools a move may name: up (seeing every pool); blind, seen up this tick or last, or
        not seen for a changeover (one request per pool per changeover); where a failed request
        ends what runs, not before the pool's outage is expected to be over."""
        if obs.seen_age is None:
            return [int(z) for z in np.flatnonzero(obs.available) if z != current]
        belief = obs.belief()
        wait_ticks = np.full(len(belief), float(max(self._context.job.changeover, 1)))
        if self._context.failed_request_ends:
            beliefs = self._beliefs
            wait_ticks = np.maximum(wait_ticks, beliefs.outage(beliefs.mean_run(), beliefs.share()))
        ok = (belief & (obs.seen_age <= 1)) | (obs.seen_age >= wait_ticks)
        return [int(z) for z in np.flatnonzero(ok) if z != current]

    def _bid(self, chosen: Option, obs: Observation) -> float | None:
        """The price ($/h) at which the chosen spot option would cost as much to finish as the
        best other option priced: above it, moving pays (None: none other was priced)."""
        others = [o.cost for o in self.last.options if o is not chosen]
        if not others or chosen.run_ticks <= 0:
            return None
        current = float(obs.prices[chosen.pool])
        extra = (min(others) - chosen.cost) / (chosen.run_ticks * self._h)
        cap = float(self._regions.on_demand.max())
        return float(min(cap, max(current, current + extra)))

    def _set_checkpoint_interval(self, state: int) -> None:
        stall = self._context.checkpoint_stall_ticks
        if stall <= 0 or state < SPOT0:
            return
        mtbf = max(self._beliefs.mean_run()[state - SPOT0], 1.0)
        self._checkpoint_ticks = max(1, round(math.sqrt(2.0 * stall * mtbf)))

    @property
    def why(self) -> str | None:
        """Why the last action: the priced options, least expected cost first, where the
        tick priced them; else the slack budget's own rule, if one decided."""
        if self.last.chosen is not None:
            return self.explain()
        return self._rule_why

    @why.setter
    def why(self, value: str | None) -> None:
        self._rule_why = value

    def explain(self) -> str:
        """The last tick's priced options and their expected costs to finish, least first."""
        if self.last.chosen is None:
            return self._rule_why or "the slack budget decided: no option priced this tick"
        ranked = sorted(self.last.options, key=lambda o: o.cost)
        return "; ".join(_describe(o, self._context, self._regions) for o in ranked[:4])


class FlatCorePolicy(CorePolicy):
    """The core with every pool judged by the prior alone, never updated (the ablation that
    shows what the forecast is worth)."""

    name = "core_flat"
    params = CoreParams(learn=False)


def _describe(option: Option, context: JobContext, regions: Regions) -> str:
    cost = f"${option.cost:,.2f}"
    hours = context.job.hours_per_tick
    if option.kind == "stay":
        name = context.pools[option.pool].name
        return f"stay in {name}: {cost} (run {option.run_ticks * hours:.1f} h left)"
    if option.kind == "spot":
        name = context.pools[option.pool].name
        extra = f", move ${option.move_usd:,.2f}" if option.move_usd else ""
        return (
            f"spot in {name}: {cost} (run {option.run_ticks * hours:.1f} h, up "
            f"{option.up_chance:.0%}{extra})"
        )
    if option.kind == "on-demand":
        return f"on demand in {regions.label(option.region)}: {cost}"
    return f"wait: {cost}"
