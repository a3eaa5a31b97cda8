"""Greedy: spot whenever it can be had while slack remains, then on-demand to the end.

Slack is the time left minus the work left. The safety net switches to on-demand for good
once slack is down to two changeovers while not on spot: one changeover to start on-demand,
and one spent on a spot start that may be preempted. A running spot instance is kept until
it is preempted. With several pools it fails over to the available pool with the best
availability so far; seeing only what requests teach, it asks for every pool in that order.
"""

from __future__ import annotations

from spotwise.policy.policies.base import Action, JobContext, Observation, Policy
from spotwise.policy.policies.failover import FailoverChooser
from spotwise.policy.policies.rules import Guardrails


class Greedy(Policy):
    """Spot while slack remains, then on-demand to the end."""

    name = "greedy"

    def reset(self, context: JobContext) -> None:
        """Start a job with no commitment to on-demand."""
        self._rules = Guardrails(context)
        self._chooser = FailoverChooser(context)

    def act(self, obs: Observation) -> Action:
        """The rules (stay on spot; the safety net); else the best available spot, or wait."""
        self._chooser.observe(obs)
        fixed = self._rules.fixed(obs)
        return self._chooser.choose(obs) if fixed is None else Action(fixed)
