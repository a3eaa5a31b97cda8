"""The availability hazard: run lengths by age, recency weights, the prior's shrinkage, and the
market forecast's reversion to the long-run share."""

from __future__ import annotations

import numpy as np
import pytest

from spotwise.pricing.forecast.hazard import AvailabilityHazard, MarketForecast


def test_hazard_learns_run_lengths_and_conditions_on_age() -> None:
    # Runs of 2, 2 and 6 ticks, each followed by a gap; equal weights (huge half-life).
    past = np.array([[c == "1" for c in "110110111111000"]])
    hazard = AvailabilityHazard(past, half_life_ticks=1e9)
    assert hazard.expected_remaining(0, age=0) == pytest.approx((2 + 2 + 6) / 3)
    assert hazard.expected_remaining(0, age=3) == pytest.approx(3.0)  # only the 6-run lasts
    assert hazard.expected_remaining(0, age=10) == 10.0  # beyond every run: its own age
    hazard.observe(0, np.array([True]))
    hazard.observe(1, np.array([True]))
    hazard.observe(2, np.array([False]))  # a 2-tick run ends
    assert hazard.mean_run(0) == pytest.approx((2 + 2 + 6 + 2) / 4)


def test_hazard_weights_recent_runs_more() -> None:
    past = np.array([[c == "1" for c in "1111111100" + "10" * 20]])
    slow = AvailabilityHazard(past, half_life_ticks=1e9).mean_run(0)
    fast = AvailabilityHazard(past, half_life_ticks=4).mean_run(0)
    assert fast < slow  # the old long run has faded


def test_hazard_shrinks_toward_as_long_again_when_only_stale_runs_outlast_the_age() -> None:
    # One 100-tick run long ago, then many 6-tick runs: at age 6, only the stale run is longer.
    past = np.array([[c == "1" for c in "1" * 100 + "0" * 400 + ("1" * 6 + "00") * 20]])
    plain = AvailabilityHazard(past, half_life_ticks=50)
    shrunk = AvailabilityHazard(past, half_life_ticks=50, prior_weight=1.0)
    assert plain.expected_remaining(0, age=6) == pytest.approx(94.0)  # the stale run alone
    assert shrunk.expected_remaining(0, age=6) == pytest.approx(6.0, abs=0.1)  # as long again
    # it weighs as one run: among twenty equally weighted 40-tick runs it hardly matters
    fresh = np.array([[c == "1" for c in ("1" * 40 + "00") * 20]])
    hazard = AvailabilityHazard(fresh, half_life_ticks=1e9, prior_weight=1.0)
    assert hazard.expected_remaining(0, age=6) == pytest.approx((20 * 34 + 6) / 21)


def test_a_run_found_up_after_an_unseen_while_is_judged_by_the_ages_it_may_have() -> None:
    # Many 1-tick flickers and a few 40-tick runs: a falling hazard. Found up right after it
    # was seen down, a run is most likely a flicker; found up after 30 unseen ticks, it is more
    # likely one of the long runs, so more of it is ahead.
    past = np.array([[c == "1" for c in ("10" * 8 + "1" * 40 + "00") * 5]])
    falling = AvailabilityHazard(past, half_life_ticks=1e9)
    fresh = falling.mean_run(0)
    assert falling.expected_remaining_up_within(0, 1) == pytest.approx(fresh)
    assert falling.expected_remaining_up_within(0, 30) > 2 * fresh
    # Runs all of 10 ticks: a rising hazard, so an older run has less ahead of it.
    rising = AvailabilityHazard(np.array([[c == "1" for c in ("1" * 10 + "00") * 5]]), 1e9)
    assert rising.expected_remaining_up_within(0, 8) < rising.mean_run(0) == 10


def test_the_chance_a_run_ends_soon_is_read_off_the_past_runs_of_its_age() -> None:
    # Runs of 2, 2 and 6 ticks, the pool now up for 3 ticks: only the 6-run lasted that long.
    past = np.array([[c == "1" for c in "110110111111000111"]])
    hazard = AvailabilityHazard(past, half_life_ticks=1e9)
    assert hazard.age[0] == 3
    assert hazard.p_end_within(0, 2) == 0.0  # the 6-run had 3 more ticks
    assert hazard.p_end_within(0, 3) == 1.0
    hazard.observe(0, np.array([False]))
    assert hazard.p_end_within(0, 1) == 1.0  # down: taken back already


def test_the_spot_share_of_a_far_horizon_reverts_to_the_long_run_share() -> None:
    # Spot was always there for a week, then gone for the last 12 hours (hourly ticks).
    past = np.array([[True] * 168 + [False] * 12])
    forecast = MarketForecast(past, half_life_ticks=6, reversion_ticks=12)
    near, far = forecast.spot_share(0, 1), forecast.spot_share(0, 48)
    assert near < 0.3 < 0.6 < far  # the storm dominates the next hour, not the next two days
    plain = MarketForecast(past, half_life_ticks=6)
    assert plain.spot_share(0, 48) == pytest.approx(plain.spot_share(0, 1))


def test_hazard_counts_an_open_run_as_age_not_as_a_finished_run() -> None:
    hazard = AvailabilityHazard(np.array([[False, True, True, True]]), half_life_ticks=10)
    assert hazard.age[0] == 3
    assert hazard.mean_run(0) == 1.0  # no finished run yet: age 0 → at least one tick


def test_an_instance_lost_before_its_pool_was_seen_up_counts_as_a_one_tick_run() -> None:
    past = np.array([[c == "1" for c in "1111111100"]])  # one 8-tick run
    hazard = AvailabilityHazard(past, half_life_ticks=1e9)
    hazard.observe(0, np.array([False]))
    hazard.run_ended(1, 0)  # landed at tick 0 while seen down, taken back at tick 1
    hazard.observe(1, np.array([False]))
    assert hazard.mean_run(0) == pytest.approx((8 + 1) / 2)


def test_a_run_seen_up_is_closed_by_what_is_seen_not_counted_twice() -> None:
    past = np.array([[c == "1" for c in "1111111100"]])
    hazard = AvailabilityHazard(past, half_life_ticks=1e9)
    for tick, up in enumerate([True, True, True]):
        hazard.observe(tick, np.array([up]))
    hazard.run_ended(3, 0)
    hazard.observe(3, np.array([False]))
    assert hazard.mean_run(0) == pytest.approx((8 + 3) / 2)
