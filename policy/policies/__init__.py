"""Built-in policies, registered by name (see :func:`policy.policies.base.make`)."""

from policy.policies import greedy, omniscient, on_demand, risk_aware, uniform_progress

__all__ = ["greedy", "omniscient", "on_demand", "risk_aware", "uniform_progress"]
