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


def test_each_choice_is_told_apart_as_wait_on_demand_stay_or_spot_elsewhere() -> None:
    from spotwise.policy.policies.base import SPOT0
    from spotwise.policy.rl.features import GLOBAL_FEATURES, POOL_FEATURES, RUNS_HERE
    from spotwise.policy.rl.imitation import choice_kinds

    features = np.zeros((5, GLOBAL_FEATURES + 3 * POOL_FEATURES), dtype=np.float32)
    features[2:4, GLOBAL_FEATURES + 1 * POOL_FEATURES + RUNS_HERE] = 1.0  # runs in pool 1
    instances = np.array([0, 1, SPOT0 + 1, SPOT0 + 2, SPOT0 + 1])
    assert choice_kinds(features, instances).tolist() == [0, 1, 2, 3, 3]


@pytest.mark.slow
def test_the_set_network_clones_the_cores_choices_where_it_may_move(bundled: TraceSet) -> None:
    """With ``moves``, every tick a spot instance runs is a choice: the set network learns the
    core's stays, moves and waits alike."""
    import torch
    from stable_baselines3 import PPO

    from spotwise.policy.rl.imitation import choice_kinds, clone, demonstrations
    from spotwise.policy.rl.set_network import SetActorCritic

    starts = training_starts(bundled, SPEC, 480)[::50]
    env = SpotJobEnv(bundled, SPEC, max_pools=9, starts=starts, moves=True)
    features, actions = demonstrations(env, "core", episodes=8, seed=0)
    kinds = choice_kinds(features, actions[:, 0])
    assert {1, 2, 3} <= set(kinds.tolist())  # on-demand, stays and landings in spot

    model = PPO(SetActorCritic, env, seed=0, device="cpu")
    with torch.no_grad():
        before = model.policy.get_distribution(torch.as_tensor(features)).mode().numpy()
    clone(model, features, actions, epochs=40, seed=0)
    with torch.no_grad():
        after = model.policy.get_distribution(torch.as_tensor(features)).mode().numpy()
    for kind in (1, 2, 3):
        mine = kinds == kind
        assert np.mean(after[mine, 0] == actions[mine, 0]) > 0.8, kind
    assert np.mean(after[:, 0] == actions[:, 0]) > 0.9 > np.mean(before[:, 0] == actions[:, 0])
