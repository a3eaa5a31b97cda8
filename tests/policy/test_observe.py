"""What a controller sees (docs/design.md, "What a real controller can see"): launch requests in the
``current`` and ``probe`` modes, their cost, what they teach, history and cold starts."""

from __future__ import annotations

import numpy as np
import pytest

from spotwise import policy
from spotwise.policy.policies.base import (
    NONE,
    ON_DEMAND,
    Action,
    JobContext,
    Observation,
    Policy,
    request,
    spot,
)
from spotwise.policy.policies.risk import job_history
from spotwise.policy.simulate import EVERYTHING, JobRun, Visibility, context_for, simulate
from spotwise.pricing.forecast.prior import DEFAULT_PRIOR, PoolPrior
from spotwise.pricing.forecast.risk_forecasters import RISK_FORECASTERS, SHIPPED_RISK
from tests.policy.helpers import job, traces

PROBE = Visibility(observe="probe", probe_seconds=60.0)
CURRENT = Visibility(observe="current", probe_seconds=60.0)


def test_a_fleet_request_lands_in_the_cheapest_available_pool_ties_to_the_earlier_named() -> None:
    market = traces("1111", "1111", "1111", prices=[[2.0] * 4, [1.0] * 4, [1.0] * 4])
    for named, landed in (((0, 2, 1), spot(2)), ((0, 1, 2), spot(1)), ((0,), spot(0))):
        run = JobRun(market, job(2, 4, 0), 0, None, PROBE)
        run.observe()
        run.step(request(named))
        assert run.observe().state == landed


def test_a_failed_request_teaches_the_named_pools_and_costs_an_idle_job_the_probe_time() -> None:
    market = traces("0011", "0001", "1111", gap=30)  # 60 s probes span two 30 s ticks
    run = JobRun(market, job(0.01, 0.03, 0), 0, None, PROBE)
    obs = run.observe()
    assert obs.last_seen is not None and obs.seen_age is not None
    assert not obs.available.any() and np.isinf(obs.seen_age).all()  # nothing seen yet
    run.step(request([0, 1]))
    obs = run.observe()
    age, seen = obs.seen_age, obs.last_seen
    assert age is not None and seen is not None
    assert obs.state == NONE and run.failed_requests == 1
    assert list(age[:2]) == [1, 1] and np.isinf(age[2]) and not seen[:2].any()
    run.step(request([0, 1]))  # still taken by the failed request: nothing is asked
    assert run.failed_requests == 1
    run.observe()
    assert list(age[:2]) == [2, 2]  # the observation is updated in place
    run.step(request([0, 1]))
    assert run.observe().state == spot(0)


def test_a_failed_request_from_on_demand_keeps_it_running() -> None:
    market = traces("0000", "0000")
    run = JobRun(market, job(3, 4, 0), 0, None, PROBE)
    run.observe()
    run.step(Action(ON_DEMAND))
    run.observe()
    run.step(request([0, 1]))
    assert run.observe().state == ON_DEMAND and run.failed_requests == 1
    run.step(Action(ON_DEMAND))
    assert run.result().on_demand_ticks == 3


def test_current_mode_shows_the_pool_the_job_runs_in_and_teaches_nothing_else() -> None:
    market = traces("1110", "0000")
    run = JobRun(market, job(2, 4, 0), 0, None, CURRENT)
    run.observe()
    run.step(request([1, 0]))  # lands in z0; z1 was named but current mode does not say
    obs = run.observe()
    assert obs.state == spot(0) and obs.available.tolist() == [True, False]
    assert obs.seen_age is not None and np.isinf(obs.seen_age[1])


def test_a_preemption_is_seen_as_the_pool_going_down() -> None:
    market = traces("1100", "0000")
    run = JobRun(market, job(3, 4, 0), 0, None, PROBE)
    run.observe()
    run.step(request([0]))
    run.observe()
    run.step(Action(spot(0)))
    obs = run.observe()
    assert obs.preempted and obs.last_seen is not None and not obs.last_seen[0]
    assert obs.seen_age is not None and obs.seen_age[0] == 0


def test_history_hours_bounds_the_past_a_job_is_given() -> None:
    market = traces("1" * 100, "0" * 100)
    spec = job(2, 4, 0)
    assert context_for(market, spec, 50).past_available.shape == (2, 50)
    for hours, ticks in ((0, 0), (24, 24), (168, 50)):
        seen = Visibility(history_hours=hours)
        assert context_for(market, spec, 50, visibility=seen).past_available.shape == (2, ticks)


def test_the_omniscient_bound_is_the_same_in_every_mode() -> None:
    market = traces("1100111100" * 6, "0011100111" * 6, gap=3600)
    spec = job(20, 40, 1)
    costs = {
        mode: simulate(policy.load("omniscient"), market, spec, 5, None, Visibility(observe=mode))
        for mode in ("all", "current", "probe")
    }
    assert len({c.cost for c in costs.values()}) == 1 and costs["probe"].failed_requests == 0


class FirstAction(Policy):
    """Records the job's first decision, then follows ``inner``."""

    name = "first_action"

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.first: Action | None = None

    def reset(self, context: JobContext) -> None:
        self.inner.reset(context)

    def act(self, obs: Observation) -> Action:
        action = self.inner.act(obs)
        self.first = self.first or action
        return action


