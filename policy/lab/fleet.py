"""Many jobs under one budget: priority tiers over the single-job policy, simulated on traces.

Every job of a fleet runs the single-job ``best`` policy on its own simulator
(:class:`~spotwise.policy.simulate.JobRun`), all in lockstep; each tick a fleet controller
grants or refuses what the jobs ask, highest tier first, against the fleet's budget in $/h:

- ``high`` gets what it asks (on-demand as soon as its deadline asks for it);
- ``normal`` gets spot or on-demand while the budget has room for it, and either once its
  deadline asks (its slack down to two changeovers by its next tick: a normal job does not
  miss to save money);
- ``low`` runs only on spot, and only while the budget has room for it; it never buys
  on-demand (where its policy asks for it, it asks for spot in every pool it may) and may
  wait, so it may miss. The bench charges a missed job's unfinished work at on-demand, the
  cost of finishing it, so a miss is never a saving.

That rule is :func:`~spotwise.policy.fleet_rule.fleet_grant`, the one the executor's fleets
run (``spotwise fleet run``): the spend stays within the budget but for ``high`` jobs and
deadlines. Here every job asks every tick, highest tier first, so a lower tier's running
instance is let go when a higher tier takes its room; the executor asks when a job places an
instance, and a claim stands while it runs.

A refused request leaves the job idle (a running instance is let go); the job's policy sees
that on its next tick and adapts. Jobs move back from on-demand to spot when spot returns as
``best`` does (its rule 4), which releases the on-demand capacity.

On N-node capacity traces the jobs share each pool's nodes (:class:`SharedPools`): a launch
lands only where a node is free. The controller shares what every job's launches and
instances show (one job's failed request spares the others theirs), and a job left idle by a
request that found no node (or asking for none) gets the node of a lower tier's job that has
more slack, which checkpoints, lets it go and waits for spot. The comparison is every job
running ``best`` on its own on the same market at the same time, with no budget
(:func:`independent_costs`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from spotwise.policy import fleet_rule as rule  # called as the executor calls it: one function
from spotwise.policy.fleet_rule import TIERS, Tier
from spotwise.policy.job import JobSpec
from spotwise.policy.policies.base import (
    NONE,
    ON_DEMAND,
    SPOT0,
    WAIT,
    Action,
    JobContext,
    Observation,
    Policy,
    request,
)
from spotwise.policy.policies.rules import slack_exhausted, slack_ticks
from spotwise.policy.pools.shared_pools import SharedPools
from spotwise.policy.registry import load
from spotwise.policy.simulate import EVERYTHING, JobRun, Sight, Visibility, context_for
from spotwise.policy.traces import TraceSet


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetJob:
    """One job of a fleet: its tier, its size and deadline, and when it arrives."""

    name: str
    tier: Tier
    compute_hours: float
    deadline_hours: float
    arrives_hours: float = 0.0
    """Hours after the fleet's start at which the job is submitted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetJobResult:
    job: FleetJob
    cost_usd: float
    done: bool
    unfinished_hours: float = 0.0
    """Work left at the deadline (a missed job's); the bench charges it at on-demand."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetResult:
    """How one fleet went: each job, and the hours the fleet spent within its budget."""

    jobs: tuple[FleetJobResult, ...]
    spend: tuple[float, ...]
    """What the fleet spent ($/h) in each tick with a job in flight."""
    tick_hours: float
    budget_usd_per_hour: float

    @property
    def hours(self) -> float:
        """Hours with at least one job in flight."""
        return len(self.spend) * self.tick_hours

    @property
    def hours_over_budget(self) -> float:
        """Hours the fleet spent past its budget."""
        return sum(_over(s, self.budget_usd_per_hour) for s in self.spend) * self.tick_hours


def _over(spend: float, budget: float) -> bool:
    return spend > budget + 1e-9


def default_fleet(
    compute_hours: float = 24.0, arrive_every_hours: float = 2.0
) -> tuple[FleetJob, ...]:
    """Twelve jobs of ``compute_hours`` arriving one every ``arrive_every_hours``: three
    urgent, five ordinary, four that can wait (deadlines 1.5, 2 and 3 times their work)."""
    shapes: dict[Tier, tuple[int, float]] = {"high": (3, 1.5), "normal": (5, 2.0), "low": (4, 3.0)}
    jobs, i = [], 0
    for tier, (count, stretch) in shapes.items():
        for _ in range(count):
            jobs.append(
                FleetJob(
                    name=f"{tier}-{i}",
                    tier=tier,
                    compute_hours=compute_hours,
                    deadline_hours=stretch * compute_hours,
                    arrives_hours=arrive_every_hours * i,
                )
            )
            i += 1
    return tuple(jobs)


def fleet_span_hours(fleet: Sequence[FleetJob]) -> float:
    """Hours from the fleet's start to its last deadline."""
    return max(j.arrives_hours + j.deadline_hours for j in fleet)


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetMarket:
    """The prices and the changeover every job of the fleet shares."""

    spot_price: float
    on_demand_price: float
    changeover_hours: float = 0.2

    def spec(self, job: FleetJob) -> JobSpec:
        """The single-job spec of ``job`` on this market."""
        return JobSpec(
            compute_hours=job.compute_hours,
            deadline_hours=job.deadline_hours,
            changeover_hours=self.changeover_hours,
            spot_price=self.spot_price,
            on_demand_price=self.on_demand_price,
        )


