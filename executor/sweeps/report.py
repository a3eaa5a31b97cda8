"""A sweep's account: each trial's params, state and value from the study, and its cost from
the ledger (every attempt's job: hours per market, preemptions, steps lost, savings against the
same hours on on-demand)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

from spotwise.executor.errors import ExecutorError
from spotwise.executor.sweeps.sweep import ONE_TRIAL_ATTEMPTS, original_number, storage_url
from spotwise.pricing.errors import PricingError

if TYPE_CHECKING:
    from spotwise.executor.ledger.ledger import JobLine, JobReport
    from spotwise.pricing.operational import OperationalStore


@dataclass(frozen=True, slots=True, kw_only=True)
class TrialCost:
    """One trial (all its attempts): how it ended and what it cost."""

    trial: int
    params: dict[str, Any]
    state: str
    value: float | None
    attempts: int
    jobs: list[str]
    cost_usd: float
    on_demand_cost_usd: float
    hours: dict[str, float]
    """Instance hours per market (spot, on-demand)."""
    preemptions: int
    steps_lost: int
    simulated: bool
    why: str | None = None
    """Why its last attempt failed (None: it did not)."""
    on_demand_why: tuple[str, ...] = ()
    """Why its attempts ran on demand, as the ledger kept it (the policy's reason)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepReport:
    """The sweep: its trials and their totals."""

    sweep: str
    direction: str
    queue: bool
    trials: list[TrialCost]
    completed: int
    pruned: int
    failed: int
    cost_usd: float
    on_demand_cost_usd: float
    savings_pct: float
    simulated: bool
    best: dict[str, Any] | None
    prices: list[str] = field(default_factory=list)
    """Every distinct price the trials used, with its source and time."""

    def to_dict(self) -> dict[str, Any]:
        """The report as plain dicts and lists (for JSON)."""
        return asdict(self)


def sweep_report(storage: str, name: str, store_path: Path) -> SweepReport:
    """The sweep ``name`` of ``storage`` with its ledger's costs.

    Raises:
        ExecutorError: no such sweep in that storage (naming the ones there).
    """
    from spotwise.pricing.operational import open_operational

    study = _load_study(storage, name)
    rows: list[TrialCost] = []
    prices: set[str] = set()
    with open_operational(store_path, read_only=True) as store:
        for number, attempts in sorted(_trial_chains(study).items()):
            jobs = list(attempts[-1].user_attrs.get(ONE_TRIAL_ATTEMPTS, []))
            reports = _attempt_reports(store, jobs)
            prices |= _quoted_prices(reports)
            rows.append(_trial_cost(number, attempts, jobs, reports))
    cost = sum(r.cost_usd for r in rows)
    on_demand = sum(r.on_demand_cost_usd for r in rows)
    queue = bool(study.user_attrs.get("queue", False))
    return SweepReport(
        sweep=name,
        direction=study.direction.name.lower(),
        queue=queue,
        trials=rows,
        completed=sum(r.state == "complete" for r in rows),
        pruned=sum(r.state == "pruned" for r in rows),
        failed=sum(r.state == "fail" for r in rows),
        cost_usd=round(cost, 4),
        on_demand_cost_usd=round(on_demand, 4),
        savings_pct=_savings_pct(cost, on_demand),
        simulated=any(r.simulated for r in rows),
        best=None if queue else _best_trial(rows, study.direction.name),
        prices=sorted(prices),
    )


def _load_study(storage: str, name: str) -> optuna.Study:
    """The study ``name`` of ``storage``, or an error naming the studies it holds."""
    try:
        return optuna.load_study(study_name=name, storage=storage_url(storage))
    except KeyError:
        names = [s.study_name for s in optuna.get_all_study_summaries(storage_url(storage))]
        raise ExecutorError(
            f"no sweep {name!r} in {storage.split('@')[-1]!r}; it holds {names}"
        ) from None


def _trial_chains(study: optuna.Study) -> dict[int, list[optuna.trial.FrozenTrial]]:
    """The study's trials grouped by the trial they retry (in attempt order)."""
    chains: dict[int, list[optuna.trial.FrozenTrial]] = defaultdict(list)
    for t in study.get_trials(deepcopy=False):
        chains[original_number(t)].append(t)
    return chains


def _attempt_reports(store: OperationalStore, jobs: list[str]) -> list[JobReport]:
    """The ledger's report of each attempt's job, skipping those the ledger never had."""
    from spotwise.executor.ledger.ledger import job_report

    reports = []
    for job_id in jobs:
        try:
            reports.append(job_report(store, job_id))
        except PricingError:  # an attempt that died before the ledger had it
            continue
    return reports


def _quoted_prices(reports: list[JobReport]) -> set[str]:
    """Every spot price of a pool the reports' jobs ran in, and on-demand price of their
    regions, described with its places, source and time, and flagged when it was stale, as
    ``spotwise run``'s report shows them."""
    return {
        line
        for r in reports
        if r.prices is not None
        for line in r.prices.used_by(r.pools_used).quote_lines()
    }


def _market_hours(reports: list[JobReport]) -> dict[str, float]:
    """Instance hours per market summed over the reports (rounded to 4 places)."""
    hours: dict[str, float] = defaultdict(float)
    for r in reports:
        for market, use in r.markets.items():
            hours[market] += use.hours
    return {k: round(v, 4) for k, v in hours.items()}


def _failure_why(last: optuna.trial.FrozenTrial) -> str | None:
    """Why a failed attempt failed, as it recorded (None: it did not fail or did not say)."""
    if last.state is TrialState.FAIL and last.user_attrs.get("why"):
        return str(last.user_attrs["why"])
    return None


def _trial_cost(
    number: int,
    attempts: list[optuna.trial.FrozenTrial],
    jobs: list[str],
    reports: list[JobReport],
) -> TrialCost:
    """One trial's row: its last attempt's outcome and the cost of all its attempts."""
    last = attempts[-1]
    return TrialCost(
        trial=number,
        params=dict(last.params),
        state=last.state.name.lower(),
        value=last.value if last.state is TrialState.COMPLETE else None,
        attempts=len(attempts),
        jobs=jobs,
        cost_usd=round(sum(r.cost_usd for r in reports), 4),
        on_demand_cost_usd=round(sum(r.on_demand_cost_usd for r in reports), 4),
        hours=_market_hours(reports),
        preemptions=sum(r.preemptions for r in reports),
        steps_lost=sum(int(t.user_attrs.get("steps_lost", 0)) for t in attempts),
        simulated=any(r.simulated for r in reports),
        why=_failure_why(last),
        on_demand_why=tuple(dict.fromkeys(w for r in reports for w in r.on_demand_why)),
    )


def _best_trial(rows: list[TrialCost], direction: str) -> dict[str, Any] | None:
    """The completed trial with the best value in the study's direction (None: none completed)."""
    complete = [r for r in rows if r.state == "complete" and r.value is not None]
    if not complete:
        return None
    pick = min if direction == "MINIMIZE" else max
    top = pick(complete, key=lambda r: r.value or 0.0)
    return {"trial": top.trial, "params": top.params, "value": top.value}


def _savings_pct(cost: float, on_demand: float) -> float:
    """Percent saved against on-demand, to 2 places (0.0 when there was no on-demand cost)."""
    return round(100 * (1 - cost / on_demand), 2) if on_demand > 0 else 0.0


@dataclass(frozen=True, slots=True)
class LedgerSweep:
    """One sweep as the ledger's jobs tell it (no study needed): its trials and jobs, how the
    jobs ended, their cost against on-demand and their preemptions."""

    sweep: str
    money: str
    """``real``, or ``simulated`` when a job ran on a replayed market."""
    trials: int
    jobs: int
    completed: int
    pruned: int
    failed: int
    """Failed or cancelled."""
    running: int
    cost_usd: float
    on_demand_cost_usd: float
    saved_pct: float
    preemptions: int
    started: datetime
    """When its first job started."""

    def to_dict(self) -> dict[str, Any]:
        """The fields by name, in order (``sweep list --json`` writes the time as text)."""
        return asdict(self)


def ledger_sweeps(store: OperationalStore) -> list[LedgerSweep]:
    """Every sweep the ledger knows, from its jobs alone (no study needed): trials, attempts,
    how the jobs ended, cost against on-demand, preemptions; newest first."""
    from spotwise.executor.ledger.ledger import job_report, list_jobs

    by_sweep: dict[str, list[JobLine]] = defaultdict(list)
    for job in list_jobs(store):
        if job.sweep:
            by_sweep[job.sweep].append(job)
    rows = [
        _ledger_sweep_row(sweep, jobs, [job_report(store, j.job_id) for j in jobs])
        for sweep, jobs in by_sweep.items()
    ]
    return sorted(rows, key=lambda r: r.started, reverse=True)


def _ledger_sweep_row(sweep: str, jobs: list[JobLine], reports: list[JobReport]) -> LedgerSweep:
    """One sweep's row of ``ledger_sweeps``: its jobs' outcomes and their reports' costs."""
    cost = sum(r.cost_usd for r in reports)
    on_demand = sum(r.on_demand_cost_usd for r in reports)
    statuses = [j.status for j in jobs]
    return LedgerSweep(
        sweep=sweep,
        money="simulated" if any(r.simulated for r in reports) else "real",
        trials=len({j.trial for j in jobs}),
        jobs=len(jobs),
        completed=statuses.count("completed"),
        pruned=statuses.count("pruned"),
        failed=statuses.count("failed") + statuses.count("cancelled"),
        running=statuses.count("running"),
        cost_usd=round(cost, 4),
        on_demand_cost_usd=round(on_demand, 4),
        saved_pct=_savings_pct(cost, on_demand),
        preemptions=sum(r.preemptions for r in reports),
        started=min(j.started for j in jobs),
    )
