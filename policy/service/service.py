"""The decision service: the policy API's logic, callable in-process or over HTTP.

It holds the pools' availability history (real traces or collected data) and answers three
questions: what should this job do now (:meth:`DecisionService.decide`), which pools are
cheapest for a job (:meth:`rank_pools`) and what is a pool's preemption risk (:meth:`forecast`).
Each decision builds a fresh policy from the job's state and the history, so requests are
independent and the service can run in many workers.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from spotwise import policy
from spotwise.policy.errors import PolicyError
from spotwise.policy.job import JobSpec, JobTicks
from spotwise.policy.market import PoolTerms, Risk
from spotwise.policy.plan import PlanInputs, plan_pool
from spotwise.policy.policies.base import (
    NONE,
    ON_DEMAND,
    SPOT0,
    WAIT,
    Action,
    JobContext,
    Observation,
    Policy,
    spot,
)
from spotwise.policy.policies.past_fit import PastFit
from spotwise.policy.policies.risk import fit_past, fresh_any_up, job_history
from spotwise.policy.policies.rules import slack_exhausted, slack_ticks
from spotwise.policy.service.schemas import (
    Decision,
    DecisionRequest,
    IdleState,
    JobTerms,
    PoolForecast,
    PoolNow,
    PoolRank,
    SpotState,
)
from spotwise.policy.simulate import Visibility
from spotwise.policy.traces import Pool, TraceSet
from spotwise.pricing.forecast.risk_forecasters import SHIPPED_RISK, History, RiskForecaster
from spotwise.pricing.quotes import Quote

if TYPE_CHECKING:
    from spotwise.policy.rl.catalog import ModelCatalog

FITS_KEPT = 64
"""Pool sets whose fitted history the service keeps."""
HISTORY_HOURS = 10 * SHIPPED_RISK.half_life_hours
"""History each decision fits on: ten half-lives of the risk forecast."""
WRITE_GB_PER_S = 0.5


class RequestError(PolicyError):
    """A request the service cannot answer as asked (an HTTP 4xx)."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


