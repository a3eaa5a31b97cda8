"""The on-demand floor that an elastic job's deadline and the spot forecast call for (the
executor's ``--on-demand-floor auto``, and the lab's ``auto_floor`` policy that measures it).

With ``N`` nodes, ``k`` of them on-demand and the rest on spot that is up a ``share`` of the
time, the job runs at ``(k + (N − k)·share) / N`` of its full rate; the floor is the fewest
``k`` whose rate finishes the work left (plus a reserve of regroups) by the deadline.
"""

from __future__ import annotations

import math
from typing import Protocol

RESERVE_REGROUPS = 4.0
"""Regroups of slack :func:`auto_floor` keeps beyond the work left."""
FALL_REGROUPS = 2.0
"""More regroups of reserve a lower floor must still allow before ``auto`` lowers it."""


class FloorShape(Protocol):
    """The job's node range and what a change of its node count costs (hours)."""

    @property
    def min_nodes(self) -> int: ...

    @property
    def max_nodes(self) -> int: ...

    @property
    def regroup_hours(self) -> float: ...


def auto_floor(
    plan: FloorShape,
    *,
    spot_share: float,
    time_left_hours: float,
    work_left_hours: float,
    reserve_regroups: float = RESERVE_REGROUPS,
) -> int:
    """The fewest on-demand nodes (at least ``min_nodes``) whose work, with the other nodes on
    spot and up ``spot_share`` of the time, covers ``work_left_hours`` of full-size work (plus
    ``reserve_regroups`` regroups) in ``time_left_hours``: the full-size rate needed is
    ``r``, ``k`` on-demand nodes of ``N`` give ``(k + (N − k)·share) / N``."""
    n, share = plan.max_nodes, min(max(spot_share, 0.0), 1.0)
    needed = work_left_hours + reserve_regroups * plan.regroup_hours
    if time_left_hours <= 0 or needed >= time_left_hours:
        return n
    rate = needed / time_left_hours
    if share >= 1.0:
        return plan.min_nodes
    k = math.ceil(n * (rate - share) / (1.0 - share) - 1e-9)
    return min(max(k, plan.min_nodes), n)


def next_floor(current: int | None, plan: FloorShape, **now: float) -> int:
    """``auto``'s floor for the next stretch: up at once to :func:`auto_floor`'s, down only
    when it would be lower even with :data:`FALL_REGROUPS` more regroups of reserve (a fall
    and a rise after it cost two), so a floor on the edge does not swing at every forecast."""
    wanted = auto_floor(plan, **now)
    if current is None or wanted >= current:
        return wanted
    cautious = auto_floor(plan, reserve_regroups=RESERVE_REGROUPS + FALL_REGROUPS, **now)
    return max(min(cautious, current), wanted)
