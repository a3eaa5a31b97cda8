"""Uniform progress on a hand-made trace (1 h ticks: hours are ticks), worked out by hand."""

from __future__ import annotations

from spotwise.policy.policies.uniform_progress import UniformProgress
from spotwise.policy.simulate import context_for, simulate
from tests.policy.helpers import job, traces


def test_the_line_is_the_work_spread_evenly_to_the_deadline() -> None:
    policy = UniformProgress()
    policy.reset(context_for(traces("1" * 12), job(4, 12, 1), 0))
    assert [policy.expected_progress(t) for t in (0, 3, 6, 12)] == [0, 1, 2, 4]


def test_behind_with_no_spot_it_runs_on_demand_until_two_changeovers_ahead_then_waits() -> None:
    """4 ticks of work by tick 12, changeover 1: ep(t) = t/3. t0: on the line, waits. t1:
    behind (0 < 1/3), no spot: on-demand (t1 changeover, t2 t3 work). t4: progress 2 >=
    ep(4 + 2) = 2, ahead: no spot to take, so it stops and waits. t5, t6: 2 >= ep(t), waits.
    t7: behind again (2 < 7/3): on-demand (t7 changeover, t8 t9 work); at t8 and t9 it stays
    (2 < ep(10), 3 < ep(11)). Two stints of 3 ticks, done at t10."""
    result = simulate(UniformProgress(), traces("0" * 12), job(4, 12, 1), 0)
    assert result.done and result.finish_tick == 10
    assert (result.on_demand_ticks, result.changeovers, result.spot_ticks) == (6, 2, 0)
    assert result.cost == 6 * 3.0
