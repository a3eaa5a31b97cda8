"""Many supervised jobs under one budget, each with a priority tier (``spotwise fleet run``).

A fleet file (YAML or TOML) names the fleet, its budget in $/h and its jobs:

    name: nightly
    budget_usd_per_hour: 6.0
    jobs:
      - name: eval
        priority: high          # high | normal | low
        compute_hours: 0.5
        deadline_hours: 1.0
        command: [python, -m, spotwise.executor.examples.train_mlp, --ckpt, ck/eval]
      - name: pretrain
        priority: normal
        nodes: "2:4"            # an elastic job on 2 to 4 nodes (MIN:MAX, or N)
        on_demand_floor: auto   # K, or auto (the default): the deadline's floor
        compute_hours: 2.0
        deadline_hours: 4.0
        command: [python, -m, spotwise.executor.examples.train_mlp, --ckpt, ck/pretrain]

Every job runs under its own supervisor, all at once, on the same market. The supervisors ask
the policy where to run through one :class:`TieredClient` each, which grants what the policy
decides against what the fleet spends now (:class:`FleetBudget`) by the rule the lab measures,
:func:`spotwise.policy.fleet_rule.fleet_grant`: ``high`` gets what it asks; ``normal`` gets spot or
on-demand while the budget has room, and either once its slack is down to two changeovers by
its next ask; ``low`` gets only spot, only while the budget has room, and otherwise waits (where
its policy asks for on-demand, it asks for spot instead). So the sum of what the running jobs
cost per hour stays within the budget, but for ``high`` jobs and deadlines, and the fleet says
when it goes over. A job's claim stands while its instance runs; room that frees goes to a
waiting job of a higher tier first. A job that waits says why, and a ``low`` job still waiting
once its deadline can no longer be met ends unfinished. An elastic job (``nodes``) keeps its
rendezvous host and the floor its deadline asks for on on-demand whatever the budget (so a
``low`` one is refused: it would hold on-demand), and spot nodes and a fixed floor above that
only while the budget has room (:class:`NodeGate`). A fleet file is a stranger's: a command is a
list of arguments (never given to a shell), nothing in it selects code, and every number in it
is finite.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spotwise.core.echo import echo
from spotwise.core.progress import Progress, silent
from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.base import Launcher
from spotwise.executor.ledger.ledger import new_job_id
from spotwise.executor.ledger.prices import PriceBook
from spotwise.executor.spec_file import read_spec_file
from spotwise.executor.supervise.elastic import NodePlan
from spotwise.executor.supervise.supervised import SupervisedJob, supervise
from spotwise.executor.supervise.supervisor import ClientFor, SupervisorConfig
from spotwise.policy import fleet_rule as rule  # the lab's rule, called where the lab calls it
from spotwise.policy.errors import PolicyError
from spotwise.policy.fleet_rule import TIERS, Grant, Market, Tier
from spotwise.policy.job import MAX_JOB_HOURS
from spotwise.policy.service.client import PolicyClient
from spotwise.policy.service.schemas import (
    Decision,
    DecisionRequest,
    JobTerms,
    PoolForecast,
    PoolRank,
)
from spotwise.pricing.errors import PricingError

__all__ = ["TIERS", "FleetBudget", "NodeGate", "Tier", "TieredClient"]
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetJobSpec:
    """One job of a fleet file."""

    name: str
    tier: Tier
    compute_hours: float
    deadline_hours: float
    command: tuple[str, ...]
    nodes: NodePlan | None = None
    """An elastic job's nodes and on-demand floor (None: one node)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetSpec:
    """A fleet file: its name, budget and jobs."""

    name: str
    budget_usd_per_hour: float
    jobs: tuple[FleetJobSpec, ...]


def load_fleet_spec(path: Path) -> FleetSpec:
    """Read and check a fleet file.

    Raises:
        ExecutorError: naming the file, the field and what is wrong with it.
    """
    raw = read_spec_file(path, "fleet file")  # TOML for .toml, else YAML; aliases refused
    if not isinstance(raw, Mapping):
        raise ExecutorError(f"{path}: a fleet file is a mapping with name, budget and jobs")
    where = str(path)
    unknown = set(raw) - {"name", "budget_usd_per_hour", "jobs"}
    if unknown:
        raise ExecutorError(f"{where}: unknown fields {sorted(unknown)}")
    jobs = raw.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise ExecutorError(f"{where}: jobs must be a non-empty list")
    specs = tuple(_job(item, f"{where}: jobs[{i}]") for i, item in enumerate(jobs))
    names = [j.name for j in specs]
    if len(set(names)) != len(names):
        raise ExecutorError(f"{where}: job names must differ, got {names}")
    return FleetSpec(
        name=_name(raw.get("name"), f"{where}: name"),
        budget_usd_per_hour=_positive(
            raw.get("budget_usd_per_hour"), f"{where}: budget_usd_per_hour"
        ),
        jobs=specs,
    )