class DecisionService:
    """Decisions, pool rankings and risk forecasts over one set of pool histories.

    Requests may name only the causal policies registered here and the learned models of
    ``models`` (a catalog read at start-up; default: the shipped models).
    """

    def __init__(self, history: TraceSet, models: ModelCatalog | None = None) -> None:
        from spotwise.policy.rl.catalog import shipped_models

        self.history = history
        self.models = models or shipped_models()
        self.policies = tuple(policy.names(self.models, causal=True))
        keep = min(history.n_ticks, round(HISTORY_HOURS * 3600 / history.gap_seconds))
        self._past = history.available[:, history.n_ticks - keep :]
        self._index = {name: i for i, name in enumerate(history.names)}
        self._risk = SHIPPED_RISK.fit(History(self._past, history.gap_seconds / 3600))
        self._fits: dict[tuple[int, ...], PastFit] = {}
        """The one risk forecast (:data:`~spotwise.pricing.forecast.risk_forecasters.SHIPPED_RISK`)
        of every pool on its history, which the rankings and the pool forecasts quote."""

    @property
    def _half_life_ticks(self) -> float:
        return self._risk.config.half_life_hours * 3600 / self.history.gap_seconds

    def _fresh_run_hours(self, name: str) -> float:
        """Expected length of a spot run that starts now in ``name``, in hours."""
        ticks = self._risk.expected_run(self._index[name], fresh=True)
        return ticks * self.history.gap_seconds / 3600

    @property
    def pools(self) -> tuple[str, ...]:
        """The pools this service knows, by name."""
        return self.history.names

    def _rows(self, names: list[str]) -> list[int]:
        unknown = [n for n in names if n not in self._index]
        if unknown:
            shown = [n[:60] for n in unknown[:5]]
            raise RequestError(
                f"unknown pool(s) {shown}{' ...' if len(unknown) > 5 else ''}; this service "
                f"knows {list(self._index)}",
                404,
            )
        return [self._index[n] for n in names]

    def decide(self, request: DecisionRequest) -> Decision:
        """The next action for a job in the given state (a job that can no longer meet its
        deadline is told on-demand, which finishes soonest; one whose progress is past its work
        is told it is done)."""
        job, state = request.job, request.state
        if state.progress_hours > job.compute_hours:
            return _done(job, state.progress_hours)
        pools = _pools_now(request, self.pools)
        names = list(pools)
        rows = self._rows(names)
        gap = self.history.gap_seconds
        ticks = _ticks_or_on_demand(job, state.progress_hours, gap)
        if isinstance(ticks, Decision):
            return ticks
        prices = np.array([p.price or job.spot_price for p in pools.values()])
        context = self._context(request, names, rows, ticks, prices)
        chosen = self._policy(request.policy)
        chosen.reset(context)
        obs = _observation(request, pools, ticks, prices, gap)
        action = chosen.act(obs)
        if request.observe == "all" and not _up(obs, action):
            action = WAIT  # seeing every pool, it asks only for one that is up
        decision = self._explain(action, obs, context, job, chosen.forecast, chosen.why)
        if decision.action == "spot":
            decision.request_pools = [names[z] for z in action.named_pools()]
        return decision

    def _context(
        self,
        request: DecisionRequest,
        names: list[str],
        rows: list[int],
        ticks: JobTicks,
        prices: np.ndarray,
    ) -> JobContext:
        """What the policy is reset with: the job in ticks, the pools asked about and their
        history here."""
        gap = self.history.gap_seconds
        context = JobContext(
            job=ticks,
            pools=tuple(
                Pool(name=n, spot_price=float(p)) for n, p in zip(names, prices, strict=True)
            ),
            spot_price=prices,
            on_demand_price=request.job.on_demand_price,
            speed=np.ones(len(names)),
            past_available=self._past[rows],
            checkpoint_stall_ticks=request.job.checkpoint_seconds / gap,
            observe=request.observe,
            probe_ticks=Visibility(
                observe=request.observe, probe_seconds=request.probe_seconds
            ).probe_ticks(gap),
        )
        return replace(context, past_fit=self._past_fit(tuple(rows), context))

    def _past_fit(self, rows: tuple[int, ...], context: JobContext) -> PastFit:
        """The risk forecast and spells of these pools' history, fitted once (the history is
        the service's, fixed while it serves)."""
        fit = self._fits.pop(rows, None) or fit_past(context)
        self._fits[rows] = fit  # the newest last; the oldest goes past FITS_KEPT
        while len(self._fits) > FITS_KEPT:
            self._fits.pop(next(iter(self._fits)))
        return fit

    def _policy(self, name: str) -> Policy:
        """A fresh policy of those served, by name."""
        if name not in self.policies:
            raise RequestError(
                f"unknown policy {name!r}; this service serves {list(self.policies)}"
            )
        return policy.load(name, self.models)

    def _explain(
        self,
        action: Action,
        obs: Observation,
        context: JobContext,
        job: JobTerms,
        forecast: RiskForecaster | None,
        why: str | None = None,
    ) -> Decision:
        """The decision's reason and expected cost. A spot one quotes the risk forecast the
        policy read (``forecast``; for a policy that reads none, :data:`SHIPPED_RISK` fitted on
        the job's history and this tick), by its label and its numbers; an on-demand one the
        policy's own rule where one decided it (``why``)."""
        hours = context.job.hours_per_tick
        slack_h = slack_ticks(obs, context) * hours
        work_left = max(0.0, job.compute_hours - obs.progress * hours)
        time_left = max(work_left, job.deadline_hours - obs.tick * hours)
        od_cost = (work_left + job.changeover_hours) * job.on_demand_price
        if action.instance == ON_DEMAND:
            if slack_h < 0:
                reason = (
                    f"late: the deadline cannot be met ({work_left:.2f} h of work left, "
                    f"{-slack_h:.2f} h past it); on-demand to the end, where no preemption "
                    "delays it more"
                )
            elif slack_exhausted(obs, context):
                reason = (
                    f"safety net: {slack_h:.2f} h of slack is within two changeovers; "
                    "on-demand to the end"
                )
            else:
                reason = why or (
                    f"on-demand: spot is not forecast to cover the {work_left:.1f} h of work "
                    f"left in {time_left:.1f} h"
                )
            return _on_demand(job, obs.progress * hours, reason)
        if action.instance >= SPOT0:
            z = action.instance - SPOT0
            name = context.pools[z].name
            risk = forecast or SHIPPED_RISK.fit(job_history(context))
            risk.update(obs.tick, obs.belief(), fresh_any_up(obs))  # a tick seen again: no-op
            run_h = risk.expected_run(z, fresh=True) * hours
            plan = plan_pool(
                _inputs(job, work_left, time_left),
                _terms(name, float(context.spot_price[z]), job.on_demand_price, run_h),
            )
            minutes = (
                action.checkpoint_ticks * hours * 60
                if action.checkpoint_ticks
                else plan.checkpoint_interval_hours * 60
            )
            return Decision(
                action="spot",
                pool=name,
                market="spot",
                bid=action.bid,
                checkpoint_interval_minutes=round(minutes, 2),
                expected_cost_usd=round(min(plan.cost.total, od_cost), 4),
                reason=f"spot in {name}: forecast run {run_h:.2f} h ({risk.config.label}) at "
                f"${context.spot_price[z]:.3f}/h against ${job.on_demand_price:.3f}/h on demand"
                + (f"; expected cost to finish: {why}" if why else ""),
                risk_model=risk.config.label,
            )
        return Decision(
            action="wait",
            pool=None,
            market=None,
            bid=None,
            checkpoint_interval_minutes=None,
            expected_cost_usd=round(od_cost, 4),
            reason=f"wait for spot: {slack_h:.2f} h of slack left before on-demand is needed",
        )

    def rank_pools(self, job: JobTerms) -> list[PoolRank]:
        """Every pool ranked by the expected cost of the whole job there (planner's model)."""
        ranks = []
        inputs = _inputs(job, job.compute_hours, job.deadline_hours)
        for name in self.pools:
            mtbf = self._fresh_run_hours(name)
            plan = plan_pool(inputs, _terms(name, job.spot_price, job.on_demand_price, mtbf))
            ranks.append(
                PoolRank(
                    pool=name,
                    expected_cost_usd=round(plan.cost.total, 4),
                    on_demand_cost_usd=round(plan.cost.on_demand, 4),
                    spot_share=round(plan.spot_share, 4),
                    checkpoint_interval_hours=round(plan.checkpoint_interval_hours, 4),
                    mtbf_hours=round(mtbf, 4),
                    risk_model=self._risk.config.label,
                )
            )
        return sorted(ranks, key=lambda r: r.expected_cost_usd)

    def forecast(self, pool: str) -> PoolForecast:
        """The pool's preemption risk now, from its recent availability runs."""
        z = self._rows([pool])[0]
        row = self._past[z]
        tick_h = self.history.gap_seconds / 3600
        up = bool(row[-1])
        remaining = self._risk.expected_run(z) * tick_h if up else None
        probability = None
        if remaining is not None:
            probability = self._risk.p_preempted(z, 1.0 / tick_h)
        weights = 0.5 ** (np.arange(len(row))[::-1] / self._half_life_ticks)
        return PoolForecast(
            pool=pool,
            available_now=up,
            available_share=round(float(np.sum(weights * row) / np.sum(weights)), 4),
            mean_run_hours=round(self._fresh_run_hours(pool), 4),
            expected_hours_to_preemption=None if remaining is None else round(remaining, 4),
            preemption_probability_60min=None if probability is None else round(probability, 4),
            history_hours=round(len(row) * tick_h, 2),
            risk_model=self._risk.config.label,
        )


