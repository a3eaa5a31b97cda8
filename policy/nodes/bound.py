"""The omniscient bound of an N-node job: a lower bound on what any schedule can cost.

Knowing every pool's capacity for the whole job, and with regroups free, the cheapest schedule
runs every spot node it can (up to ``N`` a tick, in the pool with most capacity that tick)
until the work is covered, and buys the rest on-demand. Regroups are not free, so no schedule
reaches it: it bounds from below, as the 1-node bound does exactly. Its cost ratio is on the
same scale as the simulated ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spotwise.policy.errors import PolicyError
from spotwise.policy.nodes.simulate import NodeJobContext


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeBound:
    """The bound's cost and cost ratio, and the spot share of its node-ticks."""

    cost: float
    cost_ratio: float
    spot_share: float


def node_lower_bound(context: NodeJobContext) -> NodeBound:
    """The least cost of the job's work with free regroups.

    Raises:
        PolicyError: when the context lacks the future.
    """
    if context.future_capacity is None:
        raise PolicyError("the omniscient bound needs the whole capacity trace of the job")
    job, n = context.job, context.nodes
    per_tick = job.hours_per_tick
    work = job.work * n  # node-ticks
    spot_slots = np.minimum(context.future_capacity.max(axis=0), n)[: job.deadline]
    spot = min(float(spot_slots.sum()), float(work))
    cost = (spot * context.spot_price + (work - spot) * context.on_demand_price) * per_tick
    full = (job.work + job.changeover) * n * context.on_demand_price * per_tick
    return NodeBound(cost=cost, cost_ratio=cost / full, spot_share=spot / work)