def _job(item: Any, where: str) -> FleetJobSpec:
    if not isinstance(item, Mapping):
        raise ExecutorError(f"{where}: a job is a mapping")
    known = {"name", "priority", "compute_hours", "deadline_hours", "command"}
    unknown = set(item) - known - {"nodes", "on_demand_floor"}
    if unknown:
        raise ExecutorError(f"{where}: unknown fields {sorted(unknown)}")
    tier = item.get("priority", "normal")
    if tier not in TIERS:
        raise ExecutorError(f"{where}.priority must be one of {', '.join(TIERS)}, got {echo(tier)}")
    command = item.get("command")
    if not (
        isinstance(command, list) and command and all(isinstance(a, str) and a for a in command)
    ):
        raise ExecutorError(
            f"{where}.command must be a list of arguments, e.g. [python, train.py] (it is "
            "never given to a shell)"
        )
    compute = _hours(item.get("compute_hours"), f"{where}.compute_hours")
    deadline = _hours(item.get("deadline_hours"), f"{where}.deadline_hours")
    if deadline <= compute:
        raise ExecutorError(f"{where}: deadline_hours {deadline} must exceed compute_hours")
    return FleetJobSpec(
        name=_name(item.get("name"), f"{where}.name"),
        tier=tier,
        compute_hours=compute,
        deadline_hours=deadline,
        command=tuple(command),
        nodes=_nodes(item, tier, where),
    )


def _nodes(item: Mapping[str, Any], tier: Tier, where: str) -> NodePlan | None:
    nodes, floor = item.get("nodes"), item.get("on_demand_floor", "auto")
    if nodes is None:
        if "on_demand_floor" in item:
            raise ExecutorError(f"{where}.on_demand_floor needs nodes (an elastic job's)")
        return None
    if tier == "low":
        raise ExecutorError(
            f"{where}: a low-priority job runs only on spot, but an elastic job (nodes) keeps "
            "its rendezvous host on on-demand; make it normal, or give it one node"
        )
    try:
        return NodePlan.parse(str(nodes), str(floor))
    except ValueError as exc:
        raise ExecutorError(f"{where}: {exc}") from exc


def _name(value: Any, where: str) -> str:
    if not (isinstance(value, str) and 0 < len(value) <= 64 and set(value) <= _NAME_CHARS):
        raise ExecutorError(f"{where} must be 1-64 of a-z, 0-9, - and _, got {echo(value)}")
    return value


def _positive(value: Any, where: str) -> float:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    # compared, not converted: an integer past float's range is refused, not an OverflowError
    if not number or not 0 < value <= sys.float_info.max:
        raise ExecutorError(f"{where} must be a finite positive number, got {echo(value)}")
    return float(value)


def _hours(value: Any, where: str) -> float:
    """A job's hours: finite, positive and at most :data:`MAX_JOB_HOURS`."""
    hours = _positive(value, where)
    if hours > MAX_JOB_HOURS:
        raise ExecutorError(
            f"{where} must be at most {MAX_JOB_HOURS:,} hours (about 11 years), got {echo(value)}"
        )
    return hours


