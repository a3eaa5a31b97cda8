"""The omniscient bound: the exact minimum-cost schedule that meets the deadline, knowing the
whole trace. Every other policy is measured against it.

Dynamic programming backwards over tick × progress × instance: V[t, p, s] is the least cost
to finish from tick t with progress p on instance s (NONE, ON_DEMAND or spot(z), changeover
done). At each tick the instance can run on (if its pool is available), stop, or change to
another instance, which costs D ticks of that market's price and needs the pool available
through the changeover. Aborting a changeover is never cheaper than not starting it, so the
recursion only starts whole ones. The schedule is then replayed through the simulator, so its
cost is the simulator's.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from spotwise.policy.errors import PolicyError
from spotwise.policy.policies.base import NONE, SPOT0, Action, JobContext, Observation, Policy

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
        return Action(int(self._actions[obs.tick]))


def _progress_units(speed: np.ndarray) -> int:
    """Smallest Q <= 8 such that every speed is a whole number of 1/Q progress units."""
    for q in range(1, 9):
        if all(abs(s * q - round(s * q)) < 1e-9 for s in speed):
            return q
    raise PolicyError(
        f"the omniscient bound needs pool speeds that are multiples of 1/8, got {list(speed)}; "
        f"e.g. {[str(Fraction(float(s)).limit_denominator(8)) for s in speed]}"
    )


def optimal_schedule(context: JobContext) -> tuple[float, np.ndarray]:
    """The minimum cost and the per-tick actions that achieve it.

    Raises:
        PolicyError: when the context lacks the future, or no schedule meets the deadline.
    """
    if context.future_available is None or context.future_prices is None:
        raise PolicyError("the omniscient bound needs the whole trace of the job")
    job = context.job
    n_pools = len(context.pools)
    n_states = SPOT0 + n_pools
    horizon, changeover = job.deadline, job.changeover
    units = _progress_units(context.speed)
    goal = job.work * units
    hours = job.hours_per_tick

    # Per-tick price and availability of each instance (NONE costs nothing and is always there).
    price = np.zeros((n_states, horizon))
    price[1] = context.on_demand_price * hours
    price[SPOT0:] = context.future_prices[:, :horizon] * hours
    up = np.ones((n_states, horizon), dtype=bool)
    up[SPOT0:] = context.future_available[:, :horizon]
    step = np.zeros(n_states, dtype=int)
    step[1] = units
    step[SPOT0:] = np.round(context.speed * units).astype(int)

    # Changing to s at t costs its price over t..t+D-1 and needs it up for all of them.
    cum_price = np.concatenate([np.zeros((n_states, 1)), np.cumsum(price, axis=1)], axis=1)
    cum_down = np.concatenate([np.zeros((n_states, 1)), np.cumsum(~up, axis=1)], axis=1)
    span = max(changeover, 1)

    inf = np.inf
    value = np.full((horizon + 1, n_states, goal + 1), inf)
    value[:, :, goal] = 0.0
    decision = np.zeros((horizon, n_states, goal + 1), dtype=np.int16)
    states = np.arange(n_states)
    rows = states[:, None]
    gained = np.minimum(np.arange(goal)[None, :] + step[:, None], goal)
    for t in range(horizon - 1, -1, -1):
        # Run on: pay this tick, gain the instance's step (NONE cannot run; a down pool neither).
        run = np.full((n_states, goal + 1), inf)
        run[:, :goal] = price[:, t, None] + value[t + 1][rows, gained]
        run[~up[:, t]] = inf
        run[NONE] = inf
        wait = value[t + 1, NONE]
        # Change to s': D ticks of its price, then V[t + D, p, s'] (D = 0: run on at once).
        feasible = (states != NONE) & (t + span <= horizon)
        if t + span <= horizon:
            feasible &= cum_down[:, t + span] - cum_down[:, t] == 0
        if changeover == 0:
            change = np.where(feasible[:, None], run, inf)
        else:
            cost = cum_price[:, min(t + changeover, horizon)] - cum_price[:, t]
            change = np.where(
                feasible[:, None], cost[:, None] + value[min(t + changeover, horizon)], inf
            )
        # The best change that is not a change to the instance already running.
        best = np.argmin(change, axis=0)
        cols = np.arange(goal + 1)
        best_cost = change[best, cols]
        masked = change.copy()
        masked[best, cols] = inf
        second = np.argmin(masked, axis=0)
        same = best[None, :] == rows
        other = np.where(same, second[None, :], best[None, :])
        other_cost = np.where(same, masked[second, cols][None, :], best_cost[None, :])
        options = np.stack([run, np.broadcast_to(wait, run.shape), other_cost])
        pick = np.argmin(options, axis=0)
        value[t] = np.take_along_axis(options, pick[None], axis=0)[0]
        decision[t] = np.where(pick == 2, 2 + other, pick)
        # A spot instance whose pool is down at t is preempted: it faces NONE's choices.
        down = states[~up[:, t]]
        value[t, down] = value[t, NONE]
        decision[t, down] = decision[t, NONE]
        value[t, :, goal] = 0.0
    total = float(value[0, NONE, 0])
    if not np.isfinite(total):
        raise PolicyError("no schedule meets the deadline (the job does not fit on demand)")
    return total, _replay(decision, up, step, goal, changeover, horizon)


def _replay(
    decision: np.ndarray, up: np.ndarray, step: np.ndarray, goal: int, changeover: int, horizon: int
) -> np.ndarray:
    """Per-tick actions following the decisions from tick 0, progress 0, no instance."""
    actions = np.full(horizon, NONE, dtype=int)
    t, p, s = 0, 0, NONE
    while t < horizon and p < goal:
        if not up[s, t]:
            s = NONE
        d = int(decision[t, s, p])
        if d == CONTINUE:
            actions[t] = s
            p = min(p + int(step[s]), goal)
            t += 1
        elif d == WAIT:
            actions[t] = NONE
            s = NONE
            t += 1
        else:
            s = d - 2
            if changeover == 0:
                actions[t] = s
                p = min(p + int(step[s]), goal)
                t += 1
            else:
                actions[t : t + changeover] = s
                t += changeover
    return actions
