"""The continuation: what the rest of a job is expected to cost from its work and slack."""

from __future__ import annotations

import numpy as np
import pytest

from spotwise.policy.core.continuation import Continuation, _apartness

OD = 3.0


def market(share: float = 0.8, run: float = 50.0, cost: float = 1.0) -> Continuation:
    return Continuation.of(
        np.array([cost]), np.array([share]), np.array([run]), 2.0, OD, any_share=share, spread=1.0
    )


def test_with_no_pool_cheaper_than_on_demand_the_rest_is_all_on_demand() -> None:
    dear = market(cost=OD + 1)
    assert dear.value(np.array([10.0]), np.array([100.0]))[0] == pytest.approx(10 * OD)


def test_more_slack_never_costs_more_and_more_work_never_costs_less() -> None:
    m = market()
    slack = np.linspace(0, 200, 41)
    by_slack = m.value(np.full_like(slack, 100.0), slack)
    assert np.all(np.diff(by_slack) <= 1e-9)
    work = np.linspace(0, 200, 41)
    by_work = m.value(work, np.full_like(work, 50.0))
    assert np.all(np.diff(by_work) >= -1e-9)


def test_plenty_of_slack_buys_spot_and_none_forces_on_demand() -> None:
    m = market()
    rich = m.value(np.array([100.0]), np.array([10_000.0]))[0]
    poor = m.value(np.array([100.0]), np.array([0.0]))[0]
    assert rich == pytest.approx(100 * float(m.cost[0]), rel=1e-3)
    assert rich < poor <= 100 * OD


def test_pools_are_placed_between_moving_together_and_apart_by_how_often_some_is_up() -> None:
    share = np.array([0.5, 0.5])
    assert _apartness(share, 0.5) == 0.0  # some pool up only as often as the best: together
    assert _apartness(share, 0.75) == pytest.approx(1.0)  # 1 - 0.5 * 0.5: independent
    together = Continuation.of(
        np.ones(2), share, np.full(2, 50.0), 2.0, OD, any_share=0.5, spread=1.0
    )
    apart = Continuation.of(
        np.ones(2), share, np.full(2, 50.0), 2.0, OD, any_share=0.75, spread=1.0
    )
    assert apart.rate[-1] > together.rate[-1]
