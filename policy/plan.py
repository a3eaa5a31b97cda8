"""Planning a job: which pools, what market mix, which checkpoint interval, at what cost.

For each pool the expected spot run comes from Daly's model with the pool's MTBF (see
:mod:`spotwise.policy.cost`). When the expected spot run would overrun the deadline, the plan
mixes in on-demand: spot runs for as long as the deadline allows and on-demand does the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from spotwise.policy.cost import CostBreakdown, StorageTerms, expected_spot_cost, expected_spot_run
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """Pools ranked by expected cost, and the assumptions behind the numbers."""

    pools: tuple[PoolPlan, ...]
    assumptions: tuple[str, ...]

    @property
    def best(self) -> PoolPlan:
        return self.pools[0]


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
    return PoolPlan(
        pool=pool,
        spot_share=share,
        checkpoint_interval_hours=interval,
        expected_hours=hours,
        cost=cost,
    )


def price_sources(pool: PoolTerms) -> str:
    """Where a pool's two prices come from, and when the spot one held."""
    return (
        f"spot ${pool.spot_price:.3f}/h from the store as of {pool.price_time:%Y-%m-%d %H:%M} "
        f"UTC, on demand ${pool.on_demand_price:.3f}/h ({pool.on_demand_source})"
    )


def plan_job(inputs: PlanInputs, pools: list[PoolTerms]) -> Plan:
    """Rank the pools by expected total cost.

    Raises:
        PolicyError: when there is no pool, or the deadline is shorter than the work.
    """
    if inputs.deadline_hours < inputs.gpu_hours:
        raise PolicyError(
            f"the deadline ({inputs.deadline_hours} h) is shorter than the work "
            f"({inputs.gpu_hours} GPU-hours on one instance): extend it"
        )
    if not pools:
        raise PolicyError(
            "no pool has both a spot and an on-demand price: load data with "
            "`spotwise data load`, or pass --on-demand-price"
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
    assumptions.append(
        f"{best.name}: {price_sources(best)}; MTBF {best.mtbf_hours:.1f} h from {best.mtbf_source}"
    )
    return Plan(pools=tuple(plans), assumptions=tuple(assumptions))
