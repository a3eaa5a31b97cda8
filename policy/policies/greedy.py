"""Greedy: spot whenever it can be had while slack remains, then on-demand to the end.

Slack is the time left minus the work left. The safety net switches to on-demand for good
once slack is down to two changeovers while not on spot: one changeover to start on-demand,
and one spent on a spot start that may be preempted. A running spot instance is kept until
it is preempted. With several pools it fails over to the available pool with the best
availability so far.
"""

from __future__ import annotations

from policy.policies.base import ON_DEMAND, SPOT0, JobContext, Observation, Policy
from policy.policies.failover import FailoverChooser


def slack_ticks(obs: Observation, context: JobContext) -> float:
    """Ticks left before the deadline minus ticks of work left."""
    job = context.job
    return (job.deadline - obs.tick) - (job.work - obs.progress)


def safety_net(obs: Observation, context: JobContext) -> bool:
    """True when only on-demand can still surely meet the deadline."""
    return obs.state < SPOT0 and slack_ticks(obs, context) <= 2 * context.job.changeover


class Greedy(Policy):
    """Spot while slack remains, then on-demand to the end."""

    name = "greedy"

    def reset(self, context: JobContext) -> None:
        """Start a job with no commitment to on-demand."""
        self._context = context
        self._chooser = FailoverChooser(context)
        self._on_demand_to_the_end = False

    def act(self, obs: Observation) -> int:
        """Stay on spot; else take the best available spot; else wait, until the safety net."""
        self._chooser.observe(obs)
        if self._on_demand_to_the_end or safety_net(obs, self._context):
            self._on_demand_to_the_end = True
            return ON_DEMAND
        if obs.state >= SPOT0:
            return obs.state
        return self._chooser.best_available(obs)
