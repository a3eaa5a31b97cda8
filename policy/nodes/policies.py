"""Policies for N-node jobs: all on-demand, all spot with an on-demand fallback, an on-demand
floor under spot workers that the deadline sets (``best``), and the executor's ``auto`` floor
(``auto_floor``: ``best`` with the rendezvous host on-demand), so the lab measures what the
executor does.

Every causal policy shares the safety net of the 1-node lab: once the slack (ticks left minus
full-size work left) is down to two regroups, all ``N`` nodes on-demand to the end, so the
deadline is never missed. The omniscient bound is in :mod:`spotwise.policy.nodes.bound`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from spotwise.policy.errors import UnknownPolicy
from spotwise.policy.nodes.floor import deadline_floor
from spotwise.policy.nodes.simulate import (
    NO_POOL,
    NodeAction,
    NodeJobContext,
    NodeObservation,
)
from spotwise.policy.policies.rules import safety_margin


class NodePolicy(ABC):
    """Picks the on-demand floor and the spot nodes of an N-node job at every tick."""

    name: ClassVar[str]

    @abstractmethod
    def reset(self, context: NodeJobContext) -> None:
        """Start a new job."""

    @abstractmethod
    def act(self, obs: NodeObservation) -> NodeAction:
        """The nodes for this tick (seeing only this tick and the past)."""


def slack(obs: NodeObservation, context: NodeJobContext) -> float:
    """Ticks left before the deadline minus full-size ticks of work left."""
    job = context.job
    return (job.deadline - obs.tick) - (job.work - obs.progress)


class SafetyNet:
    """All nodes on-demand to the end once the slack is down to two regroups (one to move
    every node to on-demand, one spare for a spot node taken back on the way) and a tick: the
    single-job safety net's margin, a regroup its changeover."""

    def __init__(self, context: NodeJobContext) -> None:
        self.context = context
        self.engaged = False

    def due(self, obs: NodeObservation) -> bool:
        """Whether the net has engaged (slack within two regroups); it stays so."""
        if not self.engaged:
            self.engaged = slack(obs, self.context) <= safety_margin(self.context.job.changeover, 1)
        return self.engaged

    def action(self) -> NodeAction:
        """Every node on-demand."""
        return NodeAction(on_demand=self.context.nodes)


class AllOnDemand(NodePolicy):
    """Every node on-demand from the start."""

    name = "on_demand"

    def reset(self, context: NodeJobContext) -> None:
        """Start a job of ``context``."""
        self._nodes = context.nodes

    def act(self, obs: NodeObservation) -> NodeAction:
        """Every node on-demand."""
        return NodeAction(on_demand=self._nodes)


class SpotFallback(NodePolicy):
    """Every node on spot, as many as a pool gives (the pool that gave most when last asked),
    asking again each tick for the rest; all on-demand once the deadline asks."""

    name = "spot_fallback"

    def reset(self, context: NodeJobContext) -> None:
        """Start a job of ``context``."""
        self._context = context
        self._net = SafetyNet(context)

    def act(self, obs: NodeObservation) -> NodeAction:
        """All nodes on spot where most were given, all on-demand once the deadline asks."""
        if self._net.due(obs):
            return self._net.action()
        pool = obs.pool
        if pool == NO_POOL:
            pool = int(np.argmax(np.where(obs.seen < 0, self._context.nodes, obs.seen)))
        return NodeAction(on_demand=0, spot=self._context.nodes, pool=pool)


@dataclass(frozen=True, slots=True)
class FloorParams:
    """The floor policy's knobs (see :class:`OnDemandFloor`)."""

    history_hours: float = 24.0
    """Hours of past capacity a pool never asked is judged by."""
    fresh_hours: float = 1.0
    """How long what a request taught stands for the pool's capacity."""
    explore_hours: float = 1.0
    """How often a job short of spot nodes asks the most promising other pool."""
    reserve_regroups: float = 6.0
    """Regroups of slack kept before the floor takes over from new spot requests."""


