"""Uniform progress, the policy of "Can't Be Late" (Wu et al., NSDI'24).

Expected progress grows uniformly: ep(t) = K·t/T. (1) Idle and behind ep(t) → on-demand;
(2) take spot whenever available and stay until preempted; (3) hysteresis: on on-demand,
stay until progress >= ep(t + 2D); (4) safety net: when the time left is under the work left
plus two changeovers, on-demand to the end. With several pools it fails over to the
available pool with the best availability so far; seeing only what requests teach, it asks for
every pool in that order, and counts spot as not there once a request found every pool down.
"""

from __future__ import annotations

from spotwise.policy.policies.base import (
    NONE,
    ON_DEMAND,
    RUN_ON_DEMAND,
    WAIT,
    Action,
    JobContext,
    Observation,
    Policy,
)
from spotwise.policy.policies.failover import FailoverChooser
from spotwise.policy.policies.rules import Guardrails, uniform_progress_line


class UniformProgress(Policy):
    """Follow the uniform-progress line with spot, on-demand when behind."""

    name = "uniform_progress"

    def reset(self, context: JobContext) -> None:
        """Start a job."""
        self._context = context
        self._rules = Guardrails(context)
        self._chooser = FailoverChooser(context)

    def expected_progress(self, tick: float) -> float:
        """ep(t): where uniform progress would be at ``tick``."""
        return uniform_progress_line(self._context, tick)

    def act(self, obs: Observation) -> Action:
        """The shared rules (safety net, stay on spot), then uniform progress."""
        self._chooser.observe(obs)
        fixed = self._rules.fixed(obs)
        return self._follow_the_line(obs) if fixed is None else Action(fixed)

    def _follow_the_line(self, obs: Observation) -> Action:
        chooser = self._chooser
        if obs.state == ON_DEMAND:
            ahead = obs.progress >= self.expected_progress(
                obs.tick + 2 * self._context.job.changeover
            )
            return chooser.choose(obs) if ahead else RUN_ON_DEMAND
        behind = obs.progress < self.expected_progress(obs.tick)
        if not behind or obs.hopeful().any():
            choice = chooser.choose(obs)
            if choice.instance != NONE:
                return choice
        return RUN_ON_DEMAND if behind else WAIT
