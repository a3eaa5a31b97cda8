"""The RiskForecaster contract, for every forecaster registered in ``RISK_FORECASTERS`` (each
with the shipped configuration's values): registering one puts it under these tests.

- Built under its own name, it keeps the configuration it was fitted with.
- Its expected runs are finite and not negative, its hazard positive, its spot share in
  [0, 1]; P(preempted within h) is in [0, 1], does not fall as h grows, and is 0 within no
  time for a pool that is up: after fitting and after every update.
- A pool kept down does not look better as the ticks pass: its expected run lowers or keeps.
- A cold history (no ticks) with a prior gives the prior's mean run (shrunk toward "as long
  again" by the configuration's pseudo-runs, and exactly it with none).
- Fitting twice on the same history, updated alike, gives the same answers.
- A configuration naming a forecaster not registered is refused, naming those that are.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np
import pytest

from spotwise.pricing.forecast.prior import PoolPrior
from spotwise.pricing.forecast.risk_forecasters import (
    RISK_FORECASTERS,
    SHIPPED_RISK,
    History,
    RiskConfig,
    RiskForecaster,
)

NAMES = sorted(RISK_FORECASTERS)
HOURS_PER_TICK = 0.1
TICKS = (0.0, 0.5, 1.0, 2.0, 5.0, 20.0, 100.0, 1e4)
"""Horizons P(preempted within) is asked for, in ticks (fractions too)."""
PRIOR = PoolPrior(mean_run_hours=3.0, available_share=0.6, source="the contract's")


def past() -> np.ndarray:
    """bool [3 pools, 400 ticks]: flickers among long runs, up at the end; regular 10-tick runs,
    down at the end; never up."""
    rng = np.random.default_rng(7)
    lengths = np.where(rng.random(60) < 0.5, rng.integers(1, 3, 60), rng.integers(10, 40, 60))
    runs = [np.r_[np.ones(n, bool), np.zeros(rng.integers(1, 6), bool)] for n in lengths]
    mixed = np.concatenate(runs)
    mixed = np.r_[mixed[:395], np.ones(5, bool)]
    regular = np.tile(np.r_[np.ones(10, bool), np.zeros(5, bool)], 27)[:400]
    regular[-3:] = False
    return np.stack([mixed, regular, np.zeros(400, bool)])


def config(name: str, **values: float) -> RiskConfig:
    return SHIPPED_RISK.variant(forecaster=name, **values)


def fitted(name: str, prior: PoolPrior | None = PRIOR) -> RiskForecaster:
    return config(name).fit(History(past(), HOURS_PER_TICK, prior))


def updates(n: int, seed: int) -> Iterator[tuple[int, np.ndarray, bool | None]]:
    """``n`` ticks a controller may report: each pool's belief, and some pool up fresh or not."""
    rng = np.random.default_rng(seed)
    for tick in range(n):
        belief = rng.random(3) < (0.8, 0.5, 0.1)
        yield tick, belief, (None, bool(belief.any()), True)[tick % 3]


def states(name: str) -> Iterator[tuple[RiskForecaster, np.ndarray]]:
    """The forecaster fitted (with the prior and without), then after each of 60 updates, with
    the pools it last saw up."""
    yield fitted(name, prior=None), past()[:, -1]
    forecaster = fitted(name)
    yield forecaster, past()[:, -1]
    for tick, belief, any_up in updates(60, seed=1):
        forecaster.update(tick, belief, any_up)
        yield forecaster, belief


@pytest.mark.parametrize("name", NAMES)
def test_a_forecaster_is_built_under_its_name_and_keeps_its_configuration(name: str) -> None:
    forecaster = fitted(name)
    assert forecaster.name == name
    assert forecaster.config == config(name)


@pytest.mark.parametrize("name", NAMES)
def test_expected_runs_are_finite_and_not_negative_and_the_hazard_positive(name: str) -> None:
    for forecaster, _ in states(name):
        for z in range(3):
            runs = [forecaster.expected_run(z), forecaster.expected_run(z, fresh=True)]
            runs += [forecaster.expected_run_up_within(z, t) for t in (1.0, 7.0, math.inf)]
            assert all(math.isfinite(r) and r >= 0 for r in runs), (z, runs)
            hazard = forecaster.hazard(z)
            assert math.isfinite(hazard) and hazard > 0


