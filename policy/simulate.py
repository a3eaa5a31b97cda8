"""The trace simulator: one job under one policy, tick by tick, with the semantics of design.md.

In each tick the policy picks wait, on-demand, or spot in pool z (only if z is available at
that tick and its price is within the policy's bid; else it waits). Picking something other
than the current instance starts a changeover: D ticks billed at that market's price and not
productive. A spot instance whose
pool turns unavailable (or whose price rises above the policy's bid) is preempted at the
start of that tick. Each productive tick adds the instance's speed to progress; the job is
done when progress reaches K and misses its deadline if not done by T.

Checkpoint mode (off by default: the CBL setting, where a preemption loses no work) adds a
checkpoint every M minutes of productive time, each stalling progress S seconds, and a
preemption loses the progress since the last checkpoint unless the notice (N seconds) is long
enough to write one (N >= S).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from policy.job import JobSpec
from policy.policies.base import NONE, ON_DEMAND, SPOT0, JobContext, Observation, Policy
from policy.traces import TraceSet


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointMode:
    """Checkpoint costs: interval (None = the policy's ``checkpoint_ticks``), stall, notice."""

    interval_minutes: float | None
    stall_seconds: float
    notice_seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class JobResult:
    """How one job went."""

    cost: float
    cost_ratio: float
    """cost / ((K + D) · on-demand price per tick)."""
    done: bool
    finish_tick: int
    spot_ticks: int
    on_demand_ticks: int
    preemptions: int
    changeovers: int
    lost_ticks: float
    checkpoints: int


def job_starts(
    n_ticks: int,
    gap_seconds: float,
    deadline_ticks: int,
    test_from_hours: float,
    start_every_hours: float,
) -> list[int]:
    """Start ticks: the first tick at or after ``test_from_hours``, then every
    ``round(start_every_hours·3600/g)`` ticks, while the deadline tick lies inside the trace."""
    first = math.ceil(test_from_hours * 3600 / gap_seconds - 1e-9)
    every = max(1, round(start_every_hours * 3600 / gap_seconds))
    return list(range(first, n_ticks - deadline_ticks, every))


def context_for(policy: Policy, traces: TraceSet, spec: JobSpec, start: int) -> JobContext:
    """What ``policy`` may know at the start of a job: the past, or everything if it is the
    omniscient bound."""
    job = spec.ticks(traces.gap_seconds)
    end = start + job.deadline
    prices = traces.spot_prices(spec.spot_price)
    return JobContext(
        job=job,
        pools=traces.pools,
        spot_price=prices[:, start],
        on_demand_price=spec.on_demand_price,
        speed=np.array([p.speed for p in traces.pools]),
        past_available=traces.available[:, :start],
        future_available=traces.available[:, start:end] if policy.reads_future else None,
        future_prices=prices[:, start:end] if policy.reads_future else None,
    )


def simulate(
    policy: Policy,
    traces: TraceSet,
    spec: JobSpec,
    start: int,
    checkpoint: CheckpointMode | None = None,
) -> JobResult:
    """Run one job that starts at tick ``start`` of ``traces`` under ``policy``."""
    job = spec.ticks(traces.gap_seconds)
    policy.reset(context_for(policy, traces, spec, start))
    available = traces.available
    prices = traces.spot_prices(spec.spot_price)
    speed = [p.speed for p in traces.pools]
    tick_hours = job.hours_per_tick
    od_tick = spec.on_demand_price * tick_hours
    stall = lost_on_preemption = 0.0
    interval = 0.0
    if checkpoint is not None:
        stall = checkpoint.stall_seconds / traces.gap_seconds
        minutes = checkpoint.interval_minutes
        interval = (minutes * 60 / traces.gap_seconds) if minutes else 0.0
        lost_on_preemption = 0.0 if checkpoint.notice_seconds >= checkpoint.stall_seconds else 1.0

    obs = Observation(
        tick=0,
        progress=0.0,
        state=NONE,
        changeover_left=0,
        preempted=False,
        available=available[:, start],
        prices=prices[:, start],
    )
    state, left, progress, cost = NONE, 0, 0.0, 0.0
    committed, since_checkpoint, stall_debt = 0.0, 0.0, 0.0
    spot_ticks = od_ticks = preemptions = changeovers = checkpoints = 0
    lost = 0.0
    bid: float | None = None
    finish = job.deadline
    for t in range(job.deadline):
        now = start + t
        obs.preempted = False
        if state >= SPOT0:
            z = state - SPOT0
            if not available[z, now] or (bid is not None and prices[z, now] > bid):
                obs.preempted = True
                preemptions += 1
                if checkpoint is not None:
                    if lost_on_preemption:
                        lost += progress - committed
                        progress = committed
                    committed = progress
                    since_checkpoint = 0.0
                state, left = NONE, 0
        obs.tick, obs.progress, obs.state, obs.changeover_left = t, progress, state, left
        obs.available, obs.prices = available[:, now], prices[:, now]
        action = policy.act(obs)
        if action >= SPOT0 and (
            not available[action - SPOT0, now]
            or (policy.bid is not None and prices[action - SPOT0, now] > policy.bid)
        ):
            action = NONE
        if action != state:
            state = action
            left = job.changeover if action != NONE else 0
            if action != NONE:
                changeovers += 1
                bid = policy.bid if action >= SPOT0 else None
                if checkpoint is not None:
                    progress = committed  # a new instance resumes from the last checkpoint
        if state == NONE:
            continue
        if state == ON_DEMAND:
            cost += od_tick
            od_ticks += 1
            gain = 1.0
        else:
            cost += prices[state - SPOT0, now] * tick_hours
            spot_ticks += 1
            gain = speed[state - SPOT0]
        if left > 0:
            left -= 1
            continue
        if checkpoint is not None:
            every = interval or float(policy.checkpoint_ticks or 0)
            if every and since_checkpoint >= every:
                stall_debt += stall
                since_checkpoint = 0.0
                checkpoints += 1
                committed = progress
            stalled = min(gain, stall_debt)
            stall_debt -= stalled
            gain -= stalled
            since_checkpoint += 1
        progress += gain
        if progress >= job.work - 1e-9:
            finish = t + 1
            break
    done = progress >= job.work - 1e-9
    return JobResult(
        cost=cost,
        cost_ratio=cost / ((job.work + job.changeover) * od_tick),
        done=done,
        finish_tick=finish,
        spot_ticks=spot_ticks,
        on_demand_ticks=od_ticks,
        preemptions=preemptions,
        changeovers=changeovers,
        lost_ticks=lost,
        checkpoints=checkpoints,
    )
