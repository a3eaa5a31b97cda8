"""Behaviour cloning: a warm start for PPO from a rule policy's decisions.

The expert (e.g. ``risk_aware``) plays jobs of the training environment; at every tick where
the agent would choose, its action and checkpoint interval are recorded with the agent's
features. The PPO policy network is then fitted to them by maximum likelihood, so that PPO
starts from the expert instead of from random actions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from tqdm import tqdm

from spotwise import policy
from spotwise.policy.policies.base import SPOT0, WAIT, Action, JobContext, Observation, Policy
from spotwise.policy.rl.env import CHECKPOINT_MINUTES, SpotJobEnv
from spotwise.policy.rl.features import GLOBAL_FEATURES, POOL_FEATURES, RUNS_HERE


class _Follower:
    """Plays the expert along every tick of the env's current job (for its forecasts)."""

    def __init__(self, env: SpotJobEnv, expert: str) -> None:
        self.env, self.expert = env, expert
        self.policy: Policy | None = None
        self.context: JobContext | None = None
        self.action: Action = WAIT

    def __call__(self, obs: Observation) -> None:
        if self.policy is None or self.context is not self.env.context:  # a new job
            self.policy, self.context = policy.load(self.expert), self.env.context
            self.policy.reset(self.context)
        self.action = self.policy.act(obs)

    def interval(self) -> int:
        """Index of the env's checkpoint interval nearest the expert's (30 min if none)."""
        ticks = self.action.checkpoint_ticks
        if ticks is None:
            return CHECKPOINT_MINUTES.index(30.0)
        wanted = max(ticks * self.env.traces.gap_seconds / 60.0, 1e-9)
        return int(np.argmin(np.abs(np.log(np.array(CHECKPOINT_MINUTES) / wanted))))


def demonstrations(
    env: SpotJobEnv,
    expert: str,
    episodes: int,
    seed: int,
    *,
    progress: bool = False,
    learner: object | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(features, actions) at the choice points of ``episodes`` jobs played by ``expert``;
    with ``learner`` (an SB3 model), the learner plays and the expert only labels the states
    it reaches (DAgger: the learner is taught where its own mistakes lead)."""
    features: list[np.ndarray] = []
    actions: list[list[int]] = []
    follower = _Follower(env, expert)
    env.on_tick = follower
    try:
        for episode in tqdm(range(episodes), desc=f"{expert} demos", disable=not progress):
            vector, _ = env.reset(seed=seed + episode)
            done = False
            while not done:
                action = [follower.action.instance, follower.interval()]
                features.append(vector)
                actions.append(action)
                played = np.array(action)
                if learner is not None:
                    played, _ = learner.predict(vector, deterministic=True)  # type: ignore[attr-defined]
                vector, _, terminated, truncated, _ = env.step(played)
                done = terminated or truncated
    finally:
        env.on_tick = None
    return np.asarray(features, dtype=np.float32), np.asarray(actions, dtype=np.int64)


def choice_kinds(features: np.ndarray, instances: np.ndarray) -> np.ndarray:
    """Each choice's kind: 0 wait, 1 on-demand, 2 stay in the spot pool it runs in (its
    "runs here" feature), 3 spot in another pool."""
    kinds = np.minimum(instances, SPOT0 + 1).astype(np.int64)
    on_spot = np.flatnonzero(instances >= SPOT0)
    column = GLOBAL_FEATURES + (instances[on_spot] - SPOT0) * POOL_FEATURES + RUNS_HERE
    kinds[on_spot[features[on_spot, column] > 0.5]] = SPOT0
    return kinds


def clone(
    model: object,
    features: np.ndarray,
    actions: np.ndarray,
    *,
    epochs: int,
    seed: int,
    balance: bool = True,
    on_epoch: Callable[[int, float], None] | None = None,
) -> float:
    """Fit the SB3 model's policy to (features, actions) by maximum likelihood; the final
    mean negative log-likelihood."""
    import torch

    policy = model.policy  # type: ignore[attr-defined]
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    x = torch.as_tensor(features)
    y = torch.as_tensor(actions)
    # Most choice points are "stay where it runs"; the rare moves are what matters, so each kind
    # of choice (wait, on-demand, stay on spot, spot elsewhere) weighs the same in total.
    kinds = choice_kinds(features, actions[:, 0])
    counts = np.bincount(kinds)
    share = len(actions) / (np.count_nonzero(counts) * counts[kinds])
    weights = torch.as_tensor(share, dtype=x.dtype)
    weights = weights if balance else torch.ones_like(weights)
    loss_value = float("nan")
    for epoch in range(epochs):
        order = torch.randperm(len(x), generator=generator)
        total = 0.0
        for batch in order.split(256):
            distribution = policy.get_distribution(x[batch])
            loss = -(weights[batch] * distribution.log_prob(y[batch])).sum() / weights[batch].sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(batch)
        loss_value = total / len(x)
        if on_epoch:
            on_epoch(epoch, loss_value)
    return loss_value
