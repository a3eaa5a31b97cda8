"""The trace simulator: one job under one policy, tick by tick, with the semantics of
docs/design.md, "Policy benchmark semantics".

In each tick the policy picks wait, on-demand, or spot in pool z (only if z is available at
that tick and its price is within the policy's bid; else the job keeps what it has, so an idle
job waits). Picking something other
than the current instance starts a changeover: D ticks billed at that market's price and not
productive. A spot instance whose
pool turns unavailable (or whose price rises above the policy's bid) is preempted at the
start of that tick. Each productive tick adds the instance's speed to progress; the job is
done when progress reaches K and misses its deadline if not done by T.

Pools may lie in different regions (:mod:`spotwise.policy.pools.regions`), each with its on-demand
price: on demand runs in the region the action names (by default where the checkpoint is). A
new instance in another region than the checkpoint's reads it from there: the job's
``checkpoint_gb`` times the egress price, billed at the switch. Every launch that lands is billed
the job's ``request_usd``; every request, landed or failed, is counted (a request naming the
pool the job runs in keeps it: no request). A running instance may
be left for another at any tick (a move). Where the provider ends what runs when a request
fails (:class:`Provider`), a request made from a running instance ends it first.

Checkpoint mode (off by default: the CBL setting, where a preemption loses no work) adds a
checkpoint every M minutes of productive time, each stalling progress S seconds, and a
preemption loses the progress since the last checkpoint unless the notice (N seconds) is long
enough to write one (N >= S).

Observation modes (docs/design.md, "What a real controller can see"): in ``all`` the policy sees
every pool at every tick. In ``current`` and ``probe`` it sees the pool it runs in; a spot
action is a launch request naming one or more pools, which lands in the cheapest available one
or fails. A failed request keeps the instance the job has; an idle job loses the tick, and
with ``probe_seconds`` longer than a tick, the ticks those seconds span. In ``probe`` mode the
policy learns the availability of every pool it named, as of that tick.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from spotwise.policy.job import JobSpec
from spotwise.policy.observe import ObserveMode
from spotwise.policy.policies.base import (
    NONE,
    ON_DEMAND,
    SPOT0,
    Action,
    JobContext,
    Observation,
    Policy,
)
from spotwise.policy.pools.regions import NOWHERE, Regions
from spotwise.policy.pools.shared_pools import SharedPools
from spotwise.policy.traces import TraceSet
from spotwise.pricing.forecast.prior import PoolPrior


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointMode:
    """Checkpoint costs: interval (None = the ``checkpoint_ticks`` of the policy's actions),
    stall, notice."""

    interval_minutes: float | None
    stall_seconds: float
    notice_seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Provider:
    """How the provider treats a launch request that fails: it keeps the instance the job had
    (EC2 Fleet: a request is a probe) or ends it (an orchestrator that tears down before it
    relaunches)."""

    failed_request_ends: bool = False


FLEET = Provider()
"""A failed request keeps what runs."""
TEARDOWN = Provider(failed_request_ends=True)
"""A failed request ends what runs."""


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
    failed_requests: int = 0
    requests: int = 0
    """Launch requests made, landed or not."""
    moves: int = 0
    """Running instances left for another (proactive moves, returns from on demand)."""
    egress_usd: float = 0.0
    """Of ``cost``: checkpoints read from another region."""
    request_usd: float = 0.0
    """Of ``cost``: launches' request charges."""
    hours: float = 0.0
    """Hours from the job's start to its end."""
    on_demand_asks: float = 0.0
    """While on demand: the most any one pool was named in requests, per changeover of time
    spent on demand."""


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Visibility:
    """What a controller is shown: the observation mode, the cost of a failed launch request,
    how many hours of each pool's past it has (None = all), and its prior for unseen pools."""

    observe: ObserveMode = "all"
    probe_seconds: float = 60.0
    history_hours: float | None = None
    prior: PoolPrior | None = None

    def probe_ticks(self, gap_seconds: float) -> int:
        """Ticks a failed request costs an idle job (0 in ``all`` mode)."""
        if self.observe == "all":
            return 0
        return max(1, math.ceil(self.probe_seconds / gap_seconds - 1e-9))


EVERYTHING = Visibility()
"""The literature's setting: every pool at every tick, all of the past."""


def context_for(
    traces: TraceSet,
    spec: JobSpec,
    start: int,
    checkpoint: CheckpointMode | None = None,
    *,
    reads_future: bool = False,
    visibility: Visibility = EVERYTHING,
    provider: Provider = FLEET,
) -> JobContext:
    """What a policy may know at the start of a job: the past it is given, or everything if
    it is the omniscient bound (``reads_future``)."""
    job = spec.ticks(traces.gap_seconds)
    end = start + job.deadline
    prices = traces.spot_prices(spec.spot_price)
    first = 0
    if visibility.history_hours is not None:
        first = max(0, start - round(visibility.history_hours * 3600 / traces.gap_seconds))
    return JobContext(
        job=job,
        pools=traces.pools,
        spot_price=prices[:, start],
        on_demand_price=spec.on_demand_price,
        speed=np.array([p.speed for p in traces.pools]),
        past_available=traces.available[:, first:start],
        checkpoint_stall_ticks=0.0
        if checkpoint is None
        else checkpoint.stall_seconds / traces.gap_seconds,
        future_available=traces.available[:, start:end] if reads_future else None,
        future_prices=prices[:, start:end] if reads_future else None,
        observe=visibility.observe,
        probe_ticks=visibility.probe_ticks(traces.gap_seconds),
        prior=visibility.prior,
        regions=Regions.of(traces.pools, spec.on_demand_price),
        checkpoint_gb=spec.checkpoint_gb,
        request_usd=spec.request_usd,
        failed_request_ends=provider.failed_request_ends,
    )


@dataclass(frozen=True, slots=True)
class Sight:
    """Each pool's availability as last seen, and when (trace ticks; -inf: never)."""

    up: np.ndarray
    at: np.ndarray

    @classmethod
    def blank(cls, n_pools: int) -> Sight:
        """Nothing seen yet in any of ``n_pools`` pools."""
        return cls(np.zeros(n_pools, dtype=bool), np.full(n_pools, -np.inf))


class JobRun:
    """One job on a trace, one tick at a time: :meth:`observe` the tick, then :meth:`step` it
    with an action. :func:`simulate` and the RL environment both drive the simulator this way."""

    def __init__(
        self,
        traces: TraceSet,
        spec: JobSpec,
        start: int,
        checkpoint: CheckpointMode | None = None,
        visibility: Visibility = EVERYTHING,
        sight: Sight | None = None,
        pools: SharedPools | None = None,
        provider: Provider = FLEET,
    ) -> None:
        """``sight``: what launches and instances showed of each pool, shared with other jobs
        (a fleet's controller sees what all of its jobs see; default: this job's own).
        ``pools``: node counts the job shares with others (default: a pool that is up has room
        for every job)."""
        job = spec.ticks(traces.gap_seconds)
        self.job, self.start, self.checkpoint = job, start, checkpoint
        self.observe_mode = visibility.observe
        self._probe_ticks = visibility.probe_ticks(traces.gap_seconds)
        self._blocked_until = 0
        n_pools = len(traces.pools)
        sight = sight or Sight.blank(n_pools)
        self._seen, self._seen_at = sight.up, sight.at
        self._available = traces.available
        self._pools = pools
        self._prices = traces.spot_prices(spec.spot_price)
        self._speed = [p.speed for p in traces.pools]
        self._tick_hours = job.hours_per_tick
        self._od_tick = spec.on_demand_price * job.hours_per_tick
        self.regions = Regions.of(traces.pools, spec.on_demand_price)
        self._od_ticks = self.regions.on_demand * job.hours_per_tick
        self._gb, self._fee = spec.checkpoint_gb, spec.request_usd
        self._ends = provider.failed_request_ends
        self._ckpt = self._od_region = NOWHERE
        self._stall = self._lost_on_preemption = self._interval = 0.0
        if checkpoint is not None:
            self._stall = checkpoint.stall_seconds / traces.gap_seconds
            minutes = checkpoint.interval_minutes
            self._interval = (minutes * 60 / traces.gap_seconds) if minutes else 0.0
            notice_covers = checkpoint.notice_seconds >= checkpoint.stall_seconds
            self._lost_on_preemption = 0.0 if notice_covers else 1.0
        self.obs = Observation(
            tick=0,
            progress=0.0,
            state=NONE,
            changeover_left=0,
            preempted=False,
            available=self._available[:, start],
            prices=self._prices[:, start],
            last_seen=None if visibility.observe == "all" else self._seen,
            seen_age=None if visibility.observe == "all" else np.full(n_pools, np.inf),
        )
        self.tick = 0
        self.failed_requests = self.requests = self.moves = 0
        self._od_asks = np.zeros(len(traces.pools), dtype=int)
        self.egress_usd = self.request_usd = 0.0
        self.cost = self.progress = 0.0
        self._state, self._left = NONE, 0
        self._committed = self._since_checkpoint = self._stall_debt = 0.0
        self.spot_ticks = self.od_ticks = self.preemptions = 0
        self.changeovers = self.checkpoints = 0
        self.lost = 0.0
        self._bid: float | None = None
        self.finish = job.deadline
        self.finished = False

    @property
    def over(self) -> bool:
        """Whether the job is done or its deadline has passed."""
        return self.finished or self.tick >= self.job.deadline

    @property
    def blocked(self) -> bool:
        """Whether a failed launch request still takes the job's time this tick."""
        return self.tick < self._blocked_until

    def observe(self) -> Observation:
        """Start the current tick: apply a preemption, then show the tick (reused object)."""
        now, obs = self.start + self.tick, self.obs
        obs.preempted, obs.preempted_pool = False, -1
        if self._pools is not None:
            self._pools.settle(now)
        if self._state >= SPOT0 and self._preempted_now(self._state - SPOT0, now):
            obs.preempted, obs.preempted_pool = True, self._state - SPOT0
            self._preempt(self._state - SPOT0, now)
        obs.tick, obs.progress, obs.state = self.tick, self.progress, self._state
        obs.changeover_left = self._left
        obs.region = self._ckpt
        obs.od_region = self._od_region if self._state == ON_DEMAND else NOWHERE
        obs.prices = self._prices[:, now]
        if self.observe_mode == "all":
            obs.available = self._open(now)
            return obs
        if self._state >= SPOT0:
            z = self._state - SPOT0
            self._seen[z], self._seen_at[z] = True, now
        assert obs.seen_age is not None
        np.subtract(now, self._seen_at, out=obs.seen_age)
        obs.available = self._seen & (obs.seen_age == 0)
        return obs

    def _preempted_now(self, z: int, now: int) -> bool:
        """Whether the spot instance in pool ``z`` is taken back at ``now``: the pool is down,
        the price is above the bid, or a shared pool takes the node back."""
        return bool(
            not self._available[z, now]
            or (self._bid is not None and self._prices[z, now] > self._bid)
            or (self._pools is not None and self._pools.took_back(self))
        )

    def _preempt(self, z: int, now: int) -> None:
        """The spot instance in pool ``z`` is gone: the job is idle, back at its checkpoint."""
        self._release()
        self.preemptions += 1
        self._seen[z], self._seen_at[z] = False, now
        if self.checkpoint is not None:
            if self._lost_on_preemption:
                self.lost += self.progress - self._committed
                self.progress = self._committed
            self._committed = self.progress
            self._since_checkpoint = 0.0
        self._state, self._left = NONE, 0

    def _land(self, action: Action, bid: float | None) -> int:
        """Where a launch request lands this tick: the cheapest available named pool (the
        earlier named on a tie), else the instance the job already has; learns what it named."""
        now = self.start + self.tick
        named = list(action.named_pools())
        open_ = self._open(now)
        if self.observe_mode == "probe":
            self._seen[named] = open_[named]
            self._seen_at[named] = now
        best, best_price = -1, math.inf
        for z in named:
            price = self._prices[z, now]
            if open_[z] and (bid is None or price <= bid) and price < best_price:
                best, best_price = z, price
        self.requests += 1
        if self._state == ON_DEMAND:
            self._od_asks[named] += 1
        if best >= 0:
            return SPOT0 + best
        self.failed_requests += 1
        if self._ends and self._state != NONE:
            self._stop()  # the provider tore down what ran before it asked
        if self._state == NONE:
            self._blocked_until = self.tick + self._probe_ticks
        return self._state

    def step(self, choice: Action) -> float:
        """Run the current tick with the policy's ``choice`` and return what it cost."""
        now = self.start + self.tick
        before = self.cost
        action = self._chosen(choice)
        region = self._on_demand_region(choice) if action == ON_DEMAND else NOWHERE
        if action != self._state or (action == ON_DEMAND and region != self._od_region):
            self._switch(action, choice.bid, region)
        self.tick += 1
        if self._state == NONE:
            return 0.0
        gain = self._bill(now)
        if self._left > 0:
            self._left -= 1
            return self.cost - before
        if self.checkpoint is not None:
            gain = self._after_checkpoints(gain, choice.checkpoint_ticks)
        self.progress += gain
        if self.progress >= self.job.work - 1e-9:
            self.finish = self.tick
            self.finished = True
        if self.over:
            self._release()
        return self.cost - before

    def _chosen(self, choice: Action) -> int:
        """The instance the job has this tick: none while a failed request takes its time,
        where a launch request lands, else the one chosen."""
        if self.tick < self._blocked_until:
            return NONE  # a failed request is still taking the job's time
        if choice.instance >= SPOT0 and self._state - SPOT0 not in choice.named_pools():
            return self._land(choice, choice.bid)
        return self._state if choice.instance >= SPOT0 else choice.instance

    def _on_demand_region(self, choice: Action) -> int:
        """Where an on-demand action runs: the region it names, else the one it runs in, else
        the checkpoint's, else the cheapest."""
        if choice.region is not None:
            return choice.region
        if self._state == ON_DEMAND:
            return self._od_region
        if self._ckpt != NOWHERE:
            return self._ckpt
        return int(self.regions.on_demand.argmin())

    def _switch(self, action: int, bid: float | None, region: int = NOWHERE) -> None:
        """Leave the current instance for ``action`` (on demand: in ``region``): a changeover
        onto a new one, which reads the checkpoint from where it is and pays its request."""
        if self._state != NONE and action != NONE:
            self.moves += 1
        self._release()
        self._state = action
        if action >= SPOT0 and self._pools is not None:
            self._pools.hold(action - SPOT0, self)
        self._left = self.job.changeover if action != NONE else 0
        self._od_region = region if action == ON_DEMAND else NOWHERE
        if action != NONE:
            self.changeovers += 1
            self._bid = bid if action >= SPOT0 else None
            where = region if action == ON_DEMAND else int(self.regions.of_pool[action - SPOT0])
            egress = self.regions.move_usd(self._ckpt, where, self._gb)
            self._ckpt = where
            self.cost += egress + self._fee
            self.egress_usd += egress
            self.request_usd += self._fee
            if action == ON_DEMAND:
                self.requests += 1  # a spot launch counted its request where it landed
            if self.checkpoint is not None:
                self.progress = self._committed  # a new instance resumes from the checkpoint

    def _bill(self, now: int) -> float:
        """Bill this tick of the instance the job has; the work it can do (ticks)."""
        if self._state == ON_DEMAND:
            self.cost += self._od_ticks[self._od_region]
            self.od_ticks += 1
            return 1.0
        self.cost += self._prices[self._state - SPOT0, now] * self._tick_hours
        self.spot_ticks += 1
        return self._speed[self._state - SPOT0]

    def _after_checkpoints(self, gain: float, checkpoint_ticks: int | None) -> float:
        """Take a checkpoint when one is due; the work left of ``gain`` after the stalls
        owed."""
        every = self._interval or float(checkpoint_ticks or 0)
        if every and self._since_checkpoint >= every:
            self._stall_debt += self._stall
            self._since_checkpoint = 0.0
            self.checkpoints += 1
            self._committed = self.progress
        stalled = min(gain, self._stall_debt)
        self._stall_debt -= stalled
        self._since_checkpoint += 1
        return gain - stalled

    def let_go(self) -> None:
        """Give up the spot instance before this tick's :meth:`step` (a fleet hands its node
        to another job): checkpointed at once, unbilled from this tick, the job idle."""
        if self._state >= SPOT0:
            self._stop()
            self.obs.state, self.obs.changeover_left = NONE, 0

    def _stop(self) -> None:
        """End the instance the job has: checkpointed at once, the job idle."""
        self._release()
        self._state, self._left = NONE, 0
        self._od_region = NOWHERE
        self._committed = self.progress

    def open_now(self) -> np.ndarray:
        """bool [pools]: where a launch of this job could land this tick (or its instance
        runs): what the cloud knows, not what the job sees."""
        return self._open(self.start + self.tick)

    def _open(self, now: int) -> np.ndarray:
        if self._pools is None:
            return self._available[:, now]
        return self._available[:, now] & self._pools.open_to(self, now)

    def _release(self) -> None:
        if self._pools is not None and self._state >= SPOT0:
            self._pools.release(self._state - SPOT0, self)

    def result(self) -> JobResult:
        """How the job went."""
        job = self.job
        return JobResult(
            cost=self.cost,
            cost_ratio=self.cost / ((job.work + job.changeover) * self._od_tick),
            done=self.finished,
            finish_tick=self.finish,
            spot_ticks=self.spot_ticks,
            on_demand_ticks=self.od_ticks,
            preemptions=self.preemptions,
            changeovers=self.changeovers,
            lost_ticks=self.lost,
            checkpoints=self.checkpoints,
            failed_requests=self.failed_requests,
            requests=self.requests,
            moves=self.moves,
            egress_usd=self.egress_usd,
            request_usd=self.request_usd,
            hours=self.finish * job.hours_per_tick,
            on_demand_asks=float(self._od_asks.max(initial=0))
            / max(self.od_ticks / max(job.changeover, 1), 1.0),
        )


def simulate(
    policy: Policy,
    traces: TraceSet,
    spec: JobSpec,
    start: int,
    checkpoint: CheckpointMode | None = None,
    visibility: Visibility = EVERYTHING,
    provider: Provider = FLEET,
) -> JobResult:
    """Run one job that starts at tick ``start`` of ``traces`` under ``policy``, showing it
    what ``visibility`` allows, on ``provider``'s request terms."""
    policy.reset(
        context_for(
            traces,
            spec,
            start,
            checkpoint,
            reads_future=policy.reads_future,
            visibility=visibility,
            provider=provider,
        )
    )
    run = JobRun(traces, spec, start, checkpoint, visibility, provider=provider)
    while not run.over:
        run.step(policy.act(run.observe()))
    return run.result()
