"""The set encoder: one network for any number of pools, blind to their order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from spotwise.policy.policies.base import SPOT0
from spotwise.policy.rl.agent import build_network
from spotwise.policy.rl.env import CHECKPOINT_MINUTES
from spotwise.policy.rl.features import GLOBAL_FEATURES, POOL_FEATURES
from spotwise.policy.rl.model_files import SET_ARCH, AgentConfig
from spotwise.policy.rl.set_network import MASKED, pools_of


def _network(slots: int = 9) -> Any:
    config = AgentConfig(
        algo="ppo",
        max_pools=slots,
        weights_sha256="",
        checkpoint_minutes=CHECKPOINT_MINUTES,
        half_life_hours=24.0,
        net_arch=SET_ARCH,
        encoder="set",
        moves=True,
    )
    torch.manual_seed(3)
    network = build_network(config)
    for parameter in network.parameters():  # away from SB3's near-zero output init
        torch.nn.init.normal_(parameter, std=0.5)
    return network


def _features(pools: np.ndarray, seed: int = 0) -> torch.Tensor:
    glob = np.random.default_rng(seed).normal(size=GLOBAL_FEATURES)
    return torch.as_tensor(np.concatenate([glob, pools.ravel()])[None, :], dtype=torch.float32)


def _pools(n: int, seed: int = 1) -> np.ndarray:
    pools = np.random.default_rng(seed).normal(size=(n, POOL_FEATURES))
    pools[:, 1] = 1.0  # every slot is a pool
    return pools


def _logits(network: Any, features: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        latent = network.mlp_extractor.forward_actor(network.extract_features(features))
        return network.action_net(latent)[0]


def test_a_pools_logit_follows_the_pool_and_the_rest_ignore_the_order() -> None:
    network = _network()
    pools = _pools(5)
    order = np.array([3, 0, 4, 1, 2])
    first, shuffled = _logits(network, _features(pools)), _logits(network, _features(pools[order]))
    intervals = len(CHECKPOINT_MINUTES)
    torch.testing.assert_close(shuffled[:SPOT0], first[:SPOT0])
    torch.testing.assert_close(shuffled[-intervals:], first[-intervals:])
    torch.testing.assert_close(shuffled[SPOT0:-intervals], first[SPOT0:-intervals][order])
    with torch.no_grad():
        values = [network.predict_values(_features(p)) for p in (pools, pools[order])]
    torch.testing.assert_close(values[0], values[1])


@pytest.mark.parametrize("n", [1, 9, 32, 40])
def test_the_same_weights_read_any_number_of_pools(n: int) -> None:
    network = _network(slots=9)
    logits = _logits(network, _features(_pools(n)))
    assert logits.shape == (SPOT0 + n + len(CHECKPOINT_MINUTES),)
    assert torch.isfinite(logits).all()


def test_a_padded_slot_is_never_chosen_and_changes_nothing() -> None:
    network = _network()
    pools = _pools(3)
    padded = np.vstack([pools, np.zeros((6, POOL_FEATURES))])
    exact, with_padding = _logits(network, _features(pools)), _logits(network, _features(padded))
    intervals = len(CHECKPOINT_MINUTES)
    torch.testing.assert_close(with_padding[: SPOT0 + 3], exact[: SPOT0 + 3])
    torch.testing.assert_close(with_padding[-intervals:], exact[-intervals:])
    assert (with_padding[SPOT0 + 3 : -intervals] == MASKED).all()


def test_a_vector_that_holds_no_whole_pool_is_refused() -> None:
    assert pools_of(GLOBAL_FEATURES + 3 * POOL_FEATURES) == 3
    with pytest.raises(ValueError, match="no whole number of pools"):
        pools_of(GLOBAL_FEATURES + POOL_FEATURES + 1)
