"""The simulator's moves: regions with their own on-demand prices, checkpoint egress between
regions, request charges and counts, and a provider whose failed request ends what runs
(1 h ticks)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from spotwise.policy.job import JobSpec
from spotwise.policy.policies.base import NONE, ON_DEMAND, Action, request, spot
from spotwise.policy.pools.regions import NOWHERE
from spotwise.policy.simulate import FLEET, TEARDOWN, Visibility, simulate
from tests.policy.helpers import Scripted, job, traces

EAST, WEST = ("aws", "us-east-1", 3.0), ("aws", "us-west-2", 4.0)
PROBE = Visibility(observe="probe", probe_seconds=3600)


def moved_job(gb: float = 10.0, fee: float = 0.0) -> JobSpec:
    """4 h of work by 12 h, 1 h changeovers, carrying a ``gb`` checkpoint, ``fee`` a launch."""
    return replace(job(4, 12, 1), checkpoint_gb=gb, request_usd=fee)


def test_a_move_to_another_region_pays_the_checkpoint_egress_once() -> None:
    market = traces("1" * 12, "1" * 12, places=[EAST, WEST])
    policy = Scripted([spot(0), spot(0), spot(0), spot(1)])
    result = simulate(policy, market, moved_job(gb=10.0), 0)
    # AWS between US regions: $0.02/GB; the first launch moves nothing (no checkpoint yet).
    assert result.egress_usd == pytest.approx(10 * 0.02)
    assert result.moves == 1 and result.changeovers == 2
    assert result.cost == pytest.approx(3 * 1.0 + 3 * 1.0 + 10 * 0.02)
    assert policy.regions[:5] == [NOWHERE, 0, 0, 0, 1]


def test_a_move_within_a_region_pays_no_egress() -> None:
    market = traces("1" * 12, "1" * 12, places=[EAST, EAST])
    result = simulate(Scripted([spot(0), spot(0), spot(1)]), market, moved_job(), 0)
    assert result.egress_usd == 0.0 and result.moves == 1


def test_on_demand_runs_in_the_region_it_names_at_that_regions_price() -> None:
    market = traces("0" * 12, "0" * 12, places=[EAST, WEST])
    east = simulate(Scripted([Action(ON_DEMAND, region=0)]), market, moved_job(), 0)
    west = simulate(Scripted([Action(ON_DEMAND, region=1)]), market, moved_job(), 0)
    assert east.cost == pytest.approx(5 * 3.0) and west.cost == pytest.approx(5 * 4.0)


def test_on_demand_with_no_region_runs_where_the_checkpoint_is() -> None:
    market = traces("11" + "0" * 10, "0" * 12, places=[WEST, EAST])
    policy = Scripted([spot(0), spot(0), ON_DEMAND])
    result = simulate(policy, market, moved_job(gb=10.0), 0)
    # preempted in us-west-2 at t2: on demand there ($4/h), so no egress
    assert result.egress_usd == 0.0
    assert result.cost == pytest.approx(2 * 1.0 + 4 * 4.0)


def test_every_landed_launch_pays_its_request_charge_and_every_request_counts() -> None:
    market = traces("00" + "1" * 10, places=[EAST])
    result = simulate(Scripted([spot(0)]), market, moved_job(fee=0.25), 0, visibility=PROBE)
    assert (result.requests, result.failed_requests) == (3, 2)
    assert result.request_usd == pytest.approx(0.25)
    assert result.cost == pytest.approx(0.25 + 5 * 1.0)


def test_a_failed_request_keeps_what_runs_on_a_fleet_and_ends_it_on_a_teardown() -> None:
    market = traces("1" * 12, "0" * 12, places=[EAST, EAST])
    actions = [spot(0), spot(0), spot(1), spot(0)]
    kept = simulate(
        Scripted(actions), market, moved_job(), 0, visibility=PROBE_NO_WAIT, provider=FLEET
    )
    ended = simulate(
        Scripted(actions), market, moved_job(), 0, visibility=PROBE_NO_WAIT, provider=TEARDOWN
    )
    assert kept.failed_requests >= 1 and kept.finish_tick == 5 and kept.changeovers == 1
    # the teardown lost the instance at t2 and started again: one more changeover, later
    assert ended.changeovers == 2 and ended.finish_tick > kept.finish_tick


PROBE_NO_WAIT = Visibility(observe="probe", probe_seconds=60)


def test_a_request_naming_many_pools_lands_in_the_cheapest_available() -> None:
    prices = [[2.0] * 8, [1.0] * 8, [0.5] * 8]
    market = traces("11111111", "11111111", "00000000", prices=prices)
    result = simulate(Scripted([request([0, 1, 2])]), market, job(3, 8, 1), 0, visibility=PROBE)
    assert result.cost == pytest.approx(4 * 1.0) and result.requests == 1


def test_waiting_while_on_demand_stops_it_and_keeps_the_checkpoint_there() -> None:
    market = traces("0" * 12, places=[WEST])
    policy = Scripted([Action(ON_DEMAND, region=0), ON_DEMAND, ON_DEMAND, NONE])
    simulate(policy, market, moved_job(), 0)
    assert policy.regions[3:5] == [0, 0]


def test_asks_while_on_demand_are_counted_per_pool_per_changeover_of_time() -> None:
    market = traces("0" * 12, "0" * 12)
    on_demand_then_ask = [ON_DEMAND, ON_DEMAND] + [request([0, 1])] * 10
    result = simulate(
        Scripted(on_demand_then_ask), market, moved_job(), 0, visibility=PROBE_NO_WAIT
    )
    # on demand t0 (its 1 h changeover) to t4, the work done; both pools named at t2, t3, t4:
    # 3 asks of each pool in 5 changeovers' time on demand (the launch on demand is a request)
    assert (result.on_demand_ticks, result.requests) == (5, 4)
    assert result.on_demand_asks == pytest.approx(3 / 5)
