"""The omniscient bound: the exact minimum-cost schedule that meets the deadline, knowing the
whole trace. Every other policy is measured against it.

Dynamic programming backwards over tick × instance × progress: V[t, s, p] is the least cost to
finish from tick t with progress p on instance s (changeover done). The instances are: idle,
with the checkpoint in region g (or nowhere yet); on demand in region r; spot in pool z. At
each tick the instance can run on (if its pool is available), stop (idle, the checkpoint staying
where it was written), or change to another instance, which costs D ticks of that market's
price (the pool available through the changeover), the launch's request charge, and the
checkpoint's egress from the region it is in to the new one. Aborting a changeover is never
cheaper than not starting it, so the recursion only starts whole ones. The schedule is then
replayed through the simulator, so its cost is the simulator's.
"""

from __future__ import annotations

from collections import deque
from fractions import Fraction

import numpy as np

from spotwise.policy.errors import PolicyError
from spotwise.policy.policies.base import (
    NONE,
    ON_DEMAND,
    Action,
    JobContext,
    Observation,
    Policy,
    spot,
)
from spotwise.policy.pools.regions import Regions

CONTINUE, WAIT = 0, 1
"""Decision codes; 2 + s means 'change to instance s'."""


class Omniscient(Policy):
    """Replays the optimal schedule computed from the whole job's trace."""

    name = "omniscient"
    reads_future = True

    def reset(self, context: JobContext) -> None:
        """Plan the whole job."""
        self.plan_cost, self._actions = optimal_schedule(context)

    def act(self, obs: Observation) -> Action:
        """The planned action for this tick."""
        return self._actions[obs.tick]


def _progress_units(speed: np.ndarray) -> int:
    """Smallest Q <= 8 such that every speed is a whole number of 1/Q progress units."""
    for q in range(1, 9):
        if all(abs(s * q - round(s * q)) < 1e-9 for s in speed):
            return q
    raise PolicyError(
        f"the omniscient bound needs pool speeds that are multiples of 1/8, got {list(speed)}; "
        f"e.g. {[str(Fraction(float(s)).limit_denominator(8)) for s in speed]}"
    )


class _States:
    """The instances of the recursion, numbered: idle with the checkpoint in region g
    (0..R, R = nowhere yet), on demand in region r, spot in pool z."""

    def __init__(self, regions: Regions) -> None:
        self.n_regions = r = regions.count
        self.n_pools = len(regions.of_pool)
        self.od0 = r + 1
        self.spot0 = 2 * r + 1
        self.count = self.spot0 + self.n_pools
        self.region = np.concatenate([np.arange(r + 1), np.arange(r), regions.of_pool])
        """The region each state's checkpoint is in (R: nowhere)."""
        self.members = [
            np.array([self.od0 + q, *(self.spot0 + np.flatnonzero(regions.of_pool == q))])
            for q in range(r)
        ]
        """The instances (on demand, spot) of each region."""

    def action(self, s: int) -> Action:
        """The simulator's action for state ``s``."""
        if s < self.od0:
            return Action(NONE)
        if s < self.spot0:
            return Action(ON_DEMAND, region=s - self.od0)
        return Action(spot(s - self.spot0))