def _done(job: JobTerms, progress_hours: float) -> Decision:
    """The decision for a job whose progress is past its work: nothing to run."""
    return Decision(
        action="done",
        pool=None,
        market=None,
        bid=None,
        checkpoint_interval_minutes=None,
        expected_cost_usd=0.0,
        reason=f"the job is done: {progress_hours:.2f} h of progress is past its "
        f"{job.compute_hours:.2f} h of work; nothing to run",
    )


def _pools_now(request: DecisionRequest, known: tuple[str, ...]) -> dict[str, PoolNow]:
    """The pools asked about (none named: every pool in ``known``, each up now), and the
    job's own pool, up since it runs there."""
    pools = dict(request.pools) or {name: PoolNow(available=True) for name in known}
    pool = request.state.pool
    if pool is not None:
        given = pools.get(pool)
        pools[pool] = PoolNow(available=True, price=given.price if given else None)
    return pools


def _ticks_or_on_demand(job: JobTerms, progress_hours: float, gap: float) -> JobTicks | Decision:
    """The job in ticks of ``gap`` s, or on-demand for one that cannot meet its deadline or
    is too short to wait for spot."""
    if not job.feasible:
        return _on_demand(
            job,
            progress_hours,
            f"the deadline cannot be met: {job.compute_hours + job.changeover_hours:.2f} h of "
            f"work and changeover against {job.deadline_hours:.2f} h; on-demand finishes "
            "soonest",
        )
    ticks = _spec(job).ticks(gap)
    if ticks.work < 1:
        return _on_demand(
            job,
            progress_hours,
            f"the job needs less than half of this market's {gap} s step: too short to wait "
            "for spot; on-demand",
        )
    return ticks


