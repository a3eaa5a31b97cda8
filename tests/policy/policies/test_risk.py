"""A job's side of the risk forecast: the history and prior it is given, and whether it knows
fresh that some pool is up."""

from __future__ import annotations

import math

from spotwise.policy.policies.base import NONE, ON_DEMAND, spot
from spotwise.policy.policies.risk import fresh_any_up, job_history, prior_of
from spotwise.policy.simulate import Visibility, context_for
from spotwise.pricing.forecast.prior import DEFAULT_PRIOR, PoolPrior
from tests.policy.helpers import job, observation, traces

INF = math.inf


def test_a_job_is_given_its_past_its_tick_length_and_its_prior_or_the_default() -> None:
    # 30-minute ticks; the job starts at tick 3, so its past is ticks 0-2.
    set_ = traces("1101", "0111", gap=1800)
    plain = context_for(set_, job(1, 2, 0), 3)
    history = job_history(plain)
    assert history.past_available.tolist() == [[True, True, False], [False, True, True]]
    assert history.hours_per_tick == 0.5
    assert prior_of(plain) is DEFAULT_PRIOR and history.prior is DEFAULT_PRIOR
    own = PoolPrior(mean_run_hours=5, available_share=0.7)
    given = context_for(set_, job(1, 2, 0), 3, visibility=Visibility(prior=own))
    assert prior_of(given) is own and job_history(given).prior is own


def test_seeing_every_pool_the_truth_of_this_tick_is_fresh() -> None:
    assert fresh_any_up(observation(0, 0, NONE, [False, True])) is True
    assert fresh_any_up(observation(0, 0, spot(0), [False, False])) is False  # preempted now


def test_blind_a_pool_counts_up_if_it_runs_there_or_was_seen_up_this_tick_or_the_last() -> None:
    def blind(state: int, last_seen: list[bool], seen_age: list[float]) -> bool | None:
        obs = observation(9, 0, state, [True, True], last_seen=last_seen, seen_age=seen_age)
        return fresh_any_up(obs)

    assert blind(spot(1), [False, False], [5, 5]) is True  # it runs there
    assert blind(NONE, [True, False], [1, 3]) is True  # pool 0 seen up a tick ago
    assert blind(ON_DEMAND, [False, True], [0, 3]) is False  # down now; the up is stale
    assert blind(NONE, [True, True], [2, INF]) is None  # nothing seen that fresh