def simulate_fleet(
    traces: TraceSet,
    fleet: Sequence[FleetJob],
    start: int,
    *,
    budget_usd_per_hour: float,
    market: FleetMarket,
    policy: str = "best",
    visibility: Visibility = EVERYTHING,
    capacity: np.ndarray | None = None,
    managed: bool = True,
) -> FleetResult:
    """Run ``fleet`` from tick ``start`` of ``traces``, every job under ``policy``.

    ``capacity`` (int [pools, ticks]): the nodes of each pool the jobs share (default: a pool
    that is up has room for all). ``managed``: the fleet's controller applies the tiers and the
    budget, shares what any job's launches and instances showed, and hands a lower tier's spot
    node to a job that would otherwise start on-demand; else every job acts on its own."""
    sim = _FleetSim(
        traces,
        fleet,
        start,
        budget=budget_usd_per_hour,
        market=market,
        policy=policy,
        visibility=visibility,
        capacity=capacity,
        managed=managed,
    )
    spends = [spend for tick in range(sim.end) if (spend := sim.tick(tick)) is not None]
    return FleetResult(
        jobs=sim.results(),
        spend=tuple(spends),
        tick_hours=sim.gap_hours,
        budget_usd_per_hour=budget_usd_per_hour,
    )


class _FleetSim:
    """The jobs of one fleet in lockstep: each tick every job in flight, highest tier first,
    asks its policy and (when ``managed``) the fleet's controller, then steps its simulator."""

    def __init__(
        self,
        traces: TraceSet,
        fleet: Sequence[FleetJob],
        start: int,
        *,
        budget: float,
        market: FleetMarket,
        policy: str,
        visibility: Visibility,
        capacity: np.ndarray | None,
        managed: bool,
    ) -> None:
        self.fleet, self.start, self.budget, self.market = fleet, start, budget, market
        self.managed = managed
        self.gap_hours = traces.gap_seconds / 3600
        sight = Sight.blank(len(traces.pools)) if managed else None
        self.pools = SharedPools(capacity) if capacity is not None else None
        self.runs: list[JobRun] = []
        self.policies: list[Policy] = []
        self.contexts: list[JobContext] = []
        self.arrivals: list[int] = []
        for job in fleet:
            spec = market.spec(job)
            begin = start + round(job.arrives_hours / self.gap_hours)
            context = context_for(traces, spec, begin, None, visibility=visibility)
            chosen = load(policy)
            chosen.reset(context)
            self.runs.append(JobRun(traces, spec, begin, None, visibility, sight, self.pools))
            self.policies.append(chosen)
            self.contexts.append(context)
            self.arrivals.append(begin - start)
        self.order = sorted(range(len(fleet)), key=lambda i: TIERS.index(fleet[i].tier))
        self.refused = [False] * len(fleet)
        """Jobs idle since a launch request of theirs found no node."""
        self.end = max(a + r.job.deadline for a, r in zip(self.arrivals, self.runs, strict=True))

    def tick(self, tick: int) -> float | None:
        """Step every job in flight at ``tick``: what the fleet spent ($/h), None when no job
        was in flight."""
        if self.pools is not None:
            self.pools.settle(int(self.start + tick))
        spend, active = 0.0, False
        for i in self.order:
            if tick < self.arrivals[i] or self.runs[i].over:
                continue
            active = True
            spend += self._step(i, others=spend)
        return spend if active else None

    def _step(self, i: int, *, others: float) -> float:
        """Job ``i`` asks its policy, the controller answers, the job steps: what it spends."""
        run = self.runs[i]
        obs = run.observe()
        action = self.policies[i].act(obs)
        if obs.state != NONE:
            self.refused[i] = False
        action = self._node_from_lower_tier(i, obs, action)
        action, price = self._granted(i, obs, action, others=others)
        failed = run.failed_requests
        run.step(action)
        self.refused[i] = self.refused[i] or run.failed_requests > failed
        return price

    def _node_from_lower_tier(self, i: int, obs: Observation, action: Action) -> Action:
        """``action``, or a lower tier's spot node when job ``i`` is idle and starved."""
        starved = self.refused[i] or not action.named_pools()
        if (
            self.managed
            and self.pools is not None
            and obs.state == NONE
            and starved
            and not self.runs[i].blocked
        ):
            taken = _spot_from_lower_tier(i, self.fleet, self.runs, self.contexts, self.pools)
            return taken or action
        return action

    def _granted(
        self, i: int, obs: Observation, action: Action, *, others: float
    ) -> tuple[Action, float]:
        """What job ``i`` may do of ``action`` under the fleet's rule, and its price ($/h)."""
        want = action.instance
        price = self._price(obs, want)
        if not self.managed or want < ON_DEMAND:
            return action, price
        context = self.contexts[i]
        grant = rule.fleet_grant(
            self.fleet[i].tier,
            "spot" if want >= SPOT0 else "on-demand",
            price,
            others=others,
            budget=self.budget,
            deadline=rule.deadline_asks(slack_ticks(obs, context), context.job.changeover, 1),
        )
        if grant.granted:
            return action, price
        return self._instead(self.fleet[i], obs, want, others=others)

    def _instead(
        self, job: FleetJob, obs: Observation, want: int, *, others: float
    ) -> tuple[Action, float]:
        """A refused job waits, but a ``low`` one refused on-demand asks for the spot pools
        that fit in the budget, if any."""
        if job.tier == "low" and want == ON_DEMAND:
            up = rule.spot_within(
                {z: float(obs.prices[z]) for z in obs.askable()},
                others=others,
                budget=self.budget,
            )
            if up:
                return request(up), float(max(obs.prices[up]))
        return WAIT, 0.0

    def _price(self, obs: Observation, want: int) -> float:
        """What ``want`` costs per hour this tick (nothing for no instance)."""
        if want >= SPOT0:
            return float(obs.prices[want - SPOT0])
        if want == ON_DEMAND:
            return self.market.on_demand_price
        return 0.0

    def results(self) -> tuple[FleetJobResult, ...]:
        """How each job went."""
        return tuple(_result(job, run) for job, run in zip(self.fleet, self.runs, strict=True))


