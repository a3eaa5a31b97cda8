"""The prior a pool's risk starts from: pooled over the pools a store saw, and checked."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spotwise.pricing.forecast.prior import PoolPrior, pooled_prior


def test_the_pooled_prior_is_the_mean_run_and_the_available_share_over_every_pool() -> None:
    # pool 0: up, up, down, up -> two runs (ticks 0-1 and 3), three up ticks
    # pool 1: never up         -> no run, no up tick
    # 3 up ticks / 2 runs = 1.5 ticks a run, x 0.5 h a tick = 0.75 h; 3 of 8 ticks up = 0.375
    past = np.array([[True, True, False, True], [False, False, False, False]])
    prior = pooled_prior(past, 0.5, "two pools")
    assert prior == PoolPrior(mean_run_hours=0.75, available_share=0.375, source="two pools")


def test_pools_never_up_give_a_one_tick_run_and_no_share_not_a_division_by_zero() -> None:
    # no run and no up tick: max(0, 1) / max(0, 1) = one tick of 195 s; 0 of 6 ticks up
    prior = pooled_prior(np.zeros((3, 2), dtype=bool), 195 / 3600, "dark")
    assert prior.mean_run_hours == pytest.approx(195 / 3600)
    assert prior.available_share == 0.0


@pytest.mark.parametrize(
    ("mean_run_hours", "available_share"),
    [(0.0, 0.5), (-1.0, 0.5), (math.nan, 0.5), (math.inf, 0.5), (2.0, 1.01), (2.0, -0.01)],
)
def test_a_prior_with_no_run_length_or_a_share_outside_0_1_is_refused(
    mean_run_hours: float, available_share: float
) -> None:
    with pytest.raises(ValueError, match="must be"):
        PoolPrior(mean_run_hours=mean_run_hours, available_share=available_share)


def test_a_share_of_exactly_0_or_1_is_a_prior() -> None:
    assert PoolPrior(mean_run_hours=1e-9, available_share=0.0).available_share == 0.0
    assert PoolPrior(mean_run_hours=1e9, available_share=1.0).available_share == 1.0
