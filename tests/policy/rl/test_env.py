"""The training environment: one job an episode, gymnasium's and SB3's checks, the reward."""

from __future__ import annotations

import numpy as np
import pytest

from spotwise.policy.job import REFERENCE
from spotwise.policy.rl.env import SpotJobEnv
from spotwise.policy.rl.train import training_starts
from spotwise.policy.traces import TraceSet

SPEC = REFERENCE


def test_the_env_passes_gymnasium_and_sb3_checks(bundled: TraceSet) -> None:
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    starts = training_starts(bundled, SPEC, 480)
    assert starts and max(starts) * bundled.gap_seconds / 3600 + 60 <= 480
    import gymnasium as gym

    from spotwise.policy.rl.env import ENV_ID

    made = gym.make(ENV_ID, traces=bundled, spec=SPEC, max_pools=9, starts=starts)
    check_env(made.unwrapped)
    sb3_check_env(SpotJobEnv(bundled, SPEC, max_pools=9, starts=starts))


def test_an_episode_returns_minus_its_cost_ratio_and_the_interval_matters(
    bundled: TraceSet,
) -> None:
    ratios = []
    for interval in (0, 2):  # 10 and 90 minutes between checkpoints, on demand throughout
        env = SpotJobEnv(bundled, SPEC, max_pools=9, starts=[3000], single_share=0.0)
        env.reset(seed=0)
        total, done, info = 0.0, False, dict[str, float]()
        while not done:
            _, reward, terminated, truncated, info = env.step(np.array([1, interval]))
            total += reward
            done = terminated or truncated
        assert terminated and total == pytest.approx(-info["cost_ratio"])
        ratios.append(info["cost_ratio"])
    assert ratios[0] > ratios[1] > 1.0  # each checkpoint stalls 30 s of billed time