class FleetBudget:
    """What each job of the fleet spends now ($/h) against the budget, and which jobs wait for
    room in it; thread-safe. What it grants is :func:`spotwise.policy.fleet_rule.fleet_grant`'s: the
    spend stays within the budget but for ``high`` jobs and deadlines, and a job of a higher
    tier that waits for room (or has not asked yet) has it before a lower tier's."""

    def __init__(self, usd_per_hour: float) -> None:
        self.usd_per_hour = usd_per_hour
        self._spend: dict[str, float] = {}
        self._waiting: dict[str, tuple[Tier, float]] = {}
        """Jobs that want room: their tier and the $/h they asked for."""
        self._lock = threading.Lock()

    def spending(self) -> float:
        """What the fleet spends now ($/h)."""
        with self._lock:
            return sum(self._spend.values())

    def users(self, but: str) -> dict[str, float]:
        """The jobs that spend now, but ``but``, each with its $/h."""
        with self._lock:
            return {k: v for k, v in sorted(self._spend.items()) if k != but and v > 0}

    def expect(self, job: str, tier: Tier, usd_per_hour: float) -> None:
        """``job`` will ask for about ``usd_per_hour`` (a fleet's job before its first ask):
        the lower tiers leave it room."""
        with self._lock:
            self._waiting[job] = (tier, usd_per_hour)

    def others(self, job: str, tier: Tier) -> float:
        """What the rest of the fleet spends now, with the room kept for the higher tiers'
        waiting jobs ($/h): what ``job`` must fit beside."""
        with self._lock:
            return self._others(job) + self._kept(job, tier)

    def kept_for(self, job: str, tier: Tier) -> list[str]:
        """The higher tiers' waiting jobs that the budget keeps room for before ``job``."""
        with self._lock:
            return self._kept_jobs(job, tier)[1]

    def ask(
        self, job: str, tier: Tier, market: Market, usd_per_hour: float, *, deadline: bool
    ) -> Grant:
        """Let ``job`` spend ``usd_per_hour`` on ``market`` (instead of what it spends) if the
        fleet's rule grants it (``deadline``: its deadline asks for it); refused, its spend is
        as it was. ``over_budget``: granted, and the fleet now spends more than its budget."""
        with self._lock:
            others = self._others(job)
            held = self._spend.get(job, 0.0)
            grant = rule.fleet_grant(
                tier,
                market,
                usd_per_hour,
                others=others + self._kept(job, tier),
                budget=self.usd_per_hour,
                deadline=deadline,
                holding=held,
            )
            if not grant.granted:
                return grant
            self._spend[job] = usd_per_hour
            self._waiting.pop(job, None)
            over = others + usd_per_hour > self.usd_per_hour + 1e-9 and usd_per_hour > held
            return Grant(True, over_budget=over)

    def wait(self, job: str, tier: Tier, usd_per_hour: float) -> None:
        """``job`` runs nothing and waits for room for ``usd_per_hour``."""
        with self._lock:
            self._spend[job] = 0.0
            self._waiting[job] = (tier, usd_per_hour)

    def claim(self, job: str, usd_per_hour: float, *, force: bool = False) -> bool:
        """Let ``job`` spend ``usd_per_hour`` (instead of what it spent) if the budget has room,
        or ``force``; False (its spend as it was) when it has not."""
        with self._lock:
            granted = force or self._others(job) + usd_per_hour <= self.usd_per_hour + 1e-9
            if granted:
                self._spend[job] = usd_per_hour
                self._waiting.pop(job, None)
            return granted

    def record(self, job: str, usd_per_hour: float) -> None:
        """What ``job`` spends now, budget or not (it waits for nothing)."""
        self.claim(job, usd_per_hour, force=True)

    def release(self, job: str) -> None:
        """``job`` has ended: it spends nothing and waits for nothing."""
        with self._lock:
            self._spend.pop(job, None)
            self._waiting.pop(job, None)

    def _others(self, job: str) -> float:
        return sum(v for k, v in self._spend.items() if k != job)

    def _kept(self, job: str, tier: Tier) -> float:
        return self._kept_jobs(job, tier)[0]

    def _kept_jobs(self, job: str, tier: Tier) -> tuple[float, list[str]]:
        """The room ($/h) kept for the waiting jobs of a tier above ``tier`` whose asks fit,
        highest tier first, and their names."""
        others, kept, names = self._others(job), 0.0, []
        rank = TIERS.index(tier)
        for name, (theirs, price) in sorted(
            self._waiting.items(), key=lambda item: (TIERS.index(item[1][0]), item[0])
        ):
            higher = name != job and TIERS.index(theirs) < rank
            if higher and others + kept + price <= self.usd_per_hour + 1e-9:
                kept += price
                names.append(name)
        return kept, names


