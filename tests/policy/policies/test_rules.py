"""The decision rules every causal policy shares, on one job worked out by hand.

The job: 10 h of work by a 20.5 h deadline, 2 h changeovers, on 1 h ticks, so K = 10 work
ticks, T = floor(20.5) = 20 deadline ticks, D = 2 and the uniform-progress line
ep(t) = 10·t/20.5 (the exact deadline, not the floored one).
"""

from __future__ import annotations

import pytest

from spotwise.policy.job import JobSpec
from spotwise.policy.observe import ObserveMode
from spotwise.policy.policies.base import NONE, ON_DEMAND, JobContext, spot
from spotwise.policy.policies.rules import (
    Guardrails,
    behind_the_line,
    late,
    safety_margin,
    safety_net,
    slack_exhausted,
    slack_ticks,
    uniform_progress_line,
)
from spotwise.policy.simulate import Visibility, context_for
from tests.policy.helpers import observation, traces

SPEC = JobSpec(
    compute_hours=10,
    deadline_hours=20.5,
    changeover_hours=2,
    spot_price=1.0,
    on_demand_price=3.0,
)


def context(observe: ObserveMode = "all") -> JobContext:
    """The job at tick 0 of one pool; probing (``probe``, 60 s on 1 h ticks) costs 1 tick."""
    return context_for(traces("1" * 21), SPEC, 0, visibility=Visibility(observe=observe))


def test_slack_is_the_ticks_left_before_the_floored_deadline_less_the_work_left() -> None:
    ctx = context()
    assert (ctx.job.work, ctx.job.deadline, ctx.job.changeover) == (10, 20, 2)
    assert slack_ticks(observation(0, 0, NONE, [True]), ctx) == 10  # 20 - 10
    assert slack_ticks(observation(5, 3, NONE, [True]), ctx) == 8  # (20 - 5) - (10 - 3)
    assert slack_ticks(observation(15, 4, NONE, [True]), ctx) == -1  # (20 - 15) - (10 - 4)


def test_the_uniform_progress_line_runs_to_the_work_at_the_exact_deadline() -> None:
    ctx = context()
    assert uniform_progress_line(ctx, 0) == 0
    assert uniform_progress_line(ctx, 5) == pytest.approx(50 / 20.5)  # 2.439, not 2.5
    assert uniform_progress_line(ctx, 20.5) == pytest.approx(10)
    # Behind by n changeovers: progress below ep(t) - n·D.
    assert behind_the_line(observation(5, 2.4, NONE, [True]), ctx, 0)
    assert not behind_the_line(observation(5, 2.45, NONE, [True]), ctx, 0)
    assert not behind_the_line(observation(5, 0.45, NONE, [True]), ctx, 1)  # line - 2 = 0.439
    assert behind_the_line(observation(5, 0.4, NONE, [True]), ctx, 1)


def test_the_safety_margin_is_two_changeovers_plus_the_wait() -> None:
    assert safety_margin(2, 0) == 4
    assert safety_margin(2, 3) == 7
    assert safety_margin(0.5, 1.5) == 2.5


def test_the_slack_is_exhausted_at_the_margin_and_a_failed_requests_ticks_widen_it() -> None:
    seen, blind = context("all"), context("probe")
    assert (seen.probe_ticks, blind.probe_ticks) == (0, 1)
    slack_4 = observation(12, 6, NONE, [True])  # (20 - 12) - (10 - 6) = 4
    slack_5 = observation(11, 6, NONE, [True])  # 9 - 4 = 5
    assert slack_exhausted(slack_4, seen) and not slack_exhausted(slack_5, seen)  # margin 4
    assert slack_exhausted(slack_5, blind)  # margin 2·2 + 1 = 5


def test_a_job_is_late_only_once_its_slack_is_below_zero() -> None:
    ctx = context()
    assert not late(observation(14, 4, NONE, [True]), ctx)  # slack 0: still just fits
    assert late(observation(15, 4, NONE, [True]), ctx)  # slack -1


def test_the_safety_net_spares_a_running_spot_instance_unless_the_job_is_late() -> None:
    ctx = context()
    for state in (NONE, ON_DEMAND):
        assert safety_net(observation(12, 6, state, [True]), ctx)  # slack 4 = the margin
        assert not safety_net(observation(11, 6, state, [True]), ctx)  # slack 5
    assert not safety_net(observation(12, 6, spot(0), [True]), ctx)
    assert safety_net(observation(15, 4, spot(0), [True]), ctx)  # late


def test_guardrails_keep_spot_then_latch_on_demand_to_the_end() -> None:
    rules = Guardrails(context())
    assert rules.fixed(observation(11, 6, spot(0), [True])) == spot(0)  # kept until preempted
    assert rules.fixed(observation(11, 6, NONE, [True])) is None  # slack 5: the policy picks
    assert not rules.engaged
    assert rules.fixed(observation(12, 6, NONE, [True])) == ON_DEMAND  # slack 4
    assert rules.engaged
    # Latched: even with slack to spare again (a faster pool caught up), on-demand to the end.
    assert rules.fixed(observation(13, 9, NONE, [True])) == ON_DEMAND  # slack 6
    assert rules.fixed(observation(15, 4, spot(0), [True])) == ON_DEMAND  # late, on spot