def _instance(state: IdleState | SpotState, names: list[str]) -> int:
    """The job's instance now, as the policies number it."""
    if state.instance == "none":
        return NONE
    if state.instance == "on-demand":
        return ON_DEMAND
    return spot(names.index(str(state.pool)))


def _up(obs: Observation, action: Action) -> bool:
    """Whether ``action`` asks for no spot pool, or for one that ``obs`` shows up."""
    return action.instance < SPOT0 or bool(obs.available[action.instance - SPOT0])


def _observation(
    request: DecisionRequest,
    pools: dict[str, PoolNow],
    ticks: JobTicks,
    prices: np.ndarray,
    gap: float,
) -> Observation:
    """The tick the policy sees: the job's state and what it saw of each pool (with
    ``observe`` other than ``all``, only pools seen within the last hour count as up)."""
    state = request.state
    per_hour = 3600.0 / gap
    blind = request.observe != "all"
    seen = np.array([p.available and p.seen_minutes_ago is not None for p in pools.values()])
    age = np.array(
        [
            math.inf if p.seen_minutes_ago is None else p.seen_minutes_ago / 60 * per_hour
            for p in pools.values()
        ]
    )
    return Observation(
        tick=min(round(state.elapsed_hours * per_hour), ticks.deadline),
        progress=min(state.progress_hours * per_hour, float(ticks.work)),
        state=_instance(state, list(pools)),
        changeover_left=round(state.changeover_left_hours * per_hour),
        preempted=False,
        available=seen & (age < 1) if blind else seen,
        prices=prices,
        last_seen=seen if blind else None,
        seen_age=age if blind else None,
    )


def _on_demand(job: JobTerms, progress_hours: float, reason: str) -> Decision:
    work_left = max(0.0, job.compute_hours - progress_hours)
    return Decision(
        action="on-demand",
        pool=None,
        market="on-demand",
        bid=None,
        checkpoint_interval_minutes=None,
        expected_cost_usd=round((work_left + job.changeover_hours) * job.on_demand_price, 4),
        reason=reason,
    )


def _spec(job: JobTerms) -> JobSpec:
    return JobSpec(
        compute_hours=job.compute_hours,
        deadline_hours=job.deadline_hours,
        changeover_hours=job.changeover_hours,
        spot_price=job.spot_price,
        on_demand_price=job.on_demand_price,
    )


def _inputs(job: JobTerms, work_hours: float, time_hours: float) -> PlanInputs:
    return PlanInputs(
        gpu_hours=max(work_hours, 1e-6),
        deadline_hours=max(time_hours, work_hours, 1e-6),
        checkpoint_gb=job.checkpoint_seconds * WRITE_GB_PER_S,
        write_gb_per_s=WRITE_GB_PER_S,
        restart_hours=job.changeover_hours,
    )


def _terms(name: str, spot_price: float, on_demand_price: float, mtbf_hours: float) -> PoolTerms:
    return PoolTerms(
        provider="trace",
        region="",
        zone=name,
        instance_type="",
        spot=Quote(usd_per_hour=spot_price, source="the request"),
        on_demand=Quote(usd_per_hour=on_demand_price, source="the request"),
        risk=Risk(
            mtbf_hours=max(mtbf_hours, 1e-3),
            kind="trace",
            source="the pool's availability history",
        ),
    )
