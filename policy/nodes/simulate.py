"""The N-node simulator: one elastic job on spot capacity counted in nodes, tick by tick.

A job needs ``N`` nodes for ``K`` ticks (its work at full size) by tick ``T``. Each tick the
policy picks how many nodes run on-demand (the floor, ``k``) and how many on spot in one pool
(``s``, at most what the pool has), ``k + s <= N``. Progress per tick is ``(k + s) / N``:
data-parallel training with a fixed global batch, each node doing its share. Every change of
the node count (a spot node taken back, nodes added or released, the spot nodes moved to
another pool) is a regroup, as torchrun elastic restarts its workers from the last checkpoint:
``D`` ticks in which every running node is billed and none makes progress. At the start of a
tick, spot nodes beyond the pool's capacity are taken back (with notice: no work is lost, as in
the 1-node lab). Cost ratio = cost / ((K + D) · N · on-demand price per tick).

What a controller sees: the nodes it holds and what its requests taught. Asking a pool for more
spot nodes than the job holds there gets as many as the pool has (up to the ask) and teaches
that count; asking another pool moves the job's spot nodes there only if it gives more than
the job holds (else what it gave is let go at once, unbilled). The capacity of a pool the job
is not asking is not seen.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spotwise.policy.job import JobSpec, JobTicks
from spotwise.policy.nodes.capacity import CapacityTraces

NO_POOL = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeJobContext:
    """What a policy knows when an N-node job starts."""

    nodes: int
    job: JobTicks
    spot_price: float
    on_demand_price: float
    n_pools: int
    past_capacity: np.ndarray
    """int [pools, ticks before the job's start]."""
    future_capacity: np.ndarray | None = None
    """int [pools, job ticks]: only for the omniscient bound."""


@dataclass(slots=True)
class NodeObservation:
    """The present tick as a policy sees it."""

    tick: int
    progress: float
    """Work done, in ticks of the full-size job."""
    on_demand: int
    spot: int
    pool: int
    """Pool of the spot nodes (NO_POOL when there are none)."""
    regroup_left: int
    lost: int
    """Spot nodes taken back at the start of this tick."""
    seen: np.ndarray
    """int [pools]: spot nodes each pool gave when last asked (-1: never asked)."""
    seen_age: np.ndarray
    """float [pools]: ticks since then (inf: never)."""


@dataclass(frozen=True, slots=True)
class NodeAction:
    """How many nodes run on-demand, and how many on spot in which pool."""

    on_demand: int
    spot: int = 0
    pool: int = NO_POOL


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeResult:
    """How one N-node job went."""

    cost: float
    cost_ratio: float
    done: bool
    finish_tick: int
    on_demand_node_ticks: int
    spot_node_ticks: int
    preempted_nodes: int
    regroups: int


class NodeRun:
    """One N-node job on capacity traces: :meth:`observe`, then :meth:`step` with an action."""

    def __init__(self, traces: CapacityTraces, spec: JobSpec, nodes: int, start: int) -> None:
        self.job = spec.ticks(traces.gap_seconds)
        self.nodes, self.start = nodes, start
        self._capacity = traces.capacity
        self._od_tick = spec.on_demand_price * self.job.hours_per_tick
        self._spot_tick = spec.spot_price * self.job.hours_per_tick
        n_pools = traces.capacity.shape[0]
        self.tick, self.progress, self.cost = 0, 0.0, 0.0
        self.k = self.s = 0
        self.pool = NO_POOL
        self.regroup_left = 0
        self.od_node_ticks = self.spot_node_ticks = self.preempted = self.regroups = 0
        self.finished, self.finish = False, self.job.deadline
        self.obs = NodeObservation(
            tick=0,
            progress=0.0,
            on_demand=0,
            spot=0,
            pool=NO_POOL,
            regroup_left=0,
            lost=0,
            seen=np.full(n_pools, -1),
            seen_age=np.full(n_pools, np.inf),
        )
        self._seen_at = np.full(n_pools, -np.inf)

    @property
    def over(self) -> bool:
        """Whether the job is done or its deadline has passed."""
        return self.finished or self.tick >= self.job.deadline

    def observe(self) -> NodeObservation:
        """Start the tick: take back spot nodes beyond the pool's capacity, then show the tick."""
        obs, now = self.obs, self.start + self.tick
        obs.lost = 0
        if self.s > 0:
            capacity = int(self._capacity[self.pool, now])
            if capacity < self.s:
                obs.lost = self.s - capacity
                self.preempted += obs.lost
                self.s = capacity
                self._learn(self.pool, capacity)
                self._regroup()
                if self.s == 0:
                    self.pool = NO_POOL
        obs.tick, obs.progress = self.tick, self.progress
        obs.on_demand, obs.spot, obs.pool = self.k, self.s, self.pool
        obs.regroup_left = self.regroup_left
        np.subtract(self.tick, self._seen_at, out=obs.seen_age)
        return obs

    def _learn(self, pool: int, count: int) -> None:
        self.obs.seen[pool], self._seen_at[pool] = count, self.tick

    def _regroup(self) -> None:
        self.regroups += 1
        self.regroup_left = self.job.changeover if self.k + self.s > 0 else 0

    def step(self, action: NodeAction) -> None:
        """Run the tick with the policy's ``action``."""
        k = int(np.clip(action.on_demand, 0, self.nodes))
        want = int(np.clip(action.spot, 0, self.nodes - k))
        pool, s = self._spot_placement(action.pool, want)
        changed = k != self.k or s != self.s or (s > 0 and pool != self.pool)
        self.k, self.s, self.pool = k, s, pool
        if changed:
            self._regroup()
        self.tick += 1
        if self.k + self.s > 0:
            self._run()

    def _spot_placement(self, asked: int, want: int) -> tuple[int, int]:
        """The pool and spot nodes after asking ``asked`` for ``want`` nodes this tick."""
        if want == 0:
            return NO_POOL, 0
        if asked == self.pool and want <= self.s:
            return self.pool, want  # fewer nodes in the same pool: some are released
        # a request: as many as the pool has, up to the ask
        granted = min(want, int(self._capacity[asked, self.start + self.tick]))
        self._learn(asked, granted)
        if asked == self.pool or granted > self.s:
            return (asked, granted) if granted > 0 else (NO_POOL, 0)
        return self.pool, self.s

    def _run(self) -> None:
        """Pay for the tick's nodes, and make progress unless they regroup."""
        running = self.k + self.s
        self.cost += self.k * self._od_tick + self.s * self._spot_tick
        self.od_node_ticks += self.k
        self.spot_node_ticks += self.s
        if self.regroup_left > 0:
            self.regroup_left -= 1
            return
        self.progress += running / self.nodes
        if self.progress >= self.job.work - 1e-9:
            self.finished, self.finish = True, self.tick

    def result(self) -> NodeResult:
        """How the job went: its cost, whether and when it finished."""
        job = self.job
        return NodeResult(
            cost=self.cost,
            cost_ratio=self.cost / ((job.work + job.changeover) * self.nodes * self._od_tick),
            done=self.finished,
            finish_tick=self.finish,
            on_demand_node_ticks=self.od_node_ticks,
            spot_node_ticks=self.spot_node_ticks,
            preempted_nodes=self.preempted,
            regroups=self.regroups,
        )


def node_context(
    traces: CapacityTraces, spec: JobSpec, nodes: int, start: int, *, reads_future: bool = False
) -> NodeJobContext:
    """What a policy may know at the start of a job (the future only for the bound)."""
    job = spec.ticks(traces.gap_seconds)
    return NodeJobContext(
        nodes=nodes,
        job=job,
        spot_price=spec.spot_price,
        on_demand_price=spec.on_demand_price,
        n_pools=traces.capacity.shape[0],
        past_capacity=traces.capacity[:, :start],
        future_capacity=traces.capacity[:, start : start + job.deadline] if reads_future else None,
    )