@pytest.mark.parametrize("name", ["greedy", "risk_aware", "ppo"])
@pytest.mark.parametrize("prior", [None, PoolPrior(mean_run_hours=5, available_share=0.7)])
def test_a_cold_start_with_slack_asks_for_spot_instead_of_buying_on_demand(
    name: str, prior: PoolPrior | None
) -> None:
    """With no history a job has hours of slack: waiting for spot that comes back is cheap, so
    no policy spends its ignorance on on-demand (the 11 on-demand ticks of the old cold start).
    Uniform progress is left out: going on-demand when behind its line is its published rule."""
    market = traces("0001111111" * 4, "0000111111" * 4, gap=600)
    wrapped = FirstAction(policy.load(name))
    seen = Visibility(observe="probe", history_hours=0.0, prior=prior)
    result = simulate(wrapped, market, job(3, 6, 0.2), 0, None, seen)
    assert wrapped.first is not None and wrapped.first.instance >= 2  # a launch request
    assert result.done and result.on_demand_ticks == 0


def test_risk_forecasters_are_registered_and_start_from_the_prior() -> None:
    market = traces("1" * 10, "0" * 10)
    cold = context_for(market, job(2, 4, 0), 0, visibility=Visibility(history_hours=0.0))
    assert set(RISK_FORECASTERS) >= {"survival", "pooled"}
    for name in RISK_FORECASTERS:
        config = SHIPPED_RISK.variant(forecaster=name, prior_weight=0.0)
        forecast = config.fit(job_history(cold))
        assert forecast.expected_run(0, fresh=True) == pytest.approx(DEFAULT_PRIOR.mean_run_hours)
        assert forecast.p_preempted(0, 1.0) == 1.0  # not seen up: no run to lose
        forecast.update(0, np.array([True, False]))
        assert 0.0 < forecast.p_preempted(0, 1.0) < 1.0
    with pytest.raises(KeyError, match="survival"):
        SHIPPED_RISK.variant(forecaster="arima-on-nothing")


def test_the_pooled_forecaster_judges_a_new_pool_by_the_others_runs() -> None:
    past = traces("11110000" * 7, "0" * 56)  # z0 runs 4 ticks at a time; z1 never seen up
    context = context_for(past, job(2, 4, 0), 48)
    flat = SHIPPED_RISK.variant(prior_weight=0.0, half_life_hours=1e6)
    pooled = flat.variant(forecaster="pooled").fit(job_history(context))
    alone = flat.variant(forecaster="survival").fit(job_history(context))
    assert pooled.expected_run(1, fresh=True) == pooled.expected_run(0, fresh=True)
    assert pooled.expected_run(1, fresh=True) == pytest.approx(4.0, rel=0.1)  # with the prior
    assert alone.expected_run(1, fresh=True) == pytest.approx(DEFAULT_PRIOR.mean_run_hours)


def test_every_mode_runs_every_light_policy_to_the_deadline() -> None:
    market = traces("1100111100" * 8, "0011100111" * 8, "0" * 80, gap=3600)
    for name in ("greedy", "uniform_progress", "risk_aware"):
        for seen in (EVERYTHING, CURRENT, PROBE):
            assert simulate(policy.load(name), market, job(30, 50, 1), 10, None, seen).done


def test_blind_on_demand_waits_until_a_pool_found_up_is_likely_past_its_flickers() -> None:
    """A pool whose runs are mostly 1-hour flickers and sometimes 40 hours: asked for right
    after it was seen down, it would most likely give a flicker, not worth two changeovers;
    after 30 unseen hours a run found up is likely a long one, so the job asks for it."""
    past = ("10" * 8 + "1" * 40 + "00") * 5
    market = traces(past + "0" * 100)
    context = context_for(market, job(40, 100, 4), len(past), visibility=PROBE)
    chooser = policy.load("risk_aware")
    chooser.reset(context)

    def on_demand_at(tick: int, seen_age: float) -> Observation:
        return Observation(
            tick=tick,
            progress=float(tick),
            state=ON_DEMAND,
            changeover_left=0,
            preempted=False,
            available=np.array([False]),
            prices=np.array([1.0]),
            last_seen=np.array([False]),
            seen_age=np.array([seen_age]),
        )

    assert chooser.act(on_demand_at(5, 1.0)).instance == ON_DEMAND
    assert chooser.act(on_demand_at(6, 30.0)).named_pools() == (0,)


def test_a_blind_job_asks_the_other_pools_after_a_preemption_where_they_move_apart() -> None:
    """Short of slack in a market of long outages, a job preempted in z0 knows nothing of z1
    that it saw down 9 ticks ago. Where z1 has been up while z0 was down (half the preemptions
    were no outage), asking for it costs a tick half the time and saves two changeovers of
    slack the other half: it asks rather than pay for on demand. Where the two went down
    together, a preemption is an outage: on demand at once. Had it seen z1 down in the last
    tick too, the outage is real: on demand."""
    z0 = ("1" * 6 + "0" * 12) * 6

    def first_action(z1: str, z1_seen_age: float) -> Action:
        market = traces(z0 + "1" * 100, z1 + "1" * 100)
        chooser = policy.load("risk_aware")
        chooser.reset(context_for(market, job(40, 50, 1), len(z0), visibility=PROBE))
        return chooser.act(
            Observation(
                tick=3,
                progress=3.0,
                state=NONE,
                changeover_left=0,
                preempted=True,
                available=np.array([False, False]),
                prices=np.array([1.0, 1.0]),
                last_seen=np.array([False, False]),
                seen_age=np.array([0.0, z1_seen_age]),
            )
        )

    apart = ("0" * 6 + "1" * 6 + "0" * 6) * 6
    assert first_action(apart, 9.0).named_pools() == (1,)
    assert first_action(apart, 1.0).instance == ON_DEMAND
    assert first_action(z0, 9.0).instance == ON_DEMAND
