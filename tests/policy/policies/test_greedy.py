"""Greedy on hand-made traces (1 h ticks: hours are ticks), each run worked out by hand."""

from __future__ import annotations

from spotwise.policy.policies.greedy import Greedy
from spotwise.policy.simulate import simulate
from tests.policy.helpers import job, traces


def test_with_no_spot_it_waits_until_the_safety_net_then_runs_on_demand_to_the_end() -> None:
    """3 ticks of work by tick 10, changeover 1: the margin is 2 changeovers, so it waits
    while the slack (10 - t) - 3 is above 2, to t5; then t5 changeover, t6-t8 work. The spot
    that comes back at t5 is not taken: on-demand is for good."""
    result = simulate(Greedy(), traces("0000011111"), job(3, 10, 1), 0)
    assert result.done and result.finish_tick == 9
    assert (result.on_demand_ticks, result.spot_ticks, result.changeovers) == (4, 0, 1)
    assert result.cost == 4 * 3.0


def test_it_keeps_spot_until_preempted_then_fails_over_to_the_pool_up_most_so_far() -> None:
    """t0: z0 and z2 up, 1 tick each: the tie goes to z0. t0 changeover, t1 t2 work. t3: z0
    is gone; z1 (up 1 tick so far, priced 5) and z2 (up 3 ticks) are up: z2. t3 changeover,
    t4 t5 work. Billed 6 ticks at 1.0; failing over to z1 would have cost 3 + 3·5."""
    prices = [[1.0] * 12, [5.0] * 12, [1.0] * 12]
    rows = ("111000000000", "000111111111", "110111111111")
    result = simulate(Greedy(), traces(*rows, prices=prices), job(4, 12, 1), 0)
    assert result.done and result.finish_tick == 6
    assert (result.preemptions, result.changeovers, result.spot_ticks) == (1, 2, 6)
    assert result.cost == 6.0