class OnDemandFloor(NodePolicy):
    """Spot workers over an on-demand floor that the deadline sets.

    With slack to spare every node is asked for on spot in the pool with most capacity (as
    last asked while that is fresh, else its recent past), and a job short of nodes asks the
    most promising other pool every ``explore_hours``, moving there if it gives more. Once the
    slack is down to ``reserve_regroups`` regroups, no new spot node is asked for: the spot
    nodes held keep working over an on-demand floor that fills the job to ``N``, and a spot
    node taken back is replaced on-demand. (All-spot-with-fallback instead gives up every spot
    node at its fallback.) The safety net then moves every node on-demand at two regroups.
    """

    name = "best"
    params = FloorParams()

    def reset(self, context: NodeJobContext) -> None:
        """Start a job of ``context``: each pool's recent capacity and the periods."""
        self._context = context
        self._net = SafetyNet(context)
        per_tick = context.job.hours_per_tick
        window = max(1, round(self.params.history_hours / per_tick))
        past = np.minimum(context.past_capacity[:, -window:], context.nodes)
        self._past = past.mean(axis=1) if past.shape[1] else np.full(context.n_pools, np.nan)
        self._fresh = self.params.fresh_hours / per_tick
        self._explore = max(1, round(self.params.explore_hours / per_tick))
        self._last_explore = -self._explore

    def _estimate(self, obs: NodeObservation) -> np.ndarray:
        """Each pool's spot nodes as best known: fresh asks, else the recent past, else hope."""
        hope = np.where(np.isnan(self._past), float(self._context.nodes), self._past)
        fresh = (obs.seen >= 0) & (obs.seen_age <= self._fresh)
        return np.where(fresh, obs.seen.astype(float), hope)

    def act(self, obs: NodeObservation) -> NodeAction:
        """Spot in the best pool (exploring when short), over a floor once slack runs low."""
        if self._net.due(obs):
            return self._net.action()
        context, job = self._context, self._context.job
        n = context.nodes
        if slack(obs, context) <= self.params.reserve_regroups * job.changeover:
            return NodeAction(on_demand=n - obs.spot, spot=obs.spot, pool=obs.pool)
        estimate = self._estimate(obs)
        if obs.pool == NO_POOL:
            return NodeAction(on_demand=0, spot=n, pool=int(np.argmax(estimate)))
        if obs.spot < n and obs.tick - self._last_explore >= self._explore:
            others = estimate.copy()
            others[obs.pool] = -1.0
            if others.max() > obs.spot:
                self._last_explore = obs.tick
                return NodeAction(on_demand=0, spot=n, pool=int(np.argmax(others)))
        return NodeAction(on_demand=0, spot=n, pool=obs.pool)


@dataclass(frozen=True, slots=True)
class _Shape:
    min_nodes: int
    max_nodes: int
    regroup_hours: float


class AutoFloor(OnDemandFloor):
    """The executor's ``--on-demand-floor auto`` in the lab, to measure it: the floor of
    :func:`~spotwise.policy.nodes.floor.deadline_floor` (``best``'s rule with the rendezvous
    host held on on-demand), the other nodes on spot where ``best`` would ask; the shared
    safety net."""

    name = "auto_floor"

    def reset(self, context: NodeJobContext) -> None:
        """Start a job of ``context`` with its node range and regroup cost."""
        super().reset(context)
        job = context.job
        self._shape = _Shape(1, context.nodes, job.changeover * job.hours_per_tick)

    def act(self, obs: NodeObservation) -> NodeAction:
        """The deadline's on-demand floor; the other nodes on spot where ``best`` asks."""
        if self._net.due(obs):
            return self._net.action()
        job, n = self._context.job, self._context.nodes
        floor = deadline_floor(
            self._shape,
            spot_held=obs.spot,
            time_left_hours=(job.deadline - obs.tick) * job.hours_per_tick,
            work_left_hours=(job.work - obs.progress) * job.hours_per_tick,
        )
        if floor >= n:
            return NodeAction(on_demand=n)
        pool = obs.pool if floor > self._shape.min_nodes else super().act(obs).pool
        return NodeAction(on_demand=floor, spot=n - floor, pool=pool)


NODE_POLICIES: dict[str, type[NodePolicy]] = {
    p.name: p for p in (AllOnDemand, SpotFallback, OnDemandFloor, AutoFloor)
}


def load_node_policy(name: str) -> NodePolicy:
    """A fresh N-node policy by name.

    Raises:
        UnknownPolicy: naming the known ones.
    """
    if name not in NODE_POLICIES:
        known = sorted([*NODE_POLICIES, "omniscient"])
        raise UnknownPolicy(f"unknown N-node policy {name!r}; known: {known}")
    return NODE_POLICIES[name]()
