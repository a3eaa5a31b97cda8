"""The learned policy acting in the simulator."""

from __future__ import annotations

import numpy as np

from spotwise.policy import load
from spotwise.policy.job import REFERENCE
from spotwise.policy.simulate import JobRun, Visibility, context_for, simulate
from spotwise.policy.traces import Pool, TraceSet


def test_a_job_over_more_pools_than_it_was_trained_for_is_played_on_the_most_available() -> None:
    rng = np.random.default_rng(0)
    available = rng.random((13, 2000)) < np.linspace(0.3, 0.9, 13)[:, None]
    market = TraceSet(
        pools=tuple(Pool(name=f"p{i}") for i in range(13)), gap_seconds=600, available=available
    )
    chosen = load("ppo")
    result = simulate(chosen, market, REFERENCE, 800, visibility=Visibility(observe="probe"))
    assert result.done
    asked = set()
    run = JobRun(market, REFERENCE, 800, visibility=Visibility(observe="probe"))
    chosen.reset(context_for(market, REFERENCE, 800, visibility=Visibility(observe="probe")))
    while not run.over:
        action = chosen.act(run.observe())
        asked |= set(action.named_pools())
        run.step(action)
    assert asked and asked <= set(range(4, 13))  # the 9 most available: the last nine
