"""On-demand only, the baseline every saving is measured against."""

from __future__ import annotations

from spotwise.policy.policies.on_demand import OnDemand
from spotwise.policy.simulate import simulate
from tests.policy.helpers import job, traces


def test_it_runs_on_demand_from_the_first_tick_even_with_spot_always_up() -> None:
    """3 ticks of work, changeover 2: t0 t1 changeover, t2-t4 work; 5 ticks at 3.0, which is
    what the cost ratio divides by (compute plus one changeover on demand): ratio 1."""
    result = simulate(OnDemand(), traces("1" * 8), job(3, 8, 2), 0)
    assert result.done and result.finish_tick == 5
    assert (result.on_demand_ticks, result.spot_ticks, result.changeovers) == (5, 0, 1)
    assert result.cost == 15.0 and result.cost_ratio == 1.0