class TieredClient:
    """A job's policy client with its tier's rules over the fleet's budget
    (:func:`spotwise.policy.fleet_rule.fleet_grant`, as the lab simulates them).

    A job that waits says why in a line (``say``), once, and again when the reason changes. A
    ``low`` job whose policy asks for on-demand asks for spot instead, in the pools that have
    it and fit the budget, as in the lab; with none it waits for spot, and once it waits while
    its deadline can no longer be met, it ends unfinished (:class:`ExecutorError`): a low job
    never uses on-demand, so waiting longer would not finish it in time, and ``fleet run``
    returns."""

    def __init__(
        self,
        inner: PolicyClient,
        *,
        job: str,
        tier: Tier,
        budget: FleetBudget,
        prices: PriceBook | None = None,
        say: Progress = silent,
    ) -> None:
        self.inner, self.job, self.tier, self.budget = inner, job, tier, budget
        self.prices, self.say = prices, say
        self._said: tuple[object, ...] | None = None
        """What the job last said it waits for (or that it went over the budget)."""
        self._waited_at: float | None = None
        """The job's hours at its last ask, when that ask waited."""

    def decide(self, request: DecisionRequest) -> Decision:
        """The policy's decision for ``request``, as the job's tier and the budget grant it."""
        decision = self.inner.decide(request)
        if request.state.instance == "on-demand" and decision.action != "spot":
            return decision  # it stays on the on-demand instance it has: its claim stands
        if decision.action not in ("spot", "on-demand"):  # nothing to run (yet)
            return self._nothing_to_run(request, decision)
        if self.tier == "low" and decision.action == "on-demand":
            instead = self._spot_instead(request, decision)
            if instead is None:
                return self._low_waits(request, decision)
            decision = instead
        price = self._price(decision, request.job)
        slack = _slack(request)
        market: Market = "spot" if decision.action == "spot" else "on-demand"
        deadline = self._deadline_asks(request, slack)
        grant = self.budget.ask(self.job, self.tier, market, price, deadline=deadline)
        if grant.granted:
            return self._granted(decision, market, slack, over_budget=grant.over_budget)
        return self._refused(request, decision, market, price)

    def _nothing_to_run(self, request: DecisionRequest, decision: Decision) -> Decision:
        """A decision that runs nothing: the job claims no budget, and a wait is told."""
        self.budget.record(self.job, 0.0)
        if decision.action != "wait":
            return decision
        return self._waits(request, decision, ("policy",), f"waits: {decision.reason}")

    def _low_waits(self, request: DecisionRequest, decision: Decision) -> Decision:
        """A low job its policy would put on on-demand, with no spot in the budget: it waits."""
        self.budget.record(self.job, 0.0)
        return self._waits(
            request,
            _waiting(decision, "low priority: waits for spot"),
            ("spot",),
            "waits for spot: its policy would put it on on-demand, which a low job "
            "never uses, and no pool has spot within the budget now",
        )

    def _deadline_asks(self, request: DecisionRequest, slack: float) -> bool:
        """Whether the job's deadline makes its ask one the budget must grant."""
        state, terms = request.state, request.job
        step = state.elapsed_hours - self._waited_at if self._waited_at is not None else 0.0
        return rule.deadline_asks(slack, terms.changeover_hours, max(step, 0.0))

    def _granted(
        self, decision: Decision, market: Market, slack: float, *, over_budget: bool
    ) -> Decision:
        """The decision as asked; going over the budget is told once."""
        self._waited_at = None
        if over_budget:
            why = "a high job gets what it asks" if self.tier == "high" else "its deadline"
            self._tell(
                ("over",),
                f"goes over the budget for {market}: the fleet spends "
                f"{self.budget.spending():.2f} $/h of {self.budget.usd_per_hour:.2f} $/h "
                f"({why}; {slack:.2f} h of slack)",
            )
        else:
            self._said = None  # a later wait is told again
        return decision

    def _refused(
        self, request: DecisionRequest, decision: Decision, market: Market, price: float
    ) -> Decision:
        """A refused ask: a job on on-demand stays there, any other waits for room."""
        if request.state.instance == "on-demand":  # refused a move: it stays where it is
            return decision.model_copy(update={"action": "on-demand", "market": "on-demand"})
        self.budget.wait(self.job, self.tier, price)
        key, why = self._no_room(market, price)
        return self._waits(
            request,
            _waiting(
                decision,
                f"{self.tier} priority: the fleet's budget of {self.budget.usd_per_hour:g} $/h "
                f"has no room now ({decision.reason})",
            ),
            key,
            why,
        )

    def _spot_instead(self, request: DecisionRequest, decision: Decision) -> Decision | None:
        """A low job's ask for spot where its policy asks for on-demand: the pools that have
        spot now and fit the budget, cheapest first (None: none)."""
        up = {
            p: self._spot_price(p, request.job) for p, now in request.pools.items() if now.available
        }
        cheapest = dict(sorted(up.items(), key=lambda item: (item[1], item[0])))
        pools = rule.spot_within(
            cheapest,
            others=self.budget.others(self.job, self.tier),
            budget=self.budget.usd_per_hour,
        )
        if not pools:
            return None
        self._tell(
            ("instead",),
            f"asks for spot in {', '.join(pools)}: its policy would put it on on-demand, "
            "which a low job never uses",
        )
        return decision.model_copy(
            update={
                "action": "spot",
                "pool": pools[0],
                "market": "spot",
                "request_pools": pools,
                "reason": f"low priority: spot instead of on-demand ({decision.reason})",
            }
        )

    def _no_room(self, market: Market, price: float) -> tuple[tuple[object, ...], str]:
        """Why the budget has no room for ``price`` on ``market``: a key and a line."""
        users = self.budget.users(but=self.job)
        budget = self.budget.usd_per_hour
        if sum(users.values()) + price <= budget + 1e-9:
            first = self.budget.kept_for(self.job, self.tier)
            return ("kept", *first), (
                f"waits: the budget's room goes first to {', '.join(first)} (a higher tier)"
            )
        then = "; it goes over the budget once its deadline asks" if self.tier == "normal" else ""
        if not users:
            return ("price", market), (
                f"waits: {market} costs {price:.2f} $/h, over the budget {budget:.2f} $/h{then}"
            )
        return ("budget", market, *users), (
            f"waits: the budget {budget:.2f} $/h is used by {', '.join(users)} "
            f"({sum(users.values()):.2f} $/h) and {market} costs {price:.2f} $/h{then}"
        )

    def _waits(
        self, request: DecisionRequest, decision: Decision, key: tuple[object, ...], why: str
    ) -> Decision:
        """The job waits (``decision``), having said ``why`` when that changed; a low job that
        can no longer meet its deadline ends here."""
        state, terms = request.state, request.job
        self._waited_at = state.elapsed_hours
        self._tell(key, why)
        left = terms.compute_hours - state.progress_hours
        to_go = terms.deadline_hours - state.elapsed_hours
        if self.tier == "low" and to_go < left:
            self.budget.release(self.job)
            waited = "spot did not come back" if key == ("spot",) else "it found no room"
            raise ExecutorError(
                f"ended unfinished (low priority): {waited} while its deadline could still be "
                f"met ({left:.3f} h of work left, {max(to_go, 0.0):.3f} h to its deadline), and "
                "a low job never uses on-demand; give it a later deadline, or make it normal"
            )
        return decision

    def _tell(self, key: tuple[object, ...], line: str) -> None:
        if key != self._said:
            self._said = key
            self.say(f"fleet: job {self.job} ({self.tier}) {line}")

    def _price(self, decision: Decision, terms: JobTerms) -> float:
        """What ``decision`` costs ($/h): on spot, the dearest pool its request names."""
        if decision.action != "spot":
            if self.prices is None:
                return terms.on_demand_price
            return self.prices.on_demand_quote().usd_per_hour
        pools = decision.request_pools or [str(decision.pool)]
        return max(self._spot_price(p, terms) for p in pools)

    def _spot_price(self, pool: str, terms: JobTerms) -> float:
        if self.prices is None or pool not in self.prices.spot:
            return terms.spot_price
        return self.prices.spot_quote(pool).usd_per_hour

    def rank_pools(self, job: Any) -> list[PoolRank]:
        """The inner client's ranking."""
        return self.inner.rank_pools(job)

    def forecast(self, pool: str) -> PoolForecast:
        """The inner client's forecast."""
        return self.inner.forecast(pool)


