"""What a job believes of each pool: runs, shares and the chance a pool is up now."""

from __future__ import annotations

import numpy as np

from spotwise.policy.core.beliefs import PoolBeliefs
from spotwise.policy.policies.risk import fit_past
from spotwise.policy.simulate import Visibility, context_for
from tests.policy.helpers import job, observation, traces

PROBE = Visibility(observe="probe")


def beliefs(*rows: str) -> PoolBeliefs:
    market = traces(*rows)
    context = context_for(market, job(5, 20, 1), len(rows[0]) - 10, visibility=PROBE)
    fit = fit_past(context)
    return PoolBeliefs(context, fit.forecast, fit.spells, learn=True)


def test_a_pool_seen_down_long_ago_is_up_with_about_its_share() -> None:
    b = beliefs("110" * 40, "10" * 60)
    run, share = b.mean_run(), b.share()
    just = b.up_chance(
        observation(0, 0, 0, [False, False], last_seen=[False, False], seen_age=[0, 0]), run, share
    )
    later = b.up_chance(
        observation(0, 0, 0, [False, False], last_seen=[False, False], seen_age=[3, 3]), run, share
    )
    long_ago = b.up_chance(
        observation(0, 0, 0, [False, False], last_seen=[False, False], seen_age=[1e6, 1e6]),
        run,
        share,
    )
    assert np.all(just == 0.0)
    assert np.all((later > 0) & (later < long_ago))
    assert np.allclose(long_ago, share)


def test_the_share_of_time_up_follows_the_past() -> None:
    b = beliefs("1" * 110 + "0" * 10, "0" * 90 + "1" * 30)
    share = b.share()
    assert share[0] > share[1]
