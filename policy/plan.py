"""Planning a job: which pools, what market mix, which checkpoint interval, at what cost, how
likely spot alone is to be late, and the command that runs it.

For each pool the expected spot run comes from Daly's model with the pool's MTBF (see
:mod:`spotwise.policy.cost`). When the expected spot run would overrun the deadline, the plan
mixes in on-demand: spot runs for as long as the deadline allows and on-demand does the rest.
Every number keeps its source and ``as_of`` (:mod:`spotwise.policy.market`); inputs older than a
week are flagged stale, and a pool whose on-demand price is out of line with the same shape's on
its cloud is flagged and ranked after the others (:func:`out_of_line`).
"""

from __future__ import annotations

import itertools
import math
import shlex
import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from spotwise.policy.cost import (
    CostBreakdown,
    SpotRun,
    StorageTerms,
    expected_spot_cost,
    expected_spot_run,
    spot_late_probability,
)
from spotwise.policy.errors import PolicyError
from spotwise.policy.job import MAX_JOB_HOURS
from spotwise.policy.market import PoolTerms
from spotwise.policy.pools.clouds import CHECKPOINT_PREFIX, LAUNCH_FORMS, notice_line
from spotwise.pricing.clouds.profile import LaunchForm
from spotwise.pricing.clouds.registry import PROFILES
from spotwise.pricing.collect_commands import collect_each
from spotwise.pricing.frames import utc_now

