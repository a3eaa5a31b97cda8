"""A gymnasium environment over the simulator: one episode = one job on a real trace.

Observation: :class:`spotwise.policy.rl.features.FeatureBuilder`'s vector. Action: (instance,
checkpoint interval), the instance being wait, on-demand or spot in pool slot z, and the interval
one of :data:`CHECKPOINT_MINUTES` (scored in the simulator's checkpoint mode). Reward: minus the
cost over the job's on-demand cost, so an episode returns minus its cost ratio. ``terminated`` = the
job is done, ``truncated`` = the deadline passed. The agent is asked only at ticks where it has
a choice (:class:`Guardrails`: a spot instance runs until preempted, unless ``moves`` lets the
agent stay or move every tick it runs; the safety net takes over
when only on-demand can still meet the deadline); the ticks in between run on by the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from spotwise.policy.job import JobSpec
from spotwise.policy.policies.base import NONE, ON_DEMAND, SPOT0, Action, Observation, request
from spotwise.policy.policies.rules import Guardrails
from spotwise.policy.rl.features import FeatureBuilder, observation_size
from spotwise.policy.simulate import (
    EVERYTHING,
    FLEET,
    CheckpointMode,
    JobRun,
    Provider,
    Visibility,
    context_for,
)
from spotwise.policy.traces import TraceSet

CHECKPOINT_MINUTES = (10.0, 30.0, 90.0)
ENV_ID = "spotwise/SpotJob-v0"


def instance_action(slot: int, n_pools: int) -> int:
    """Simulator action of an instance choice (a spot slot with no pool means wait)."""
    if slot < SPOT0:
        return slot
    return slot if slot - SPOT0 < n_pools else NONE


def launch(
    instance: int,
    obs: Observation,
    blind: bool,
    checkpoint_ticks: int,
    ranking: Sequence[int] | None = None,
) -> Action:
    """The simulator action of an instance choice; blind (``current``/``probe``), a spot choice
    asks for its pool first and every other pool not just seen down after it (best first by
    ``ranking``, else in order), and waiting asks again (a failed request costs only the idle
    tick)."""
    if not blind or instance == ON_DEMAND or obs.state >= SPOT0:
        return Action(instance, checkpoint_ticks=checkpoint_ticks)
    pools = list(ranking) if ranking is not None else obs.askable()
    if instance >= SPOT0:
        pools = [instance - SPOT0, *(z for z in pools if z != instance - SPOT0)]
    return request(pools, checkpoint_ticks)


def spaces(max_pools: int) -> tuple[gym.spaces.Box, gym.spaces.MultiDiscrete]:
    """The observation and action spaces of a job over at most ``max_pools`` pools."""
    observations = gym.spaces.Box(
        low=-10.0, high=10.0, shape=(observation_size(max_pools),), dtype=np.float32
    )
    return observations, gym.spaces.MultiDiscrete([SPOT0 + max_pools, len(CHECKPOINT_MINUTES)])


@dataclass(frozen=True, slots=True)
class Scenario:
    """One kind of job to train on: its traces, shape, what the controller sees, the start
    ticks it may begin at, and the provider's request terms."""

    traces: TraceSet
    spec: JobSpec
    starts: Sequence[int]
    visibility: Visibility = EVERYTHING
    provider: Provider = FLEET


