"""Many jobs under one budget: the tiers' controller on hand-made traces, and the bench."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from spotwise.policy.lab.fleet import FleetJob, FleetMarket, independent_costs, simulate_fleet
from spotwise.policy.policies.base import NONE, SPOT0, Action
from spotwise.policy.pools.shared_pools import SharedPools
from spotwise.policy.simulate import JobRun, Visibility
from tests.conftest import CliRun
from tests.policy.helpers import job, traces

MARKET = FleetMarket(spot_price=1.0, on_demand_price=3.0, changeover_hours=1.0)
# a long calm past, then spot gone for 12 hours and back
MARKET_TRACES = traces(("1" * 9 + "0") * 20 + "0" * 12 + "1" * 60)
START = 200


def fleet() -> list[FleetJob]:
    return [
        FleetJob(name="urgent", tier="high", compute_hours=10, deadline_hours=14),
        FleetJob(name="usual", tier="normal", compute_hours=10, deadline_hours=20),
        FleetJob(name="patient", tier="low", compute_hours=10, deadline_hours=20, arrives_hours=1),
    ]


def test_with_room_in_the_budget_high_and_normal_jobs_cost_what_they_cost_on_their_own() -> None:
    jobs = fleet()[:2]
    managed = simulate_fleet(MARKET_TRACES, jobs, START, budget_usd_per_hour=1e6, market=MARKET)
    alone = independent_costs(MARKET_TRACES, jobs, START, market=MARKET)
    assert [(r.cost_usd, r.done) for r in managed.jobs] == [(r.cost_usd, r.done) for r in alone]
    assert managed.hours_over_budget == 0.0


def test_a_tight_budget_holds_back_the_low_tier_and_never_the_high_one() -> None:
    # room for one on-demand instance: the urgent job's
    managed = simulate_fleet(MARKET_TRACES, fleet(), START, budget_usd_per_hour=3.0, market=MARKET)
    alone = independent_costs(MARKET_TRACES, fleet(), START, market=MARKET)
    by_name = {r.job.name: r for r in managed.jobs}
    assert by_name["urgent"].done and by_name["usual"].done
    assert by_name["urgent"].cost_usd == alone[0].cost_usd  # the high tier gets what it asks
    # alone, the low job buys on-demand through the storm; in the fleet it runs on spot only,
    # as soon as spot is back, and misses
    patient = by_name["patient"]
    assert alone[2].done and alone[2].cost_usd > 12 * MARKET.spot_price
    assert not patient.done and 0 < patient.cost_usd <= 12 * MARKET.spot_price
    assert patient.unfinished_hours > 0
    assert managed.hours_over_budget < managed.hours


def test_a_full_pool_refuses_a_launch_and_a_shrinking_one_takes_back_its_newest_instance() -> None:
    market = traces("1" * 10, "1" * 10)
    pools = SharedPools(np.array([[2, 2, 2, 1, 1, 1, 1, 1, 1, 1], [0] + [1] * 9]))
    runs = [JobRun(market, job(5, 10, 0), 0, pools=pools) for _ in range(3)]
    # tick 0: the first two land in z0, which holds two nodes; the third finds it full
    plans = [Action(SPOT0), Action(SPOT0), Action(SPOT0, also=(1,))]
    seen = [run.observe() for run in runs]
    assert list(seen[2].available) == [True, False]  # z0 still had room when it looked
    for run, plan in zip(runs, plans, strict=True):
        run.step(plan)
    assert runs[2].failed_requests == 1
    # tick 1: z1 has a node now; tick 2: all run
    for tick in (1, 2):
        states = [run.observe().state for run in runs]
        if tick == 1:
            assert states == [SPOT0, SPOT0, NONE]
            runs[2].step(Action(SPOT0 + 1))
            runs[0].step(Action(SPOT0))
            runs[1].step(Action(SPOT0))
        else:
            assert states == [SPOT0, SPOT0, SPOT0 + 1]
            for run in runs:
                run.step(Action(run.obs.state))
    # tick 3: z0 shrinks to one node; the newer instance is taken back, the older runs on
    taken = [run.observe().preempted for run in runs]
    assert taken == [False, True, False]
    assert list(pools.free(3)) == [0, 0]


def test_an_urgent_job_gets_the_spot_node_of_a_patient_one_instead_of_buying_on_demand() -> None:
    one_node = traces("1" * 300)
    capacity = np.ones((1, 300), dtype=int)
    jobs = [
        FleetJob(name="patient", tier="low", compute_hours=10, deadline_hours=40),
        FleetJob(name="urgent", tier="high", compute_hours=10, deadline_hours=16, arrives_hours=2),
    ]
    for observe in ("all", "probe"):
        visibility = Visibility(observe=observe)
        managed = simulate_fleet(
            one_node,
            jobs,
            START,
            budget_usd_per_hour=1e6,
            market=MARKET,
            visibility=visibility,
            capacity=capacity,
        )
        alone = independent_costs(
            one_node, jobs, START, market=MARKET, visibility=visibility, capacity=capacity
        )
        # on its own the urgent job finds the only node taken and ends up on on-demand
        assert alone[1].done and alone[1].cost_usd == 11 * MARKET.on_demand_price
        patient, urgent = managed.jobs
        assert urgent.done and urgent.cost_usd == 11 * MARKET.spot_price
        # the patient job gave its node up, waited, and still finished on spot
        assert patient.done and patient.cost_usd == 12 * MARKET.spot_price
        assert sum(r.cost_usd for r in managed.jobs) < sum(r.cost_usd for r in alone)


@pytest.mark.slow
def test_bench_fleet_prints_the_tiers_against_independent_best(cli: CliRun, tmp_path: Path) -> None:
    plot = tmp_path / "fleet.png"
    result = cli(
        "bench", "fleet", "--json", "--observe", "all", "--start-every-hours", "96", "--plot", plot
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert set(summary["tiers"]) == {"high", "normal", "low"}
    assert summary["tiers"]["high"]["deadline_miss_rate"] == 0.0
    assert summary["fleet_cost_usd"] > 0 and summary["independent_best_cost_usd"] > 0
    assert 0.0 <= summary["share_of_hours_within_budget"] <= 1.0 and summary["simulated"]
    spend = summary["spend_usd_per_hour"]
    assert 0 < spend["fleet"]["p50"] <= spend["fleet"]["p99"] <= spend["fleet"]["max"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_budget_smaller_than_two_normal_jobs_runs_them_in_turn_within_it() -> None:
    calm = traces("1" * 400)
    jobs = [
        FleetJob(name=f"usual-{i}", tier="normal", compute_hours=10, deadline_hours=30)
        for i in range(2)
    ]
    managed = simulate_fleet(calm, jobs, START, budget_usd_per_hour=1.0, market=MARKET)
    assert all(r.done for r in managed.jobs)
    assert managed.hours_over_budget == 0.0 and max(managed.spend) == MARKET.spot_price
