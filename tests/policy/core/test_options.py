"""A tick's options priced by their expected cost to finish."""

from __future__ import annotations

import numpy as np
import pytest

from spotwise.policy.core.continuation import Continuation
from spotwise.policy.core.options import Segments, land, on_demand, request, stay

SEG = Segments(work=10.0, slack=20.0, changeover=2.0, lost=0.0, failed_slack=1.0)
CHEAP = Continuation.of(
    np.array([1.0]), np.array([0.9]), np.array([40.0]), 2.0, 3.0, any_share=0.9, spread=1.0
)


def test_a_run_that_outlasts_the_work_finishes_it_for_its_price_and_move() -> None:
    cost = land(SEG, CHEAP, np.array([0.5]), np.array([100.0]), np.array([0.4]))
    assert cost[0] == pytest.approx(0.4 + 0.5 * (10 + 2))


def test_a_cheaper_pool_costs_less_to_finish_in_and_a_dearer_stay_more() -> None:
    prices = np.array([0.5, 1.5])
    landed = land(SEG, CHEAP, prices, np.array([30.0, 30.0]), np.zeros(2))
    assert landed[0] < landed[1]
    assert stay(SEG, CHEAP, 0.5, 30.0) < stay(SEG, CHEAP, 1.5, 30.0)


def test_staying_on_demand_costs_no_changeover_and_starting_it_does() -> None:
    price = np.array([3.0])
    running = on_demand(SEG, CHEAP, price, np.zeros(1), 5.0, np.array([False]))
    starting = on_demand(SEG, CHEAP, price, np.zeros(1), 5.0, np.array([True]))
    assert running[0] < starting[0]


def test_a_request_names_only_pools_better_than_failing_best_first() -> None:
    landed = np.array([5.0, 3.0, 9.0])
    chance = np.array([0.5, 0.5, 0.5])
    expected, named = request(landed, chance, failed=6.0)
    assert named == [1, 0]
    assert 3.0 < expected < 6.0
    # pools that go down together: in an outage the request lands at most as often as it ends
    capped, _ = request(landed, chance, failed=6.0, any_chance=0.1)
    assert capped == pytest.approx(0.1 * (0.5 * 3 + 0.25 * 5) / 0.75 + 0.9 * 6.0)
    assert request(landed, chance, failed=2.0) == (2.0, [])
