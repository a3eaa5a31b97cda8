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
decides, highest tier first, against what the fleet spends now (:class:`FleetBudget`), as
:mod:`spotwise.policy.fleet` simulates it: ``high`` gets what it asks; ``normal`` gets spot, and
on-demand while the budget has room or once its slack is down to two changeovers; ``low`` gets
only spot, only while the budget has room, and otherwise waits. An elastic job (``nodes``) keeps
its rendezvous host and the floor its deadline asks for on on-demand whatever the budget (so a
``low`` one is refused: it would hold on-demand), and a fixed floor above that only while the
budget has room (:class:`NodeGate`). A fleet file is a stranger's: a command is a list of
arguments (never given to a shell) and nothing in it selects code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from spotwise.executor.elastic import NodePlan
from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.base import Launcher
from spotwise.executor.ledger import new_job_id
from spotwise.executor.spec_file import read_spec_file
from spotwise.executor.supervised import SupervisedJob, supervise
from spotwise.executor.supervisor import ClientFor, SupervisorConfig
from spotwise.policy.client import PolicyClient
from spotwise.policy.errors import PolicyError
from spotwise.policy.schemas import Decision, DecisionRequest, PoolForecast, PoolRank
from spotwise.pricing.errors import PricingError
from spotwise.progress import Progress

Tier = Literal["high", "normal", "low"]
TIERS: tuple[Tier, ...] = ("high", "normal", "low")
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
        raise ExecutorError(f"{where}.priority must be one of {', '.join(TIERS)}, got {tier!r}")
    command = item.get("command")
    if not (
        isinstance(command, list) and command and all(isinstance(a, str) and a for a in command)
    ):
        raise ExecutorError(
            f"{where}.command must be a list of arguments, e.g. [python, train.py] (it is "
            "never given to a shell)"
        )
    compute = _positive(item.get("compute_hours"), f"{where}.compute_hours")
    deadline = _positive(item.get("deadline_hours"), f"{where}.deadline_hours")
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
        raise ExecutorError(f"{where} must be 1-64 of a-z, 0-9, - and _, got {value!r}")
    return value


def _positive(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ExecutorError(f"{where} must be a positive number, got {value!r}")
    return float(value)


class FleetBudget:
    """What each job of the fleet spends now ($/h), against the budget; thread-safe."""

    def __init__(self, usd_per_hour: float) -> None:
        self.usd_per_hour = usd_per_hour
        self._spend: dict[str, float] = {}
        self._lock = threading.Lock()

    def spending(self) -> float:
        with self._lock:
            return sum(self._spend.values())

    def claim(self, job: str, usd_per_hour: float, *, force: bool = False) -> bool:
        """Let ``job`` spend ``usd_per_hour`` (instead of what it spent) if the budget has room,
        or ``force``; False (its spend as it was) when it has not."""
        with self._lock:
            others = sum(v for k, v in self._spend.items() if k != job)
            granted = force or others + usd_per_hour <= self.usd_per_hour + 1e-9
            if granted:
                self._spend[job] = usd_per_hour
            return granted

    def record(self, job: str, usd_per_hour: float) -> None:
        """What ``job`` spends now, budget or not."""
        self.claim(job, usd_per_hour, force=True)

    def release(self, job: str) -> None:
        with self._lock:
            self._spend.pop(job, None)


class TieredClient:
    """A job's policy client with its tier's rules over the fleet's budget."""

    def __init__(self, inner: PolicyClient, *, job: str, tier: Tier, budget: FleetBudget) -> None:
        self.inner, self.job, self.tier, self.budget = inner, job, tier, budget

    def decide(self, request: DecisionRequest) -> Decision:
        decision = self.inner.decide(request)
        terms = request.job
        if request.state.instance == "on-demand" and decision.action != "spot":
            return decision  # it stays on the on-demand instance it has: its claim stands
        if decision.action == "wait":
            self.budget.record(self.job, 0.0)
            return decision
        price = terms.on_demand_price if decision.action == "on-demand" else terms.spot_price
        state = request.state
        slack = (terms.deadline_hours - state.elapsed_hours) - (
            terms.compute_hours - state.progress_hours
        )
        asks_now = slack <= 2 * terms.changeover_hours
        force = self.tier == "high" or (self.tier == "normal" and asks_now)
        if self.tier == "low" and decision.action == "on-demand":
            granted = False
        else:
            granted = self.budget.claim(self.job, price, force=force)
        if not granted and self.tier == "normal" and decision.action == "spot":
            granted = self.budget.claim(self.job, price, force=True)  # spot is never refused
        if granted:
            return decision
        self.budget.record(self.job, 0.0)
        return decision.model_copy(
            update={
                "action": "wait",
                "pool": None,
                "market": None,
                "request_pools": [],
                "reason": f"{self.tier} priority: the fleet's budget of "
                f"{self.budget.usd_per_hour:g} $/h has no room now ({decision.reason})",
            }
        )

    def rank_pools(self, job: Any) -> list[PoolRank]:
        return self.inner.rank_pools(job)

    def forecast(self, pool: str) -> PoolForecast:
        return self.inner.forecast(pool)


class NodeGate:
    """An elastic job's tier rules over the fleet's budget: the rendezvous host and the floor
    its deadline asks for always; for ``high`` everything; for ``normal`` spot always and a
    floor above the deadline's only while the budget has room."""

    def __init__(self, budget: FleetBudget, *, job: str, tier: Tier) -> None:
        self.budget, self.job, self.tier = budget, job, tier

    def claim(self, usd_per_hour: float, *, market: str, needed: bool) -> bool:
        force = needed or self.tier == "high" or (self.tier == "normal" and market == "spot")
        return self.budget.claim(self.job, usd_per_hour, force=force)

    def record(self, usd_per_hour: float) -> None:
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
    job's nodes as ``plan_for`` places them, under its tier's gate); wait for all."""
    budget = FleetBudget(spec.budget_usd_per_hour)
    outcomes: dict[str, FleetJobOutcome] = {}

    def one(job: FleetJobSpec) -> None:
        def tiered(history: Any, gap: int, pools: tuple[str, ...]) -> PolicyClient:
            inner = client_for(history, gap, pools)
            return TieredClient(inner, job=job.name, tier=job.tier, budget=budget)

        job_id = new_job_id()  # its ledger's and its launcher's (its cloud tags, its prefix)
        try:
            done = supervise(
                list(job.command),
                store_path=store_path,
                launcher=launcher_for(job_id),
                job_id=job_id,
                config=config_for(job),
                client_for=tiered,
                name=job.name,
                progress=lambda m: progress(f"{job.name} ({job.tier}): {m}"),
                fleet=spec.name,
                tier=job.tier,
                nodes=plan_for(job),
                gate=NodeGate(budget, job=job.name, tier=job.tier),
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
