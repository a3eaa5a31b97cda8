"""Behaviour cloning of the expert policy before PPO."""

from __future__ import annotations

import numpy as np
import pytest

from spotwise.policy.job import REFERENCE
from spotwise.policy.rl.env import SpotJobEnv
from spotwise.policy.rl.train import training_starts
from spotwise.policy.traces import TraceSet

SPEC = REFERENCE


@pytest.mark.slow
def test_cloning_the_expert_reproduces_its_choices_on_the_jobs_it_saw(bundled: TraceSet) -> None:
    """Behaviour cloning works: after fitting, the network picks the expert's instance at
    nearly every choice point of its demonstrations, and a fresh network does not."""
    import torch
    from stable_baselines3 import PPO

    from spotwise.policy.rl.imitation import clone, demonstrations

    starts = training_starts(bundled, SPEC, 480)[::50]
    env = SpotJobEnv(bundled, SPEC, max_pools=9, starts=starts)
    features, actions = demonstrations(env, "risk_aware", episodes=8, seed=0)
    assert len(actions) > 100 and set(np.unique(actions[:, 0])) > {1}  # on-demand and spot

    def agreement(model: PPO) -> float:
        with torch.no_grad():
            chosen = model.policy.get_distribution(torch.as_tensor(features)).mode().numpy()
        return float(np.mean(chosen[:, 0] == actions[:, 0]))

    model = PPO("MlpPolicy", env, seed=0, device="cpu")
    before = agreement(model)
    clone(model, features, actions, epochs=40, seed=0, balance=False)
    assert agreement(model) > 0.95 > before
