"""The total-cost model, the checkpoint interval and planning."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spotwise.policy.cost import (
    StorageTerms,
    daly_interval,
    expected_spot_cost,
    expected_spot_run,
    spot_late_probability,
    total_cost,
    young_interval,
)
from spotwise.policy.errors import PolicyError
from spotwise.policy.market import PoolTerms, Risk
from spotwise.policy.plan import PlanInputs, plan_job, plan_pool
from spotwise.pricing.quotes import Quote


def test_worked_case_from_the_field_costs_830_and_saves_72_3_percent() -> None:
    cost = total_cost(
        spot_hours=1000,
        spot_price=0.8,
        on_demand_price=3.0,
        interruptions=5,
        recovery_hours_each=2,
        recovery_price=3.0,
    )
    assert cost.compute == pytest.approx(800) and cost.recovery == pytest.approx(30)
    assert cost.total == pytest.approx(830)
    assert cost.on_demand == pytest.approx(3000)
    assert round(cost.saved_pct, 1) == 72.3


def test_no_preemptions_means_no_recovery_cost() -> None:
    cost = total_cost(spot_hours=100, spot_price=1.0, on_demand_price=3.0, recovery_hours_each=2)
    assert cost.recovery == 0.0
    run = expected_spot_run(
        work_hours=100,
        mtbf_hours=math.inf,
        checkpoint_hours=0.01,
        restart_hours=0.5,
        interval_hours=1.0,
    )
    assert run.recovery_hours == 0.0 and run.interruptions == 0.0
    assert run.wall_hours == pytest.approx(100 + 100 * 0.01)


def test_storage_is_size_times_price_times_retention_plus_requests() -> None:
    storage = StorageTerms(
        checkpoint_gb=100,
        usd_per_gb_month=0.02,
        retention_months=3,
        requests=10_000,
        usd_per_1k_requests=0.005,
    )
    assert storage.cost() == pytest.approx(100 * 0.02 * 3 + 10 * 0.005)
    cost = total_cost(spot_hours=1, spot_price=1, on_demand_price=2, storage=storage)
    assert cost.total == pytest.approx(1 + storage.cost())


def test_young_and_daly_intervals() -> None:
    assert young_interval(0.1, 20) == pytest.approx(2.0)
    # Daly's form tends to Young's as the checkpoint time becomes small.
    assert daly_interval(1e-6, 50) == pytest.approx(young_interval(1e-6, 50), rel=1e-3)
    assert daly_interval(0.1, 20) < young_interval(0.1, 20) + 0.1
    assert daly_interval(5.0, 2.0) == 2.0
    with pytest.raises(PolicyError, match="positive"):
        young_interval(0, 10)


def test_expected_spot_cost_grows_without_bound_as_the_hazard_grows() -> None:
    costs = [
        expected_spot_cost(
            work_hours=100,
            spot_price=1.0,
            on_demand_price=3.0,
            mtbf_hours=m,
            checkpoint_hours=0.05,
            restart_hours=0.2,
        )[0]
        for m in (1000.0, 10.0, 1.0, 0.1, 0.01)
    ]
    totals = [c.total for c in costs]
    assert totals == sorted(totals)
    assert totals[0] < 300 < totals[-1]  # spot wins at low hazard, on-demand at extreme hazard


def pool(mtbf: float, spot: float = 1.0, od: float = 3.0) -> PoolTerms:
    return PoolTerms(
        provider="aws",
        region="us-east-1",
        zone="us-east-1a",
        instance_type="p3.2xlarge",
        spot=Quote(usd_per_hour=spot, source="test", as_of="2024-01-01T00:00:00+00:00"),
        on_demand=Quote(usd_per_hour=od, source="test"),
        risk=Risk(mtbf_hours=mtbf, kind="trace", source="test"),
    )


def test_plan_picks_on_demand_when_the_hazard_is_extreme() -> None:
    inputs = PlanInputs(gpu_hours=100, deadline_hours=400, checkpoint_gb=10)
    calm = plan_pool(inputs, pool(mtbf=500))
    stormy = plan_pool(inputs, pool(mtbf=0.05))
    assert calm.spot_share == 1.0 and calm.cost.total < calm.cost.on_demand
    assert stormy.spot_share == 0.0 and stormy.cost.total == pytest.approx(300)


def test_plan_mixes_in_on_demand_when_spot_would_overrun_the_deadline() -> None:
    inputs = PlanInputs(gpu_hours=100, deadline_hours=105, checkpoint_gb=10)
    mixed = plan_pool(inputs, pool(mtbf=3.0, spot=0.3))
    assert 0.0 < mixed.spot_share < 1.0
    assert mixed.expected_hours <= 105 + 1e-6


def test_plan_ranks_pools_by_expected_cost_and_states_its_assumptions() -> None:
    inputs = PlanInputs(gpu_hours=100, deadline_hours=200)
    plan = plan_job(inputs, [pool(50, spot=1.2), pool(50, spot=0.9), pool(0.5, spot=0.8)])
    totals = [p.cost.total for p in plan.pools]
    assert totals == sorted(totals) and plan.best.pool.spot_price == 0.9
    assert any("MTBF" in a for a in plan.assumptions)
    with pytest.raises(PolicyError, match="shorter than the work"):
        plan_job(PlanInputs(gpu_hours=100, deadline_hours=50), [pool(50)])
    with pytest.raises(PolicyError, match="spotwise data load"):
        plan_job(inputs, [])


def _late_by_simulation(
    work: float, deadline: float, mtbf: float, delta: float, restart: float, interval: float
) -> float:
    """The same model drawn 4,000 times: each segment is retried until it runs unbroken."""
    rng = np.random.default_rng(0)
    segment, draws = interval + delta, 4000
    total = np.zeros(draws)
    for _ in range(round(work / interval)):
        left = np.ones(draws, dtype=bool)
        while left.any():
            x = rng.exponential(mtbf, draws)
            total += np.where(left & (x >= segment), segment, 0.0)
            broken = left & (x < segment)
            total += np.where(broken, x + restart, 0.0)
            left = broken
    return float(np.mean(total > deadline))


@pytest.mark.parametrize(
    "case",
    [(10, 12, 2, 0.01, 0.1, 0.2), (10, 11, 5, 0.01, 0.1, 0.25), (10, 10.5, 50, 0.01, 0.2, 0.5)],
)
def test_the_chance_that_spot_alone_is_late_matches_a_simulation_of_its_model(
    case: tuple[float, ...],
) -> None:
    work, deadline, mtbf, delta, restart, interval = case
    late = spot_late_probability(
        work_hours=work,
        deadline_hours=deadline,
        mtbf_hours=mtbf,
        checkpoint_hours=delta,
        restart_hours=restart,
        interval_hours=interval,
    )
    assert late == pytest.approx(_late_by_simulation(*case), abs=0.02)
    assert 0.02 < late < 0.98  # cases where the answer is not trivially 0 or 1
    later = spot_late_probability(
        work_hours=work,
        deadline_hours=deadline + 1,
        mtbf_hours=mtbf,
        checkpoint_hours=delta,
        restart_hours=restart,
        interval_hours=interval,
    )
    assert later < late