@pytest.mark.parametrize("name", NAMES)
def test_p_preempted_is_a_probability_that_grows_with_the_horizon_from_0(name: str) -> None:
    for forecaster, up in states(name):
        for z in range(3):
            p = [forecaster.p_preempted(z, t) for t in TICKS]
            assert all(0.0 <= q <= 1.0 for q in p), (z, p)
            assert all(a <= b for a, b in itertools.pairwise(p)), (z, p)
            if up[z]:
                assert p[0] == 0.0, z


@pytest.mark.parametrize("name", NAMES)
def test_the_spot_share_is_a_share(name: str) -> None:
    for forecaster, _ in states(name):
        for changeover in (0, 1, 5, 50):
            for horizon in (None, 1.0, 24.0, 1000.0):
                share = forecaster.spot_share(changeover, horizon)
                assert 0.0 <= share <= 1.0, (changeover, horizon, share)


@pytest.mark.parametrize("name", NAMES)
def test_a_pool_kept_down_does_not_look_better_as_the_ticks_pass(name: str) -> None:
    """Every pool seen down tick after tick: once its run has ended (the first down tick may
    end a long run and so lengthen the mean), its expected run lowers or keeps."""
    forecaster = fitted(name)
    down = np.zeros(3, bool)
    forecaster.update(0, down, False)
    before = [forecaster.expected_run(z, fresh=True) for z in range(3)]
    for tick in range(1, 100):
        forecaster.update(tick, down, False)
        now = [forecaster.expected_run(z, fresh=True) for z in range(3)]
        assert all(b <= a * (1 + 1e-12) for a, b in zip(before, now, strict=True)), (tick, now)
        before = now
    assert before[0] < fitted(name).expected_run(0, fresh=True)  # it did lower


@pytest.mark.parametrize("name", NAMES)
def test_a_cold_history_with_a_prior_gives_the_priors_mean_run(name: str) -> None:
    cold = History(np.zeros((2, 0), bool), HOURS_PER_TICK, PRIOR)
    mean_ticks = PRIOR.mean_run_hours / HOURS_PER_TICK
    exact = config(name, prior_weight=0.0).fit(cold)
    shrunk = config(name).fit(cold)
    for z in range(2):
        assert exact.expected_run(z, fresh=True) == pytest.approx(mean_ticks)
        assert 1.0 < shrunk.expected_run(z, fresh=True) <= mean_ticks  # toward "as long again"


@pytest.mark.parametrize("name", NAMES)
def test_fitting_twice_on_the_same_history_gives_the_same_answers(name: str) -> None:
    def answers(forecaster: RiskForecaster) -> list[float]:
        out = []
        for z in range(3):
            out += [forecaster.expected_run(z), forecaster.expected_run(z, fresh=True)]
            out += [forecaster.expected_run_up_within(z, 9.0), forecaster.hazard(z)]
            out += [forecaster.p_preempted(z, t) for t in TICKS]
        return [*out, forecaster.spot_share(1, 24.0)]

    first, second = fitted(name), fitted(name)
    assert answers(first) == answers(second)
    for (tick, belief, any_up), again in zip(updates(30, 2), updates(30, 2), strict=True):
        first.update(tick, belief, any_up)
        second.update(*again)
        assert answers(first) == answers(second)


def test_an_unknown_forecaster_is_refused_naming_the_registered_ones() -> None:
    with pytest.raises(KeyError, match="arima-on-nothing") as refused:
        SHIPPED_RISK.variant(forecaster="arima-on-nothing")
    assert all(name in str(refused.value) for name in NAMES)
    with pytest.raises(KeyError):
        RiskConfig(forecaster="", half_life_hours=24.0, prior_weight=1.0, reversion_hours=0.0)
