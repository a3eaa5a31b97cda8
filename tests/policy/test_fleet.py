"""Many jobs under one budget: the tiers' controller on hand-made traces, and the bench."""

from __future__ import annotations

import json

from spotwise.policy.fleet import (
    FleetJob,
    FleetMarket,
    independent_costs,
    simulate_fleet,
)
from spotwise.policy.simulate import Visibility
from tests.conftest import CliRun
from tests.policy.helpers import traces

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
    for observe in ("all", "probe"):
        visibility = Visibility(observe=observe)
        managed = simulate_fleet(
            MARKET_TRACES,
            jobs,
            START,
            budget_usd_per_hour=1e6,
            market=MARKET,
            visibility=visibility,
            shared_sight=False,
        )
        alone = independent_costs(MARKET_TRACES, jobs, START, market=MARKET, visibility=visibility)
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


def test_bench_fleet_prints_the_tiers_against_independent_best(cli: CliRun) -> None:
    result = cli("bench", "fleet", "--json", "--observe", "all", "--start-every-hours", "96")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert set(summary["tiers"]) == {"high", "normal", "low"}
    assert summary["tiers"]["high"]["deadline_miss_rate"] == 0.0
    assert summary["fleet_cost_usd"] > 0 and summary["independent_best_cost_usd"] > 0
    assert 0.0 <= summary["share_of_hours_within_budget"] <= 1.0 and summary["simulated"]