def _slack(request: DecisionRequest) -> float:
    """Hours the job may still lose: to its deadline, less the compute it still needs."""
    state, terms = request.state, request.job
    return (terms.deadline_hours - state.elapsed_hours) - (
        terms.compute_hours - state.progress_hours
    )


def _waiting(decision: Decision, reason: str) -> Decision:
    """``decision`` made a wait, for ``reason``."""
    return decision.model_copy(
        update={
            "action": "wait",
            "pool": None,
            "market": None,
            "request_pools": [],
            "reason": reason,
        }
    )


class NodeGate:
    """An elastic job's tier rules over the fleet's budget
    (:func:`spotwise.policy.fleet_rule.fleet_grant`): the rendezvous host and the floor its deadline
    asks for always; for ``high`` everything; for ``normal`` spot and a floor above the
    deadline's only while the budget has room."""

    def __init__(
        self, budget: FleetBudget, *, job: str, tier: Tier, say: Progress = silent
    ) -> None:
        self.budget, self.job, self.tier, self.say = budget, job, tier, say
        self._over = False

    def claim(self, usd_per_hour: float, *, market: str, needed: bool) -> bool:
        """May the job spend ``usd_per_hour`` in all, one more node in ``market`` among them
        (``needed``: its host, or a floor node its deadline asks for)?"""
        kind: Market = "spot" if market == "spot" else "on-demand"
        grant = self.budget.ask(self.job, self.tier, kind, usd_per_hour, deadline=needed)
        if grant.over_budget and not self._over:
            why = (
                "a high job gets what it asks"
                if self.tier == "high"
                else ("its rendezvous host and the floor its deadline asks for")
            )
            self.say(
                f"fleet: job {self.job} ({self.tier}) goes over the budget for {kind}: the "
                f"fleet spends {self.budget.spending():.2f} $/h of "
                f"{self.budget.usd_per_hour:.2f} $/h ({why})"
            )
        if grant.granted:
            self._over = grant.over_budget
        return grant.granted

    def record(self, usd_per_hour: float) -> None:
        """What the job's nodes cost now."""
        self.budget.record(self.job, usd_per_hour)