MAX_CHECKPOINT_GB = 1_000_000
"""The largest checkpoint a plan takes (a petabyte): more is a typo, and would overflow the
storage terms."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanInputs:
    """The job and the assumptions about checkpoints and restarts."""

    gpu_hours: float
    """Hours of work on one machine of the shape (a plan by GPU: the GPU-hours over the GPUs
    asked for)."""
    deadline_hours: float
    checkpoint_gb: float = 10.0
    write_gb_per_s: float = 0.5
    """Checkpoint write speed: the blocking time δ is checkpoint_gb / write speed."""
    restart_hours: float = 0.2
    storage: StorageTerms | None = None
    """Checkpoint storage prices for every pool (None: each cloud's list prices where the pool
    has them, else :class:`StorageTerms`' defaults)."""

    def __post_init__(self) -> None:
        for name in ("gpu_hours", "deadline_hours", "write_gb_per_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise PolicyError(f"{name} must be a positive finite number, got {value}")
        for name in ("checkpoint_gb", "restart_hours"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise PolicyError(f"{name} must be a finite number >= 0, got {value}")
        for name, most in (
            ("gpu_hours", MAX_JOB_HOURS),
            ("deadline_hours", MAX_JOB_HOURS),
            ("restart_hours", MAX_JOB_HOURS),
            ("checkpoint_gb", MAX_CHECKPOINT_GB),
        ):
            if getattr(self, name) > most:
                raise PolicyError(f"{name} must be at most {most:,}, got {getattr(self, name):g}")

    @property
    def save_s(self) -> float:
        """Seconds one checkpoint takes to write."""
        return self.checkpoint_gb / self.write_gb_per_s


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolPlan:
    """One pool's expected outcome."""

    pool: PoolTerms
    spot_share: float
    """Share of the work planned on spot (the rest on demand)."""
    checkpoint_interval_hours: float
    expected_hours: float
    cost: CostBreakdown
    """``cost.storage`` holds the checkpoints' storage, writes and egress."""
    p_late_on_spot: float
    """P(spot alone misses the deadline): how likely the supervisor's on-demand fallback is
    to be needed (the plan itself keeps the deadline)."""
    egress: float = 0.0
    """The part of ``cost.storage`` that is the final checkpoint's egress."""
    save_fits_notice: bool | None = None
    """Whether one checkpoint is written within the cloud's notice (None: no notice known)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """Pools ranked by expected cost, and the assumptions behind the numbers."""

    pools: tuple[PoolPlan, ...]
    assumptions: tuple[str, ...]
    made_at: pd.Timestamp
    """When the plan was made: what stale inputs are measured against."""
    left_out: dict[str, str] = field(default_factory=dict)
    """Pools with a spot price but no plan, and why."""
    unpriced: dict[str, str] = field(default_factory=dict)
    """A plan by GPU: clouds with no stored price of such a shape → the collecting command."""
    out_of_line: dict[str, str] = field(default_factory=dict)
    """Pools whose on-demand price is out of line with the same shape's elsewhere on their
    cloud (:func:`out_of_line`) → why; ranked after the others."""

    @property
    def best(self) -> PoolPlan:
        """The cheapest pool's plan."""
        return self.pools[0]

    def stale(self, plan: PoolPlan) -> list[str]:
        """The inputs of ``plan`` older than a week when this plan was made."""
        return plan.pool.stale_inputs(self.made_at)

    def clouds(self) -> tuple[str, ...]:
        """The clouds of the ranked pools, the cheapest cloud first."""
        return tuple(dict.fromkeys(p.pool.provider for p in self.pools))

    def shown(self, top: int | None) -> tuple[PoolPlan, ...]:
        """The ``top`` cheapest pools (all: None), and each other cloud's cheapest after them,
        so that every cloud priced has a row."""
        first = self.pools[:top]
        there = {p.pool.provider for p in first}
        extra = []
        for p in self.pools[len(first) :]:
            if p.pool.provider not in there:
                there.add(p.pool.provider)
                extra.append(p)
        return (*first, *extra)


def _spot_share(inputs: PlanInputs, run: SpotRun) -> float:
    """The share of the work spot can do within the deadline (on demand does the rest)."""
    work = inputs.gpu_hours
    rate = work / run.wall_hours if math.isfinite(run.wall_hours) else 0.0
    if run.wall_hours <= inputs.deadline_hours or rate >= 1.0:
        return 1.0
    # Spot for x wall hours, on-demand for the rest: x·rate + (R − x) >= W.
    spot_wall = max(0.0, (inputs.deadline_hours - work) / (1.0 - rate))
    return min(1.0, spot_wall * rate / work)


def _storage_terms(inputs: PlanInputs, pool: PoolTerms, interval_hours: float) -> StorageTerms:
    """The checkpoints' storage terms on ``pool``'s cloud: the prices given, else its list
    prices with one write per checkpoint, else the defaults."""
    chosen = inputs.storage
    listed = pool.storage_list
    if listed is None or chosen is not None:
        base = chosen or StorageTerms()
        return StorageTerms(
            checkpoint_gb=inputs.checkpoint_gb,
            usd_per_gb_month=base.usd_per_gb_month,
            retention_months=base.retention_months,
            requests=base.requests,
            usd_per_1k_requests=base.usd_per_1k_requests,
        )
    writes = math.ceil(inputs.gpu_hours / interval_hours) if interval_hours > 0 else 0
    return StorageTerms(
        checkpoint_gb=inputs.checkpoint_gb,
        usd_per_gb_month=listed.usd_per_gb_month,
        requests=float(writes),
        usd_per_1k_requests=listed.usd_per_1k_writes,
    )


def plan_pool(inputs: PlanInputs, pool: PoolTerms) -> PoolPlan:
    """Expected cost of the job on one pool, mixing in on-demand if the deadline needs it."""
    work = inputs.gpu_hours
    delta = inputs.save_s / 3600.0
    spot, interval = expected_spot_cost(
        work_hours=work,
        spot_price=pool.spot_price,
        on_demand_price=pool.on_demand_price,
        mtbf_hours=pool.mtbf_hours,
        checkpoint_hours=delta,
        restart_hours=inputs.restart_hours,
    )
    stored = _storage_terms(inputs, pool, interval).cost()
    run = expected_spot_run(
        work_hours=work,
        mtbf_hours=pool.mtbf_hours,
        checkpoint_hours=delta,
        restart_hours=inputs.restart_hours,
        interval_hours=interval,
    )
    share = _spot_share(inputs, run)
    egress = inputs.checkpoint_gb * pool.storage_list.egress_usd_per_gb if pool.storage_list else 0
    cost = CostBreakdown(
        compute=share * spot.compute + (1 - share) * work * pool.on_demand_price,
        storage=stored + egress,
        recovery=share * spot.recovery,
        on_demand=work * pool.on_demand_price,
    )
    on_demand_only = CostBreakdown(
        compute=work * pool.on_demand_price,
        storage=egress,
        recovery=0.0,
        on_demand=work * pool.on_demand_price,
    )
    if on_demand_only.total < cost.total:
        cost, share = on_demand_only, 0.0
    late = spot_late_probability(
        work_hours=work,
        deadline_hours=inputs.deadline_hours,
        mtbf_hours=pool.mtbf_hours,
        checkpoint_hours=delta,
        restart_hours=inputs.restart_hours,
        interval_hours=interval,
    )
    return PoolPlan(
        pool=pool,
        spot_share=share,
        checkpoint_interval_hours=interval,
        expected_hours=share * run.wall_hours + (1 - share) * work if share else work,
        cost=cost,
        p_late_on_spot=late,
        egress=egress,
        save_fits_notice=None if pool.notice_s is None else inputs.save_s <= pool.notice_s,
    )


def price_sources(pool: PoolTerms) -> str:
    """Where a pool's two prices come from, and when they held."""
    return f"spot {pool.spot.describe()}, on demand {pool.on_demand.describe()}"


def _refuse(inputs: PlanInputs, pools: list[PoolTerms], left_out: dict[str, str]) -> None:
    """Refuse a deadline shorter than the work, and a plan without a pool."""
    if inputs.deadline_hours < inputs.gpu_hours:
        raise PolicyError(
            f"the deadline ({inputs.deadline_hours} h) is shorter than the work "
            f"({inputs.gpu_hours} GPU-hours on one instance): extend it"
        )
    if pools:
        return
    reasons = sorted(set(left_out.values()))
    more = f" (and {len(reasons) - 1} more like it)" if len(reasons) > 1 else ""
    raise PolicyError(
        f"no pool has both a spot and an on-demand price: {reasons[0]}{more}"
        if reasons
        else "no pool to plan on: load prices with `spotwise data load` or collect them "
        f"with {collect_each(PROFILES)}"
    )


def _storage_lines(inputs: PlanInputs, plans: list[PoolPlan]) -> list[str]:
    """How the checkpoints are priced: the prices given, or each cloud's list prices."""
    if inputs.storage is not None or not any(p.pool.storage_list for p in plans):
        terms = inputs.storage or StorageTerms()
        return [
            f"checkpoints stored at ${terms.usd_per_gb_month}/GB-month for "
            f"{terms.retention_months} month(s)"
        ]
    listed = {p.pool.provider: p.pool.storage_list for p in plans if p.pool.storage_list}
    return [
        f"{cloud} checkpoints: {terms.describe()}; one write a checkpoint, kept a month, the "
        "last one sent out once; restarts read it within the region (free)"
        for cloud, terms in listed.items()
    ]


def _source_lines(plans: list[PoolPlan]) -> list[str]:
    """Which on-demand prices are not quotes, and which pools have no trace of their own."""
    lines = []
    kinds = Counter(p.pool.on_demand.kind for p in plans)
    for kind, what in (
        ("reference", "the reference price, not a quote"),
        ("estimate", "estimated from a Spot Advisor saving"),
    ):
        if kinds.get(kind):
            lines.append(
                f"{kinds[kind]} of {len(plans)} pools' on-demand prices are {what}: "
                "`spotwise collect aws --on-demand --region R` stores the AWS Price List"
            )
    risks = Counter(p.pool.risk.kind for p in plans)
    for kind, what in (
        ("band", "their eviction band (the share of spot VMs evicted an hour, at its middle)"),
        ("prior", "the prior of other pools' traces or bands (shown as a range)"),
        ("default", "the default: nothing is traced and no eviction band is stored"),
    ):
        if risks.get(kind):
            lines.append(
                f"{risks[kind]} of {len(plans)} pools have no trace of their own: their MTBF is "
                f"{what}"
            )
    return lines


def _stale_line(plans: list[PoolPlan], made: pd.Timestamp) -> list[str]:
    """How many pools rest on inputs older than a week, and what collects fresh ones."""
    stale = [p for p in plans if p.pool.stale_inputs(made)]
    if not stale:
        return []
    newest = max(p.pool.spot.as_of or "" for p in stale)[:10]
    clouds = collect_each(p.pool.provider for p in stale)
    return [
        f"{len(stale)} of {len(plans)} pools rest on inputs older than a week (their newest "
        f"spot price is of {newest or 'no date'}): collect fresh ones with {clouds} before "
        "acting on them"
    ]


def _notice_lines(inputs: PlanInputs, plans: list[PoolPlan]) -> list[str]:
    """Whether the last checkpoint fits each planned cloud's notice window."""
    notices = {p.pool.provider: p.pool.notice_s for p in plans if p.pool.notice_s is not None}
    return [notice_line(notices, inputs.save_s)] if notices else []


OUT_OF_LINE_SHARE = 0.5
"""A pool whose on-demand price is under this share of the median of the same shape on its
cloud is out of line: a list price varies by region far less than that, so such a row is most
likely a region that no longer sells the shape, or a bad row of the source."""


def out_of_line(pools: list[PoolTerms]) -> dict[str, str]:
    """The pools whose on-demand price is under :data:`OUT_OF_LINE_SHARE` of the median of the
    same shape on the same cloud (judged where three pools or more price it), with why."""
    groups: dict[tuple[str, str], list[PoolTerms]] = {}
    for pool in pools:
        groups.setdefault((pool.provider, pool.instance_type), []).append(pool)
    odd = {}
    for (cloud, shape), members in groups.items():
        if len(members) < 3:
            continue
        median = statistics.median(p.on_demand_price for p in members)
        for p in members:
            if p.on_demand_price < OUT_OF_LINE_SHARE * median:
                as_of = f" as of {p.on_demand.as_of[:10]}" if p.on_demand.as_of else ""
                odd[p.name] = (
                    f"on demand ${p.on_demand_price:.3f}/h{as_of} is under "
                    f"{OUT_OF_LINE_SHARE:.0%} of the median ${median:.3f}/h of {shape} in "
                    f"{len(members)} places on {cloud}"
                )
    return odd


def _out_of_line_line(plans: list[PoolPlan], odd: dict[str, str]) -> list[str]:
    """How many pools are out of line, the first with why, and what to check."""
    if not odd:
        return []
    first = next(p.pool for p in plans if p.pool.name in odd)
    return [
        f"{len(odd)} of {len(plans)} pools are out of line, ranked after the others (the "
        f"first, {first.name}: {odd[first.name]}): make sure the region still sells the shape "
        f"(`spotwise check {first.provider}` with its --pools) before acting on them"
    ]


def plan_job(
    inputs: PlanInputs,
    pools: list[PoolTerms],
    *,
    left_out: dict[str, str] | None = None,
    now: pd.Timestamp | None = None,
    unpriced: dict[str, str] | None = None,
) -> Plan:
    """Rank the pools by expected total cost (``left_out``: pools priced nowhere, and why;
    ``now``: when the plan is made, default the clock; ``unpriced``: clouds with no price of
    a GPU plan's shapes, and the command that collects one).

    Raises:
        PolicyError: when there is no pool, or the deadline is shorter than the work.
    """
    _refuse(inputs, pools, left_out or {})
    odd = out_of_line(pools)
    plans = sorted(
        (plan_pool(inputs, p) for p in pools),
        key=lambda p: (p.pool.name in odd, p.cost.total),
    )
    made = now if now is not None else utc_now()
    best = plans[0].pool
    assumptions = [
        f"checkpoint of {inputs.checkpoint_gb} GB blocks training {inputs.save_s:.0f} s "
        f"(write speed {inputs.write_gb_per_s} GB/s)",
        f"restart after a preemption takes {inputs.restart_hours} h",
        *_storage_lines(inputs, plans),
        "prices are the newest in the store; preemptions follow a constant hazard (Daly's model)",
        f"{best.name}: {price_sources(best)}; {best.risk.describe()}",
        *_notice_lines(inputs, plans),
        *_source_lines(plans),
        *_stale_line(plans, made),
        *_out_of_line_line(plans, odd),
    ]
    return Plan(
        pools=tuple(plans),
        assumptions=tuple(assumptions),
        made_at=made,
        left_out=dict(left_out or {}),
        unpriced=dict(unpriced or {}),
        out_of_line=odd,
    )


def _account_flags(form: LaunchForm, account: Mapping[str, Any]) -> tuple[list[str], str]:
    """The form's account flags with the values given (placeholders for the others), and the
    bucket (or its placeholder)."""
    words, bucket = [], ""
    for setting, flag, placeholder in form.flags:
        value = account.get(setting) or placeholder
        words += [flag, shlex.quote(str(value))]
        if setting == "bucket":
            bucket = str(value)
    for network in account.get("network") or ():
        words += ["--network", shlex.quote(network)]
    if account.get("endpoint_url"):
        words += ["--endpoint-url", shlex.quote(str(account["endpoint_url"]))]
    return words, bucket


def _market_flags(plan: Plan, shown: int | None) -> list[str]:
    """``--pools`` in order among the ``shown`` first, in the best pool's region and cloud; on
    demand from the start when the plan puts no work on spot."""
    best = plan.best
    if best.spot_share <= 0:
        return ["--on-demand-after", "0"]
    zones = [
        p.pool.zone
        for p in plan.pools[:shown]
        if (p.pool.provider, p.pool.region) == (best.pool.provider, best.pool.region)
        and p.pool.zone
        and p.spot_share > 0
    ]
    return ["--pools", ",".join(zones)] if zones else []


def next_step(
    plan: Plan,
    inputs: PlanInputs,
    command: str | None = None,
    *,
    shown: int | None = None,
    account: Mapping[str, Any] | None = None,
) -> str:
    """The command that runs the plan on the best pool's cloud: its region, the plan's zones
    there among the ``shown`` first (all: None) in order, the account's settings (``account``:
    the shared cloud options by name; placeholders in capitals for those not given), the job's
    hours, the checkpoint interval and where it checkpoints; ``command`` defaults to ``python
    train.py --ckpt`` that place."""
    best = plan.best
    form = LAUNCH_FORMS.get(best.pool.provider)
    if form is None:
        return (
            f"Spotwise launches on {', '.join(LAUNCH_FORMS)} only; for {best.pool.name} write "
            f"a SkyPilot task: spotwise plan --gpu-hours {inputs.gpu_hours:g} --deadline-hours "
            f"{inputs.deadline_hours:g} --instance-type {best.pool.instance_type} "
            f"--skypilot task.yaml --run '{command or 'python train.py'}'"
        )
    settings, bucket = _account_flags(form, account or {})
    # one folder per planned run: a second job run as printed never resumes the first's
    ckpt = (
        f"{form.scheme}://{form.container(bucket)}/{CHECKPOINT_PREFIX}/"
        f"run-{plan.made_at:%Y%m%d-%H%M%S}"
    )
    words = [
        *("spotwise", "run", "--launcher", form.cloud, "--region", best.pool.region),
        *("--instance-type", best.pool.instance_type, *settings, *_market_flags(plan, shown)),
        *("--compute-hours", f"{inputs.gpu_hours:g}", "--deadline-hours"),
        f"{inputs.deadline_hours:g}",
        *("--checkpoint-minutes", f"{60 * best.checkpoint_interval_hours:.0f}", "--ckpt", ckpt),
    ]
    return " ".join(words) + f" -- {command or f'python train.py --ckpt {ckpt}'}"


def missing_settings(command: str) -> list[str]:
    """The flags of ``command`` (of :func:`next_step`) that still hold their placeholder."""
    words = command.split(" -- ", 1)[0].split()
    pairs = set(itertools.pairwise(words))
    form = next(
        (LAUNCH_FORMS[b] for a, b in pairs if a == "--launcher" and b in LAUNCH_FORMS), None
    )
    if form is None:
        return []
    return [flag for _, flag, placeholder in form.flags if (flag, placeholder) in pairs]
