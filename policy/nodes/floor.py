"""The on-demand floor an elastic job's deadline calls for: the executor's
``--on-demand-floor auto``, and, in the lab, the ``auto_floor`` policy that measures it.

It is the lab's ``best`` rule (:class:`~spotwise.policy.nodes.policies.OnDemandFloor`) with the
rendezvous host held on on-demand: while the slack (time left less full-size work left) holds
more than :data:`RESERVE_REGROUPS` regroups, only ``min_nodes`` run on-demand and spot fills
the rest; below that, no new spot node is asked for: the spot nodes held keep working and the
floor fills the job to ``max_nodes`` around them (a spot node taken back is replaced
on-demand); at :data:`SAFETY_REGROUPS` regroups every node runs on-demand to the end. Slack
only shrinks while the job runs short of nodes, so the floor never swings.
"""

from __future__ import annotations

from typing import Protocol

RESERVE_REGROUPS = 6.0
"""Regroups of slack below which no new spot node is asked for (``best``'s reserve)."""
SAFETY_REGROUPS = 2.0
"""Regroups of slack below which every node runs on-demand (the lab's safety net)."""


class FloorShape(Protocol):
    """The job's node range and what a change of its node count costs (hours)."""

    @property
    def min_nodes(self) -> int:
        """The fewest nodes the job runs on."""

    @property
    def max_nodes(self) -> int:
        """The most nodes the job runs on."""

    @property
    def regroup_hours(self) -> float:
        """Hours a change of the node count costs."""


def deadline_floor(
    plan: FloorShape, *, spot_held: int, time_left_hours: float, work_left_hours: float
) -> int:
    """On-demand nodes for now, given the ``spot_held`` spot nodes the job holds: ``min_nodes``
    with slack to spare, the rest of the job around the spot nodes held once the slack is
    down to the reserve, every node at the safety net."""
    slack = time_left_hours - work_left_hours
    if slack <= SAFETY_REGROUPS * plan.regroup_hours:
        return plan.max_nodes
    if slack <= RESERVE_REGROUPS * plan.regroup_hours:
        return max(plan.min_nodes, plan.max_nodes - spot_held)
    return plan.min_nodes