def _spot_from_lower_tier(
    i: int,
    fleet: Sequence[FleetJob],
    runs: Sequence[JobRun],
    contexts: Sequence[JobContext],
    pools: SharedPools,
) -> Action | None:
    """Job ``i`` is idle, and a launch request of its found no node or it asks for none: if a
    job of a lower tier with more slack (after a changeover) holds a spot node, that job lets it
    go (checkpointed; it waits for spot) and job ``i`` is sent to its pool. None when there is no
    such job, or when job ``i``'s safety net asks for on-demand."""
    if slack_exhausted(runs[i].obs, contexts[i]):
        return None
    mine = slack_ticks(runs[i].obs, contexts[i])
    rank = TIERS.index(fleet[i].tier)
    index = {id(run): k for k, run in enumerate(runs)}
    best: tuple[int, float, int] | None = None
    for pool in range(pools.capacity.shape[0]):
        for holder in pools.holders(pool):
            j = index[id(holder)]
            theirs = slack_ticks(runs[j].obs, contexts[j])
            lower = TIERS.index(fleet[j].tier) > rank
            roomier = theirs - runs[j].job.changeover > mine
            if lower and roomier and (best is None or theirs > best[1]):
                best = (j, theirs, pool)
    if best is None:
        return None
    j, _, pool = best
    runs[j].let_go()
    return request([pool])


def _result(job: FleetJob, run: JobRun) -> FleetJobResult:
    left = max(0.0, run.job.work - run.progress) * run.job.hours_per_tick
    return FleetJobResult(job=job, cost_usd=run.cost, done=run.finished, unfinished_hours=left)