class SpotJobEnv(gym.Env[np.ndarray, np.ndarray]):
    """Jobs on random start ticks of ``traces`` (each on one random pool with probability
    ``single_share``, else on all pools), every start's deadline before ``until_tick``. With
    ``scenarios``, each job first draws one of them (its traces, shape, visibility, starts),
    and ``traces``, ``spec`` and ``starts`` only seed the spaces."""

    def __init__(
        self,
        traces: TraceSet,
        spec: JobSpec,
        *,
        max_pools: int,
        starts: Sequence[int],
        single_share: float = 0.5,
        checkpoint: CheckpointMode | None = None,
        visibility: Visibility = EVERYTHING,
        scenarios: Sequence[Scenario] = (),
        moves: bool = False,
    ) -> None:
        self.scenarios = list(scenarios) or [Scenario(traces, spec, list(starts), visibility)]
        if any(not s.starts for s in self.scenarios):
            raise ValueError("no job start fits before the training cut-off")
        self.max_pools, self.moves = max_pools, moves
        self.single_share = single_share
        self._use(self.scenarios[0])
        self.checkpoint = checkpoint or CheckpointMode(
            interval_minutes=None, stall_seconds=30.0, notice_seconds=120.0
        )
        self.observation_space, self.action_space = spaces(max_pools)
        self.on_tick: Callable[[Observation], None] | None = None
        """Called with every tick's observation (an expert to imitate follows the job)."""

    def _use(self, scenario: Scenario) -> None:
        self.traces, self.job_spec = scenario.traces, scenario.spec
        self.starts, self.visibility = list(scenario.starts), scenario.visibility
        self.provider = scenario.provider
        self._ticks_per_minute = 60.0 / scenario.traces.gap_seconds

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """A new job on a random scenario, start and pool set."""
        super().reset(seed=seed)
        if len(self.scenarios) > 1:
            self._use(self.scenarios[int(self.np_random.integers(len(self.scenarios)))])
        start = int(self.np_random.choice(self.starts))
        traces = self.traces
        if self.np_random.random() < self.single_share:
            traces = traces.subset([traces.names[int(self.np_random.integers(len(traces.names)))]])
        self._run = JobRun(
            traces, self.job_spec, start, self.checkpoint, self.visibility, provider=self.provider
        )
        context = context_for(
            traces,
            self.job_spec,
            start,
            self.checkpoint,
            visibility=self.visibility,
            provider=self.provider,
        )
        self.context = context
        self._features = FeatureBuilder(context, self.max_pools)
        self._rules = Guardrails(context, moves=self.moves)
        self._n_pools = len(traces.pools)
        job = self._run.job
        self._scale = (
            (job.work + job.changeover) * self.job_spec.on_demand_price * job.hours_per_tick
        )
        self._interval = 1
        self._obs = self._run.observe()
        self._cost = self._advance()
        return self._features.vector(self._obs), {}

    def _advance(self) -> float:
        """Run the ticks whose action the rules fix; stop at the next choice or the end."""
        cost = 0.0
        while not self._run.over:
            # the features' risk forecast sees every tick, as it does at inference
            self._features.observe(self._obs)
            if self.on_tick is not None:
                self.on_tick(self._obs)
            action = self._rules.fixed(self._obs)
            if action is None:
                break
            cost += self._run.step(Action(action, checkpoint_ticks=self._interval))
            if not self._run.over:
                self._obs = self._run.observe()
        return cost

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Run the chosen action for one tick, then every tick up to the next choice."""
        run = self._run
        self._interval = max(1, round(CHECKPOINT_MINUTES[int(action[1])] * self._ticks_per_minute))
        chosen = launch(  # as the deployed policy acts (a blind spot choice is a request)
            instance_action(int(action[0]), self._n_pools),
            self._obs,
            self.visibility.observe != "all",
            self._interval,
            self._features.ranking,
        )
        cost = self._cost + run.step(chosen)
        self._cost = 0.0
        if not run.over:
            self._obs = run.observe()
            cost += self._advance()
        terminated, truncated = run.finished, not run.finished and run.over
        info: dict[str, Any] = {}
        if terminated or truncated:
            info["cost_ratio"] = run.result().cost_ratio
        return self._features.vector(self._obs), -cost / self._scale, terminated, truncated, info


def register_env() -> None:
    """Make ``gym.make(ENV_ID, ...)`` build :class:`SpotJobEnv`."""
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point="spotwise.policy.rl.env:SpotJobEnv")


register_env()
