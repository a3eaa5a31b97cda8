"""Planning a job: which pools, what market mix, which checkpoint interval, at what cost, how
likely spot alone is to be late, and the command that runs it.

For each pool the expected spot run comes from Daly's model with the pool's MTBF (see
:mod:`spotwise.policy.cost`). When the expected spot run would overrun the deadline, the plan
mixes in on-demand: spot runs for as long as the deadline allows and on-demand does the rest.
Every number keeps its source and ``as_of`` (:mod:`spotwise.policy.market`); inputs older than a
week are flagged stale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from spotwise.policy.cost import (
    CostBreakdown,
    StorageTerms,
    expected_spot_cost,
    expected_spot_run,
    spot_late_probability,
)
from spotwise.policy.errors import PolicyError
from spotwise.policy.market import PoolTerms


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanInputs:
    """The job and the assumptions about checkpoints and restarts."""

    gpu_hours: float
    deadline_hours: float
    checkpoint_gb: float = 10.0
    write_gb_per_s: float = 0.5
    """Checkpoint write speed: the blocking time δ is checkpoint_gb / write speed."""
    restart_hours: float = 0.2
    storage: StorageTerms = field(default_factory=StorageTerms)

    def __post_init__(self) -> None:
        for name in ("gpu_hours", "deadline_hours", "write_gb_per_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise PolicyError(f"{name} must be a positive finite number, got {value}")
        for name in ("checkpoint_gb", "restart_hours"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise PolicyError(f"{name} must be a finite number >= 0, got {value}")


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolPlan:
    """One pool's expected outcome."""

    pool: PoolTerms
    spot_share: float
    """Share of the work planned on spot (the rest on demand)."""
    checkpoint_interval_hours: float
    expected_hours: float
    cost: CostBreakdown
    p_late_on_spot: float
    """P(spot alone misses the deadline): how likely the supervisor's on-demand fallback is
    to be needed (the plan itself keeps the deadline)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """Pools ranked by expected cost, and the assumptions behind the numbers."""

    pools: tuple[PoolPlan, ...]
    assumptions: tuple[str, ...]
    made_at: pd.Timestamp
    """When the plan was made: what stale inputs are measured against."""
    left_out: dict[str, str] = field(default_factory=dict)
    """Pools with a spot price but no plan, and why."""

    @property
    def best(self) -> PoolPlan:
        return self.pools[0]

    def stale(self, plan: PoolPlan) -> list[str]:
        """The inputs of ``plan`` older than a week when this plan was made."""
        return plan.pool.stale_inputs(self.made_at)


def plan_pool(inputs: PlanInputs, pool: PoolTerms) -> PoolPlan:
    """Expected cost of the job on one pool, mixing in on-demand if the deadline needs it."""
    work = inputs.gpu_hours
    delta = inputs.checkpoint_gb / inputs.write_gb_per_s / 3600.0
    storage = StorageTerms(
        checkpoint_gb=inputs.checkpoint_gb,
        usd_per_gb_month=inputs.storage.usd_per_gb_month,
        retention_months=inputs.storage.retention_months,
        requests=inputs.storage.requests,
        usd_per_1k_requests=inputs.storage.usd_per_1k_requests,
    )
    spot, interval = expected_spot_cost(
        work_hours=work,
        spot_price=pool.spot_price,
        on_demand_price=pool.on_demand_price,
        mtbf_hours=pool.mtbf_hours,
        checkpoint_hours=delta,
        restart_hours=inputs.restart_hours,
        storage=storage,
    )
    run = expected_spot_run(
        work_hours=work,
        mtbf_hours=pool.mtbf_hours,
        checkpoint_hours=delta,
        restart_hours=inputs.restart_hours,
        interval_hours=interval,
    )
    rate = work / run.wall_hours if math.isfinite(run.wall_hours) else 0.0
    if run.wall_hours <= inputs.deadline_hours or rate >= 1.0:
        share = 1.0
    else:
        # Spot for x wall hours, on-demand for the rest: x·rate + (R − x) >= W.
        spot_wall = max(0.0, (inputs.deadline_hours - work) / (1.0 - rate))
        share = min(1.0, spot_wall * rate / work)
    cost = CostBreakdown(
        compute=share * spot.compute + (1 - share) * work * pool.on_demand_price,
        storage=spot.storage,
        recovery=share * spot.recovery,
        on_demand=work * pool.on_demand_price,
    )
    on_demand_only = CostBreakdown(
        compute=work * pool.on_demand_price,
        storage=0.0,
        recovery=0.0,
        on_demand=work * pool.on_demand_price,
    )
    if on_demand_only.total < cost.total:
        cost, share = on_demand_only, 0.0
    hours = share * run.wall_hours + (1 - share) * work if share else work
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
        expected_hours=hours,
        cost=cost,
        p_late_on_spot=late,
    )


def price_sources(pool: PoolTerms) -> str:
    """Where a pool's two prices come from, and when they held."""
    return f"spot {pool.spot.describe()}, on demand {pool.on_demand.describe()}"


