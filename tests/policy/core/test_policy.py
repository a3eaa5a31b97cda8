"""The core policy in the simulator, on hand-made priced markets (1 h ticks)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from spotwise import policy
from spotwise.policy.core.policy import CorePolicy, FlatCorePolicy
from spotwise.policy.policies.base import ON_DEMAND, SPOT0
from spotwise.policy.simulate import JobRun, Visibility, context_for, simulate
from spotwise.policy.traces import Pool, TraceSet
from tests.policy.helpers import job

PAST = 96
PROBE = Visibility(observe="probe", probe_seconds=60)


def priced(*rows: str, prices: list[float], past: str = "1" * 9 + "0") -> TraceSet:
    """Pools with a common past of short runs, then ``rows``; each at its own price."""
    history = (past * (PAST // len(past) + 1))[:PAST]
    available = np.array([[c == "1" for c in history + row] for row in rows])
    n = available.shape[1]
    return TraceSet(
        pools=tuple(Pool(name=f"z{i}", spot_price=p) for i, p in enumerate(prices)),
        gap_seconds=3600,
        available=available,
        prices=np.array([[p] * n for p in prices]),
    )


def test_it_leaves_a_dear_pool_for_a_cheaper_one_that_came_back() -> None:
    market = priced("1" * 60, "0" * 4 + "1" * 56, prices=[2.5, 0.5])
    spec = job(20, 40, 1)
    core = simulate(CorePolicy(), market, spec, PAST, visibility=PROBE)
    greedy = simulate(policy.load("greedy"), market, spec, PAST, visibility=PROBE)
    assert core.done and core.moves >= 1
    assert core.cost < greedy.cost
    assert greedy.moves == 0  # a failover keeps the dear pool until it is preempted


def test_a_pool_dearer_than_on_demand_is_never_asked() -> None:
    market = priced("1" * 60, "0" * 60, prices=[3.5, 0.5])
    spec = job(10, 30, 1)
    run = JobRun(market, spec, PAST, visibility=PROBE)
    chosen = CorePolicy()
    chosen.reset(context_for(market, spec, PAST, visibility=PROBE))
    asked = set()
    while not run.over:
        action = chosen.act(run.observe())
        asked |= set(action.named_pools())
        run.step(action)
    assert 0 not in asked and run.result().done


def test_a_spot_decision_bids_between_its_price_and_on_demand() -> None:
    market = priced("1" * 60, "1" * 60, prices=[1.0, 2.0])
    spec = job(10, 30, 1)
    chosen = CorePolicy()
    chosen.reset(context_for(market, spec, PAST, visibility=PROBE))
    run = JobRun(market, spec, PAST, visibility=PROBE)
    bids = []
    while not run.over:
        obs = run.observe()
        action = chosen.act(obs)
        if action.instance >= SPOT0 and action.bid is not None:
            bids.append((action.bid, float(obs.prices[action.instance - SPOT0])))
        run.step(action)
    assert bids and all(price <= bid <= spec.on_demand_price for bid, price in bids)


def test_the_explanation_prices_each_option_in_dollars() -> None:
    market = priced("1" * 60, "0" * 4 + "1" * 56, prices=[2.5, 0.5])
    spec = job(20, 40, 1)
    chosen = CorePolicy()
    chosen.reset(context_for(market, spec, PAST, visibility=PROBE))
    run = JobRun(market, spec, PAST, visibility=PROBE)
    reasons = []
    while not run.over:
        obs = run.observe()
        action = chosen.act(obs)
        if obs.state >= SPOT0 and action.instance != obs.state and action.instance != ON_DEMAND:
            reasons.append(chosen.why)
        run.step(action)
    assert reasons and "spot in z1: $" in str(reasons[0]) and "stay in z0: $" in str(reasons[0])


def test_the_flat_ablation_reads_the_prior_alone_and_never_learns() -> None:
    market = priced("10" * 30, "1" * 60, prices=[1.0, 1.0], past="1" * 40 + "0")
    context = context_for(market, job(10, 30, 1), PAST, visibility=PROBE)
    flat, learned = FlatCorePolicy(), CorePolicy()
    flat.reset(context)
    learned.reset(context)
    run = JobRun(market, job(10, 30, 1), PAST, visibility=PROBE)
    runs = []
    while not run.over:
        obs = run.observe()
        flat.act(replace(obs))
        runs.append(tuple(flat._beliefs.mean_run()))
        run.step(learned.act(obs))
    assert len(set(runs)) == 1  # the prior's, every tick
    assert not np.allclose(learned._beliefs.mean_run(), runs[0])
