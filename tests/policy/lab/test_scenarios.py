"""The synthetic market generator: fitted on training parts only, seeded, labelled synthetic,
and its regime knobs move the market the way they say."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from spotwise.policy.lab.scenarios import Regime, fit_market, generate, is_synthetic
from spotwise.policy.traces import TraceSet, load_traces
from tests.conftest import DATA

BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"


@pytest.fixture(scope="module")
def bundled() -> TraceSet:
    return load_traces(BUNDLED)


def drops(traces: TraceSet) -> int:
    return int((np.diff(traces.available.astype(np.int8), axis=1) == -1).sum())


def test_the_generator_never_reads_past_the_cut(bundled: TraceSet) -> None:
    cut = bundled.n_ticks // 2
    changed = bundled.available.copy()
    changed[:, cut:] = ~changed[:, cut:]
    other = dataclasses.replace(bundled, available=changed)
    one = generate(fit_market("s", bundled, cut, calendar=True), Regime(), 200, seed=3)
    two = generate(fit_market("s", other, cut, calendar=True), Regime(), 200, seed=3)
    assert (one.available == two.available).all()


def test_a_seed_is_a_market_and_every_pool_says_synthetic(bundled: TraceSet) -> None:
    model = fit_market("aws-02-15-2023", bundled, bundled.n_ticks * 2 // 3, calendar=True)
    one, again = (generate(model, Regime(), 100, seed=7) for _ in range(2))
    assert (one.available == again.available).all()
    assert is_synthetic(one) and not is_synthetic(bundled)
    assert all(p.name.startswith("synthetic:aws-02-15-2023:fitted:") for p in one.pools)


def test_the_fitted_regime_keeps_each_pools_share_of_up_time(bundled: TraceSet) -> None:
    cut = bundled.n_ticks * 2 // 3
    model = fit_market("s", bundled, cut, calendar=True)
    market = generate(model, Regime(), 24 * 60, seed=1)
    real = bundled.available[:, :cut].mean(axis=1)
    assert np.abs(market.available.mean(axis=1) - real).max() < 0.15


def test_the_regime_knobs_move_the_market_the_way_they_say(bundled: TraceSet) -> None:
    model = fit_market("s", bundled, bundled.n_ticks * 2 // 3, calendar=True)
    hours = 24 * 30

    def market(**knobs: float) -> TraceSet:
        return generate(model, Regime(name="k", **knobs), hours, seed=5)

    calm, flickering = market(mean_spell=2.0), market(mean_spell=0.3)
    assert calm.available.mean() > flickering.available.mean()
    assert drops(flickering) > drops(calm)
    assert (
        market(storms_per_day=2.0).available.any(axis=0).mean()
        < market().available.any(axis=0).mean()
    )
    together, apart = market(correlation=0.9), market(correlation=0.0)
    falls = np.diff(together.available.astype(np.int8), axis=1) == -1
    shared = (falls.sum(axis=0) >= 2).sum()
    falls_apart = np.diff(apart.available.astype(np.int8), axis=1) == -1
    assert shared > (falls_apart.sum(axis=0) >= 2).sum()
