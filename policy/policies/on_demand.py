"""On-demand only: the cost every saving is measured against (cost ratio 1)."""

from __future__ import annotations

from spotwise.policy.policies.base import RUN_ON_DEMAND, Action, JobContext, Observation, Policy


class OnDemand(Policy):
    """Run on demand from the first tick to the end."""

    name = "on_demand"

    def reset(self, context: JobContext) -> None:
        """Nothing to prepare."""

    def act(self, obs: Observation) -> Action:
        """Always on-demand."""
        return RUN_ON_DEMAND
