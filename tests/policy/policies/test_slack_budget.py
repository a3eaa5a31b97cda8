"""The slack budget, and the rules of ``risk_aware`` that read it on tight deadlines."""

from __future__ import annotations

import math

import numpy as np

from spotwise.policy import load
from spotwise.policy.policies.slack_budget import SlackBudget, SpellBook
from spotwise.policy.simulate import Visibility, simulate
from spotwise.pricing.forecast.prior import PoolPrior
from tests.policy.helpers import job, traces

PRIOR = PoolPrior(mean_run_hours=6.0, available_share=0.7)


def book(pattern: str) -> SpellBook:
    return SpellBook(np.array([c == "1" for c in pattern]), 1e6, PRIOR, 1.0)


def test_an_outage_is_waited_out_as_long_as_the_slack_carries_the_work_left() -> None:
    spells = book(("1" * 8 + "0" * 4) * 10)  # 8 h runs, 4 h outages
    budget = SlackBudget(spells, run=8.0, changeover=1.0)
    assert budget.wait_limit(spare=1000.0, work=40.0) == math.inf  # wait every outage out
    tight = budget.wait_limit(spare=12.0, work=40.0)
    assert tight is not None and tight < 4  # run on demand through them instead
    assert budget.wait_limit(spare=2.0, work=40.0) is None  # not even that fits


def test_outages_cost_what_the_job_has_seen_and_a_long_one_grows_with_its_age() -> None:
    cold = SpellBook(np.zeros(0, dtype=bool), 1e6, PRIOR, 1.0)
    waited, _ = cold.outage_costs(np.array([math.inf]))
    assert waited[0] == 0.0  # no outage seen yet: none is bought on the prior's word
    for tick in range(6):
        cold.observe(tick, tick == 0)
    waited, longer = cold.outage_costs(np.array([2.0, math.inf]))
    assert waited[1] > waited[0] > 0 and longer[0] > 0  # the outage under way counts


def test_a_tight_job_runs_on_demand_through_a_long_outage_and_returns_to_spot() -> None:
    """The issue's cold start: a job with four hours of slack starts in a long outage. Greedy
    waits its slack away and runs on demand to the end while spot is back; ``risk_aware`` goes
    on demand once the outage has outlasted what the slack affords, and back to spot when a run
    pays for its changeovers."""
    history = ("1" * 10 + "0000") * 20
    market = traces(history + "0" * 16 + "1" * 30 + "0" + "1" * 40)
    spec, start = job(40, 52, 1), len(history)
    seen = Visibility(observe="probe", history_hours=0.0, prior=PRIOR)
    greedy = simulate(load("greedy"), market, spec, start, None, seen)
    best = simulate(load("risk_aware"), market, spec, start, None, seen)
    assert greedy.done and best.done
    assert best.spot_ticks > greedy.spot_ticks
    assert best.on_demand_ticks > 0 and best.cost < greedy.cost