def independent_costs(
    traces: TraceSet,
    fleet: Sequence[FleetJob],
    start: int,
    *,
    market: FleetMarket,
    policy: str = "best",
    visibility: Visibility = EVERYTHING,
    capacity: np.ndarray | None = None,
) -> list[FleetJobResult]:
    """Every job of ``fleet`` under ``policy`` on its own (no budget, no tiers), on the same
    market at the same time: with ``capacity`` the jobs still compete for nodes."""
    run = simulate_fleet(
        traces,
        fleet,
        start,
        budget_usd_per_hour=math.inf,
        market=market,
        policy=policy,
        visibility=visibility,
        capacity=capacity,
        managed=False,
    )
    return list(run.jobs)


def fleet_starts(
    traces: TraceSet, fleet: Sequence[FleetJob], from_hours: float, every_hours: float
) -> list[int]:
    """Start ticks of fleets every ``every_hours`` from ``from_hours`` whose last deadline
    falls inside the traces."""
    tick_hours = traces.gap_seconds / 3600
    last = traces.n_ticks * tick_hours - fleet_span_hours(fleet)
    starts, hours = [], from_hours
    while hours <= last + 1e-9:
        starts.append(round(hours / tick_hours))
        hours += every_hours
    return starts


@dataclass(frozen=True, slots=True, kw_only=True)
class TierCost:
    """One tier's jobs over every fleet of the bench: how many, their cost and miss rate."""

    jobs: int
    cost_usd: float
    deadline_miss_rate: float

    def to_dict(self) -> dict[str, float | int]:
        """The tier as the fleet bench's JSON has it."""
        return {
            "jobs": self.jobs,
            "cost_usd": self.cost_usd,
            "deadline_miss_rate": self.deadline_miss_rate,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SpendSpread:
    """What a fleet spent per hour over the ticks with a job in flight: p50, p90, p99, most."""

    p50: float
    p90: float
    p99: float
    highest: float

    def to_dict(self) -> dict[str, float]:
        """The spread as the fleet bench's JSON has it (``max`` for the most)."""
        return {"p50": self.p50, "p90": self.p90, "p99": self.p99, "max": self.highest}


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetBench:
    """The fleet bench's result: cost and misses per tier under tiers and the budget and with
    every job on its own, the totals, the share of hours within budget and the spend spread
    (``fleet`` and ``independent``; None where nothing was in flight), in simulated dollars."""

    tiers: dict[str, TierCost]
    independent_tiers: dict[str, TierCost]
    fleet_cost_usd: float
    independent_best_cost_usd: float
    share_of_hours_within_budget: float
    spend_usd_per_hour: dict[str, SpendSpread | None]
    fleets: int
    budget_usd_per_hour: float

    def to_dict(self) -> dict[str, Any]:
        """The fleet bench's JSON (``bench fleet --json``)."""
        return {
            "tiers": {tier: cost.to_dict() for tier, cost in self.tiers.items()},
            "independent_tiers": {
                tier: cost.to_dict() for tier, cost in self.independent_tiers.items()
            },
            "fleet_cost_usd": self.fleet_cost_usd,
            "independent_best_cost_usd": self.independent_best_cost_usd,
            "share_of_hours_within_budget": self.share_of_hours_within_budget,
            "spend_usd_per_hour": {
                kind: {} if spread is None else spread.to_dict()
                for kind, spread in self.spend_usd_per_hour.items()
            },
            "fleets": self.fleets,
            "budget_usd_per_hour": self.budget_usd_per_hour,
            "simulated": True,
        }


def run_fleet_bench(
    traces: TraceSet,
    fleet: Sequence[FleetJob],
    starts: Sequence[int],
    *,
    budget_usd_per_hour: float,
    market: FleetMarket,
    visibility: Visibility = EVERYTHING,
    capacity: np.ndarray | None = None,
    spend_out: dict[str, list[float]] | None = None,
) -> FleetBench:
    """The fleet under tiers and the budget from each of ``starts``, against every job under
    ``best`` on its own: cost and misses per tier, the share of hours within budget, and what
    each spent per hour (``spend_out`` gets every tick's, ``fleet`` and ``independent``)."""
    if not starts:
        raise ValueError("no fleet fits between the first start and the end of the traces")
    managed: list[FleetJobResult] = []
    alone: list[FleetJobResult] = []
    spend: dict[str, list[float]] = {"fleet": [], "independent": []}
    for start in starts:
        for kind in spend:
            run = simulate_fleet(
                traces,
                fleet,
                start,
                budget_usd_per_hour=budget_usd_per_hour if kind == "fleet" else math.inf,
                market=market,
                visibility=visibility,
                capacity=capacity,
                managed=kind == "fleet",
            )
            spend[kind] += run.spend
            (managed if kind == "fleet" else alone).extend(run.jobs)
    if spend_out is not None:
        spend_out.update(spend)
    return FleetBench(
        tiers=_per_tier(managed),
        independent_tiers=_per_tier(alone),
        fleet_cost_usd=_total(managed, market),
        independent_best_cost_usd=_total(alone, market),
        share_of_hours_within_budget=_share_within(spend["fleet"], budget_usd_per_hour),
        spend_usd_per_hour={kind: _spread(values) for kind, values in spend.items()},
        fleets=len(starts),
        budget_usd_per_hour=budget_usd_per_hour,
    )


def _share_within(spend: Sequence[float], budget: float) -> float:
    """Share of the ticks in flight (all of one length) that spent within ``budget``."""
    if not spend:
        return 1.0
    return round(1.0 - sum(_over(s, budget) for s in spend) / len(spend), 4)


def _spread(values: Sequence[float]) -> SpendSpread | None:
    if not values:
        return None
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    return SpendSpread(
        p50=round(float(p50), 2),
        p90=round(float(p90), 2),
        p99=round(float(p99), 2),
        highest=round(float(max(values)), 2),
    )


FLEET_COLOR, ALONE_COLOR = "tab:blue", "tab:orange"


def plot_fleet(summary: FleetBench, spend: dict[str, list[float]], target: Path) -> None:
    """Cost per tier, the fleet against every job on its own, and what each spent per hour
    against the budget."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (costs, hourly) = plt.subplots(1, 2, figsize=(11, 4.5))
    tiers = list(summary.tiers)
    x = np.arange(len(tiers))
    for offset, per_tier, label, color in (
        (-0.2, summary.tiers, "fleet (tiers, budget, shared sight)", FLEET_COLOR),
        (0.2, summary.independent_tiers, "every job under best on its own", ALONE_COLOR),
    ):
        values = [per_tier[t].cost_usd for t in tiers]
        costs.bar(x + offset, values, 0.4, label=label, color=color)
    costs.set_xticks(x, tiers)
    costs.set_ylabel("simulated cost (USD)")
    costs.set_title(
        f"{summary.fleets} fleets: {summary.fleet_cost_usd:,.0f} USD against "
        f"{summary.independent_best_cost_usd:,.0f} USD"
    )
    highest = max(
        per_tier[t].cost_usd
        for per_tier in (summary.tiers, summary.independent_tiers)
        for t in tiers
    )
    costs.set_ylim(0, highest * 1.3)  # room for the legend above the bars
    costs.legend(fontsize=8, loc="upper right")
    budget = summary.budget_usd_per_hour
    top = max([budget, *spend["fleet"], *spend["independent"]]) * 1.05
    bins = np.linspace(0.0, top, 40)
    hourly.hist(spend["fleet"], bins=bins, color=FLEET_COLOR, alpha=0.6, label="fleet")
    hourly.hist(
        spend["independent"],
        bins=bins,
        histtype="step",
        linewidth=1.6,
        color=ALONE_COLOR,
        label="every job on its own",
    )
    hourly.axvline(budget, color="tab:red", linestyle="--", label=f"budget {budget:g} $/h")
    hourly.set_xlabel("spend (USD per hour), each tick with a job in flight")
    hourly.set_ylabel("ticks")
    within = summary.share_of_hours_within_budget
    hourly.set_title(f"fleet within budget {within:.1%} of hours")
    hourly.legend(fontsize=8)
    fig.suptitle("spotwise bench fleet (simulated dollars on replayed traces)")
    fig.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=120)
    plt.close(fig)


def _total(results: Sequence[FleetJobResult], market: FleetMarket) -> float:
    """What the jobs cost, a missed job's unfinished work charged at on-demand (its finish)."""
    unfinished = sum(r.unfinished_hours for r in results) * market.on_demand_price
    return round(sum(r.cost_usd for r in results) + unfinished, 2)


def _per_tier(results: Sequence[FleetJobResult]) -> dict[str, TierCost]:
    out: dict[str, TierCost] = {}
    for tier in TIERS:
        mine = [r for r in results if r.job.tier == tier]
        if mine:
            out[tier] = TierCost(
                jobs=len(mine),
                cost_usd=round(sum(r.cost_usd for r in mine), 2),
                deadline_miss_rate=round(sum(not r.done for r in mine) / len(mine), 4),
            )
    return out