def plan_job(
    inputs: PlanInputs,
    pools: list[PoolTerms],
    *,
    left_out: dict[str, str] | None = None,
    now: pd.Timestamp | None = None,
) -> Plan:
    """Rank the pools by expected total cost (``left_out``: pools priced nowhere, and why;
    ``now``: when the plan is made, default the clock).

    Raises:
        PolicyError: when there is no pool, or the deadline is shorter than the work.
    """
    if inputs.deadline_hours < inputs.gpu_hours:
        raise PolicyError(
            f"the deadline ({inputs.deadline_hours} h) is shorter than the work "
            f"({inputs.gpu_hours} GPU-hours on one instance): extend it"
        )
    if not pools:
        reasons = sorted(set((left_out or {}).values()))
        more = f" (and {len(reasons) - 1} more like it)" if len(reasons) > 1 else ""
        raise PolicyError(
            f"no pool has both a spot and an on-demand price: {reasons[0]}{more}"
            if reasons
            else "no pool to plan on: load prices with `spotwise data load` or collect them "
            "with `spotwise collect aws`"
        )
    plans = sorted((plan_pool(inputs, p) for p in pools), key=lambda p: p.cost.total)
    delta_s = inputs.checkpoint_gb / inputs.write_gb_per_s
    assumptions = [
        f"checkpoint of {inputs.checkpoint_gb} GB blocks training {delta_s:.0f} s "
        f"(write speed {inputs.write_gb_per_s} GB/s)",
        f"restart after a preemption takes {inputs.restart_hours} h",
        f"checkpoints stored at ${inputs.storage.usd_per_gb_month}/GB-month for "
        f"{inputs.storage.retention_months} month(s)",
        "prices are the newest in the store; preemptions follow a constant hazard (Daly's model)",
    ]
    best = plans[0].pool
    assumptions.append(f"{best.name}: {price_sources(best)}; {best.risk.describe()}")
    kinds: dict[str, int] = {}
    for p in plans:
        kinds[p.pool.on_demand.kind] = kinds.get(p.pool.on_demand.kind, 0) + 1
    for kind, what in (
        ("reference", "the reference price, not a quote"),
        ("estimate", "estimated from a Spot Advisor saving"),
    ):
        if kinds.get(kind):
            assumptions.append(
                f"{kinds[kind]} of {len(plans)} pools' on-demand prices are {what}: "
                "`spotwise collect aws --on-demand --region R` stores the AWS Price List"
            )
    priors = sum(p.pool.risk.kind != "trace" for p in plans)
    if priors:
        assumptions.append(
            f"{priors} of {len(plans)} pools have no trace of their own: their MTBF is the "
            "prior of the traced pools (shown as a range)"
        )
    made = now if now is not None else pd.Timestamp.now(tz="UTC")
    stale = [p for p in plans if p.pool.stale_inputs(made)]
    if stale:
        newest = max(p.pool.spot.as_of or "" for p in stale)[:10]
        assumptions.append(
            f"{len(stale)} of {len(plans)} pools rest on inputs older than a week (their newest "
            f"spot price is of {newest or 'no date'}): collect fresh ones with `spotwise collect "
            "aws` before acting on them"
        )
    return Plan(
        pools=tuple(plans),
        assumptions=tuple(assumptions),
        made_at=made,
        left_out=dict(left_out or {}),
    )


def next_step(
    plan: Plan,
    inputs: PlanInputs,
    command: str | None = None,
    *,
    shown: int | None = None,
    image_id: str | None = None,
    bucket: str | None = None,
    instance_profile: str | None = None,
) -> str:
    """The command that runs the plan: the best pool's region, its plan's pools there among
    the ``shown`` first (all: None) in order, the account's settings (placeholders in capitals
    for those not given), the job's hours, the checkpoint interval and where it checkpoints;
    ``command`` defaults to ``python train.py --ckpt`` that place."""
    best = plan.best
    if best.pool.provider != "aws":
        return (
            f"Spotwise launches on AWS only; for {best.pool.name} write a SkyPilot task: "
            f"spotwise plan --gpu-hours {inputs.gpu_hours:g} --deadline-hours "
            f"{inputs.deadline_hours:g} --instance-type {best.pool.instance_type} "
            f"--skypilot task.yaml --run '{command or 'python train.py'}'"
        )
    zones = [
        p.pool.zone
        for p in plan.pools[:shown]
        if p.pool.provider == "aws" and p.pool.region == best.pool.region and p.spot_share > 0
    ]
    market = f"--pools {','.join(zones)}" if zones else "--on-demand-after 0"
    # one folder per planned run: a second job run as printed never resumes the first's
    ckpt = f"s3://{bucket or 'BUCKET'}/spotwise/checkpoints/run-{plan.made_at:%Y%m%d-%H%M%S}"
    return (
        f"spotwise run --launcher aws --region {best.pool.region} --instance-type "
        f"{best.pool.instance_type} --image-id {image_id or 'AMI'} --bucket "
        f"{bucket or 'BUCKET'} --instance-profile {instance_profile or 'PROFILE'} {market} "
        f"--compute-hours {inputs.gpu_hours:g} --deadline-hours {inputs.deadline_hours:g} "
        f"--checkpoint-minutes {60 * best.checkpoint_interval_hours:.0f} --ckpt {ckpt} "
        f"-- {command or f'python train.py --ckpt {ckpt}'}"
    )


PLACEHOLDERS = {
    "AMI": "--image-id",
    "BUCKET": "--bucket",
    "PROFILE": "--instance-profile",
}
"""The account settings :func:`next_step` writes in capitals when not given, by flag."""


def missing_settings(command: str) -> list[str]:
    """The flags whose placeholders ``command`` (of :func:`next_step`) still holds."""
    words = set(command.replace("/", " ").split())
    return [flag for word, flag in PLACEHOLDERS.items() if word in words]