@dataclass(frozen=True, slots=True)
class FleetJobOutcome:
    """How one job of the fleet ended: its supervised run, or the error that stopped it."""

    spec: FleetJobSpec
    job: SupervisedJob | None
    error: str | None


def run_fleet(
    spec: FleetSpec,
    *,
    store_path: Path,
    launcher_for: Callable[[str], Launcher],
    config_for: Callable[[FleetJobSpec], SupervisorConfig],
    client_for: ClientFor,
    progress: Progress,
    plan_for: Callable[[FleetJobSpec], NodePlan | None] = lambda job: job.nodes,
) -> list[FleetJobOutcome]:
    """Run every job of ``spec`` at once, each under its supervisor (a thread of this process)
    on a launcher of its own over the same market, with its tier's client (and an elastic
    job's nodes as ``plan_for`` places them, under its tier's gate); wait for all. The fleet's
    lines (a job waits, and why; the fleet goes over its budget) go to ``progress``."""
    budget = FleetBudget(spec.budget_usd_per_hour)
    outcomes: dict[str, FleetJobOutcome] = {}
    configs = {job.name: config_for(job) for job in spec.jobs}
    for job in spec.jobs:  # the higher tiers have the room first, from their first ask
        budget.expect(job.name, job.tier, configs[job.name].job.spot_price)

    def one(job: FleetJobSpec) -> None:
        kept: list[TieredClient] = []  # one per job: what it said and when it last waited

        def tiered(history: Any, gap: int, pools: tuple[str, ...]) -> PolicyClient:
            inner = client_for(history, gap, pools)  # again as the history grows
            if kept:
                kept[0].inner = inner
            else:
                prices = configs[job.name].prices
                kept.append(
                    TieredClient(
                        inner,
                        job=job.name,
                        tier=job.tier,
                        budget=budget,
                        prices=prices,
                        say=progress,
                    )
                )
            return kept[0]

        job_id = new_job_id()  # its ledger's and its launcher's (its cloud tags, its prefix)
        try:
            done = supervise(
                list(job.command),
                store_path=store_path,
                launcher=launcher_for(job_id),
                job_id=job_id,
                config=configs[job.name],
                client_for=tiered,
                name=job.name,
                progress=lambda m: progress(f"{job.name} ({job.tier}): {m}"),
                fleet=spec.name,
                tier=job.tier,
                nodes=plan_for(job),
                gate=NodeGate(budget, job=job.name, tier=job.tier, say=progress),
            )
            outcomes[job.name] = FleetJobOutcome(job, done, None)
        except (ExecutorError, PolicyError, PricingError) as exc:
            outcomes[job.name] = FleetJobOutcome(job, None, str(exc))
        finally:
            budget.release(job.name)

    threads = [threading.Thread(target=one, args=(job,), name=job.name) for job in spec.jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [outcomes[job.name] for job in spec.jobs]