def optimal_schedule(context: JobContext) -> tuple[float, list[Action]]:
    """The minimum cost and the per-tick actions that achieve it.

    Raises:
        PolicyError: when the context lacks the future, or no schedule meets the deadline.
    """
    if context.future_available is None or context.future_prices is None:
        raise PolicyError("the omniscient bound needs the whole trace of the job")
    job = context.job
    regions = context.regions or Regions.of(context.pools, context.on_demand_price)
    states = _States(regions)
    n, n_regions = states.count, regions.count
    horizon, changeover = job.deadline, job.changeover
    units = _progress_units(context.speed)
    goal = job.work * units
    hours = job.hours_per_tick

    price = np.zeros((n, horizon))
    price[states.od0 : states.spot0] = (regions.on_demand * hours)[:, None]
    price[states.spot0 :] = context.future_prices[:, :horizon] * hours
    up = np.ones((n, horizon), dtype=bool)
    up[states.spot0 :] = context.future_available[:, :horizon]
    step = np.zeros(n, dtype=int)
    step[states.od0 : states.spot0] = units
    step[states.spot0 :] = np.round(context.speed * units).astype(int)
    # what a change costs beside its ticks: egress from the checkpoint's region (row; the last
    # row: nowhere yet) to the new instance's (column), plus the request
    egress = np.zeros((n_regions + 1, n_regions))
    egress[:n_regions] = regions.egress_per_gb * context.checkpoint_gb
    egress += context.request_usd

    cum_price = np.concatenate([np.zeros((n, 1)), np.cumsum(price, axis=1)], axis=1)
    cum_down = np.concatenate([np.zeros((n, 1)), np.cumsum(~up, axis=1)], axis=1)
    span = max(changeover, 1)
    idle = np.arange(states.od0)
    running = np.arange(states.od0, n)
    wait_to = states.region  # a stopped instance leaves its checkpoint where it was

    finished = np.full((n, goal + 1), np.inf)
    finished[:, goal] = 0.0
    later: deque[np.ndarray] = deque([finished] * span, maxlen=span)
    """V[t + 1], ..., V[t + span] (past the deadline: only a finished job costs nothing)."""
    dtype = np.int8 if n + 2 < 127 else np.int16
    decision = np.zeros((horizon, n, goal + 1), dtype=dtype)
    gained = np.minimum(np.arange(goal)[None, :] + step[:, None], goal)
    rows = np.arange(n)[:, None]
    cols = np.arange(goal + 1)
    for t in range(horizon - 1, -1, -1):
        after = later[0]
        run = np.full((n, goal + 1), np.inf)
        run[:, :goal] = price[:, t, None] + after[rows, gained]
        run[~up[:, t]] = np.inf
        run[idle] = np.inf
        wait = after[wait_to]
        # a change to s': its ticks' price, then V[t + D, s'] (D = 0: it runs at once)
        target = np.full((n, goal + 1), np.inf)
        if t + span <= horizon:
            whole = cum_down[running, t + span] - cum_down[running, t] == 0
            if changeover == 0:
                target[running] = run[running]
            else:
                cost = cum_price[running, t + changeover] - cum_price[running, t]
                target[running] = cost[:, None] + later[changeover - 1][running]
            target[running[~whole]] = np.inf
        best_in = np.empty((n_regions, goal + 1))
        pick_in = np.empty((n_regions, goal + 1), dtype=int)
        for q, members in enumerate(states.members):
            within = target[members]
            k = np.argmin(within, axis=0)
            best_in[q], pick_in[q] = within[k, cols], members[k]
        moved = egress[:, :, None] + best_in[None, :, :]  # [from region, to region, p]
        to = np.argmin(moved, axis=1)
        change = np.take_along_axis(moved, to[:, None, :], axis=1)[:, 0]
        change_to = pick_in[to, cols[None, :]]
        options = np.stack([run, wait, change[states.region]])
        pick = np.argmin(options, axis=0)
        value = np.take_along_axis(options, pick[None], axis=0)[0]
        choice = np.where(pick == 2, 2 + change_to[states.region], pick)
        # a spot instance whose pool is down at t is preempted: it faces idle's choices there
        down = np.flatnonzero(~up[:, t])
        value[down] = value[states.region[down]]
        choice[down] = choice[states.region[down]]
        value[:, goal] = 0.0
        decision[t] = choice
        later.appendleft(value)
    total = float(later[0][n_regions, 0])
    if not np.isfinite(total):
        raise PolicyError("no schedule meets the deadline (the job does not fit on demand)")
    return total, _replay(decision, up, step, goal, changeover, states)


def _replay(
    decision: np.ndarray,
    up: np.ndarray,
    step: np.ndarray,
    goal: int,
    changeover: int,
    states: _States,
) -> list[Action]:
    """Per-tick actions following the decisions from tick 0, progress 0, no checkpoint."""
    horizon = decision.shape[0]
    actions = [Action(NONE)] * horizon
    t, p, s = 0, 0, states.n_regions
    while t < horizon and p < goal:
        if not up[s, t]:
            s = int(states.region[s])
        d = int(decision[t, s, p])
        if d == CONTINUE:
            actions[t] = states.action(s)
            p = min(p + int(step[s]), goal)
            t += 1
        elif d == WAIT:
            actions[t] = Action(NONE)
            s = int(states.region[s])
            t += 1
        else:
            s = d - 2
            if changeover == 0:
                actions[t] = states.action(s)
                p = min(p + int(step[s]), goal)
                t += 1
            else:
                actions[t : t + changeover] = [states.action(s)] * len(actions[t : t + changeover])
                t += changeover
    return actions
