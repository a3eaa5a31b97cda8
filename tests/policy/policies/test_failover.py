"""Choosing a spot pool by its availability so far, seeing every pool or only what requests
teach; counts worked out by hand from each pool's past and the ticks observed."""

from __future__ import annotations

import math

from spotwise.policy.observe import ObserveMode
from spotwise.policy.policies.base import NONE, Action, spot
from spotwise.policy.policies.failover import FailoverChooser
from spotwise.policy.simulate import Visibility, context_for
from tests.policy.helpers import job, observation, traces


def chooser(*past: str, observe: ObserveMode = "all") -> FailoverChooser:
    """A chooser for a job starting after ``past`` (one string of 1/0 per pool)."""
    start = len(past[0])
    rows = [row + "1" * 4 for row in past]
    context = context_for(
        traces(*rows), job(2, 4, 0), start, visibility=Visibility(observe=observe)
    )
    return FailoverChooser(context)


def test_the_available_pool_with_the_most_available_ticks_wins_and_none_means_wait() -> None:
    pick = chooser("101", "111", "000")  # past counts 2, 3, 0
    obs = observation(0, 0, NONE, [True, True, True])
    pick.observe(obs)  # 3, 4, 1
    assert pick.best_available(obs) == spot(1)
    assert pick.choose(obs) == Action(spot(1))
    only_0 = observation(1, 0, NONE, [True, False, False])
    pick.observe(only_0)
    assert pick.choose(only_0) == Action(spot(0))  # the best of those available
    nothing = observation(2, 0, NONE, [False, False, False])
    pick.observe(nothing)
    assert pick.best_available(nothing) == NONE and pick.choose(nothing) == Action(NONE)


def test_a_tick_observed_twice_counts_once() -> None:
    pick = chooser("111", "110")  # past counts 3, 2
    tick_0 = observation(0, 0, NONE, [False, True])
    pick.observe(tick_0)
    pick.observe(tick_0)  # 3, 3 (3, 4 if counted twice)
    tick_1 = observation(1, 0, NONE, [True, True])
    pick.observe(tick_1)  # 4, 4: the tie goes to the first pool (4, 5 would pick pool 1)
    assert pick.choose(tick_1) == Action(spot(0))


def test_blind_it_asks_for_every_pool_not_just_seen_down_best_first() -> None:
    pick = chooser("100", "111", "110", observe="probe")  # past counts 1, 3, 2
    # Pool 0 seen down this tick, pool 1 seen up 2 ticks ago, pool 2 never seen.
    obs = observation(
        0, 0, NONE, [True, False, True], last_seen=[False, True, False], seen_age=[0, 2, math.inf]
    )
    pick.observe(obs)  # counts what it believes: 1, 4, 2
    assert pick.choose(obs) == Action(spot(1), also=(2,))
    down = observation(1, 0, NONE, [True, True, True], last_seen=[False] * 3, seen_age=[0] * 3)
    pick.observe(down)
    assert pick.choose(down) == Action(NONE)  # every pool just seen down: nothing to ask
