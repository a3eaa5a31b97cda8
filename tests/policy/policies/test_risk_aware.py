"""The forecast-aware policy: safety net, causality, its rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spotwise import policy
from spotwise.policy import load
from spotwise.policy.job import REFERENCE
from spotwise.policy.policies.base import ON_DEMAND, Observation, spot
from spotwise.policy.policies.risk_aware import RiskAware, RiskAwareParams, pays_run
from spotwise.policy.simulate import Visibility, context_for, job_starts, simulate
from spotwise.policy.traces import TraceSet, load_traces
from spotwise.pricing.forecast.hazard import MarketForecast
from spotwise.pricing.forecast.prior import PoolPrior
from spotwise.pricing.forecast.risk_forecasters import SHIPPED_RISK
from tests.conftest import DATA
from tests.policy.helpers import job, traces

BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"
SPEC = REFERENCE


@pytest.fixture(scope="module")
def bundled() -> TraceSet:
    return load_traces(BUNDLED)


@pytest.mark.parametrize("name", ["risk_aware", pytest.param("ppo", marks=pytest.mark.slow)])
def test_costs_no_more_than_on_demand_on_average_on_the_bundled_traces(
    bundled: TraceSet, name: str
) -> None:
    """(That it never misses a deadline is the policy contract's.)"""
    deadline = SPEC.ticks(bundled.gap_seconds).deadline
    starts = job_starts(bundled.n_ticks, bundled.gap_seconds, deadline, 0, 96)
    for zones in (["us-west-2b_v100_1"], list(bundled.names)):
        ratios = []
        for start in starts:
            ratios.append(simulate(load(name), bundled.subset(zones), SPEC, start).cost_ratio)
        assert np.mean(ratios) <= 1.0, (zones, ratios)


def test_risk_aware_takes_long_runs_and_skips_short_ones() -> None:
    # Pool z0 flickers (1-tick runs, shorter than the 2-tick changeover); z1 is up in long
    # runs. The job must go to z1.
    flicker = "10" * 30
    steady = "0" * 4 + "1" * 56
    past = traces("10" * 50, "1" * 20 + "0" * 5 + "1" * 40 + "0" * 5 + "1" * 30)
    now = traces(flicker, steady)
    both = TraceSet(
        pools=now.pools,
        gap_seconds=3600,
        available=np.concatenate([past.available, now.available], axis=1),
    )
    result = simulate(load("risk_aware"), both, job(20, 40, 2), start=100)
    assert result.done
    assert result.preemptions == 0  # it never started on the flickering pool


def test_risk_aware_reads_the_shipped_risk_configuration_and_a_tuned_one_is_a_variant() -> None:
    """Its forecast values are :data:`SHIPPED_RISK`'s (``survival-v1``); tuning one of them
    makes an unversioned variant named by its values, tuning a rule threshold does not."""
    assert RiskAwareParams().risk is SHIPPED_RISK and SHIPPED_RISK.label == "survival-v1"
    assert RiskAwareParams(idle_run=2.0).risk is SHIPPED_RISK
    tuned = RiskAwareParams(prior_weight=0.0).risk
    assert (tuned.version, tuned.label) == (None, "survival-h24-w0-r12")


def test_the_slack_is_budgeted_over_the_outages_still_to_come() -> None:
    # Hourly ticks: four short outages (2 h) then a long one (20 h), after 6 h runs, thrice.
    cycle = ("1" * 6 + "0" * 2) * 4 + "1" * 6 + "0" * 20
    past = np.array([[c == "1" for c in cycle * 3]])
    forecast = MarketForecast(past, half_life_ticks=1e6)
    # 12 short and 3 long outages (mean 5.6 h) and 6 h runs: ten outages in 116 h
    assert forecast.wait_limit(100, 116, 1) == math.inf  # slack for all of them: wait
    assert forecast.wait_limit(30, 116, 1) == 2  # wait out the short ones only
    assert forecast.wait_limit(10, 116, 1) == 0  # not even those: on-demand at once
    two = MarketForecast(past[:, :20], half_life_ticks=1e6)  # two outages: too few to budget by
    assert two.wait_limit(30, 116, 1) is None
    recent = MarketForecast(past, half_life_ticks=100)
    assert recent.wait_limit(30, 116, 1) is not None
    recent.observe(10**6, np.array([False]))  # a request far on: every outage weighs nothing
    assert recent.wait_limit(30, 116, 1) is None


def test_risk_aware_keeps_slack_for_later_outages_where_greedy_spends_it_first() -> None:
    # Hourly ticks, 6 h runs: four 1 h outages then a 12 h one, thrice. The job starts in a
    # 12 h outage with 20 h of slack: greedy waits it out and has too little left for the
    # short ones after it (on-demand to the end); risk_aware, seeing every pool, runs
    # on-demand through it once the wait the slack affords is over, and rides spot after.
    cycle = ("1" * 6 + "0") * 4 + "1" * 6 + "0" * 12
    history = cycle * 3 + "1" * 6
    pools = traces(history + "0" * 12 + ("1" * 6 + "0") * 12)
    spec, start = job(40, 60, 1), len(history)
    greedy = simulate(load("greedy"), pools, spec, start)
    risk_aware = simulate(load("risk_aware"), pools, spec, start)
    assert greedy.done and risk_aware.done
    assert risk_aware.spot_ticks > greedy.spot_ticks
    assert risk_aware.cost < 0.85 * greedy.cost


def test_short_of_slack_a_job_on_demand_keeps_it_for_runs_likelier_to_pay() -> None:
    """The pool's expected run pays for leaving on demand in money (longer than 2D / (1 − s/o),
    3 ticks here). With slack for the work left (deadline 60) the job leaves for it; short of
    slack (deadline 48: no wait limit fits) the round trip's two changeovers of slack are
    charged at the spot work they buy later, times the chance the run ends before it pays for
    them, and the job stays on demand."""
    past = ("1" * 6 + "0" * 12) * 8
    market = traces(past + "1" * 200)

    def choice(deadline: float) -> int:
        chooser = policy.load("risk_aware")
        chooser.reset(context_for(market, job(40, deadline, 1), len(past)))
        obs = Observation(
            tick=2,
            progress=1.0,
            state=ON_DEMAND,
            changeover_left=0,
            preempted=False,
            available=np.array([True]),
            prices=np.array([1.0]),
        )
        action = chooser.act(obs)
        assert chooser.forecast is not None
        assert chooser.forecast.expected_run(0) > pays_run(1.0, 3.0)
        return action.instance

    assert choice(60) == spot(0)
    assert choice(48) == ON_DEMAND


def test_a_storm_after_a_calm_past_runs_on_demand_once_behind_uniform_progress() -> None:
    """Rule 5: a calm past budgets outages as rare, so its wait limit lets an idle job wait any
    outage out; a job whose slack could not carry the work left at the prior's runs (the
    default prior's 2 h runs and 1 h changeovers: 31 changeovers against 7 ticks of spare
    slack) still runs on demand once it is more than two changeovers behind uniform
    progress's line (40 h of work in 60 h: 13.3 at tick 20), and on demand it takes a long
    spot run only once it is back within them. Without the line (a variant that never counts
    it), or with slack to spare at the prior's runs (100 h ones), the same job waits and
    leaves on demand."""
    past = "1" * 300 + "0" * 3 + "1" * 300
    market = traces(past + "0" * 30 + "1" * 100)
    start = len(past)
    long_runs = PoolPrior(mean_run_hours=100.0, available_share=0.99)

    def choice(
        state: int, progress: float, line: float | None = None, prior: PoolPrior | None = None
    ) -> int:
        chooser = RiskAware()
        if line is not None:
            chooser.params = RiskAwareParams(line_changeovers=line)
        seen = Visibility(prior=prior)
        chooser.reset(context_for(market, job(40, 60, 1), start, visibility=seen))
        obs = Observation(
            tick=20,
            progress=progress,
            state=state,
            changeover_left=0,
            preempted=False,
            available=np.array([state == ON_DEMAND]),
            prices=np.array([1.0]),
        )
        return chooser.act(obs).instance

    idle = 0
    assert choice(idle, 9.0) == ON_DEMAND  # 4.3 ticks behind the line
    assert choice(idle, 12.0) == idle  # 1.3 behind: the forecast's wait limit holds
    assert choice(idle, 9.0, line=math.inf) == idle
    assert choice(idle, 9.0, prior=long_runs) == idle
    assert choice(ON_DEMAND, 9.0) == ON_DEMAND
    assert choice(ON_DEMAND, 12.0) == spot(0)
    assert choice(ON_DEMAND, 9.0, line=math.inf) == spot(0)
    assert choice(ON_DEMAND, 9.0, prior=long_runs) == spot(0)


def test_an_instance_lost_within_a_tick_of_landing_shortens_the_pools_forecast_run() -> None:
    # Probing, a job that lands and is taken back before the next tick never sees its pool up:
    # the preemption itself is what tells the forecast that a run there was short.
    context = context_for(traces("1" * 10 + "0" * 30), job(20, 40, 2), 0,
                          visibility=Visibility(observe="probe"))  # fmt: skip

    def tick(t: int, preempted_pool: int) -> Observation:
        down = np.array([False])
        return Observation(t, 0, -1, 0, preempted_pool >= 0, down, np.ones(1), down.copy(),
                           np.zeros(1), preempted_pool=preempted_pool)  # fmt: skip

    runs = []
    for told in (False, True):
        chooser = RiskAware()
        chooser.reset(context)
        chooser.act(tick(0, -1))
        chooser.act(tick(1, 0 if told else -1))
        runs.append(chooser.forecast.expected_run(0, fresh=True))
    assert runs[1] < runs[0]  # 1.49 -> 1.33 h: a 1 h run beside the prior's pseudo-runs
