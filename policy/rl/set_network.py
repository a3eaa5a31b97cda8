"""The set encoder: a policy network that plays any number of pools.

Each pool's features (with the job's global features beside them) go through one shared
network; the pools' encodings are pooled (masked mean and max, so order and count do not
matter) into the job's trunk, which gives the value, the wait/on-demand logits and the
checkpoint interval's logits; each pool's spot logit comes from its own encoding and the trunk
(one shared scoring head), so adding a pool adds a choice, never a weight. The same weights read
a feature vector of 1 pool or 40: the width of the vector says how many pools there are, and a
padded slot (its "is a pool" feature 0) can never be chosen. Built on stable-baselines3's
:class:`~stable_baselines3.common.policies.ActorCriticPolicy`, so PPO and the imitation warm
start train it unchanged.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from spotwise.policy.policies.base import SPOT0
from spotwise.policy.rl.features import GLOBAL_FEATURES, POOL_FEATURES

EXISTS = 1
"""The per-pool feature that is 1 for a pool and 0 for a padded slot."""
MASKED = -1.0e4
"""The logit of a padded slot (a probability of e^-10000: never drawn, no NaN in the entropy)."""


def pools_of(width: int) -> int:
    """How many pool slots a feature vector of ``width`` floats holds."""
    slots, rest = divmod(width - GLOBAL_FEATURES, POOL_FEATURES)
    if slots < 1 or rest:
        raise ValueError(f"a feature vector of {width} floats holds no whole number of pools")
    return slots


class SetEncoder(nn.Module):
    """Features → (actor latent, critic latent). The actor's latent is the trunk, the pool mask
    and each pool's scoring hidden layer side by side (a width that grows with the pools); the
    critic's is the trunk."""

    def __init__(self, encoding: int, trunk: int) -> None:
        super().__init__()
        self.encoding, self.trunk = encoding, trunk
        self.pool_net = nn.Sequential(
            nn.Linear(POOL_FEATURES + GLOBAL_FEATURES, encoding),
            nn.ReLU(),
            nn.Linear(encoding, encoding),
            nn.ReLU(),
        )
        self.trunk_net = nn.Sequential(
            nn.Linear(GLOBAL_FEATURES + 2 * encoding, trunk), nn.ReLU(), nn.Linear(trunk, trunk)
        )
        self.score_hidden = nn.Sequential(nn.Linear(encoding + trunk, encoding), nn.ReLU())
        self.latent_dim_vf = trunk
        self.latent_dim_pi = trunk  # plus (1 + encoding) per pool, known only from the input

    def _encode(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(trunk, mask, pool encodings) of a batch of feature vectors."""
        n = pools_of(features.shape[1])
        glob = features[:, :GLOBAL_FEATURES]
        pools = features[:, GLOBAL_FEATURES:].reshape(-1, n, POOL_FEATURES)
        mask = (pools[:, :, EXISTS] > 0.5).to(features.dtype)
        encoded = self.pool_net(torch.cat([pools, glob[:, None, :].expand(-1, n, -1)], dim=2))
        weight = mask[:, :, None]
        mean = (encoded * weight).sum(1) / weight.sum(1).clamp(min=1.0)
        top = (encoded * weight + (weight - 1.0) * 1e4).max(1).values.clamp(min=0.0)
        trunk = torch.relu(self.trunk_net(torch.cat([glob, mean, top], dim=1)))
        return trunk, mask, encoded

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        """[trunk | mask (one per pool) | each pool's scoring hidden layer]."""
        trunk, mask, encoded = self._encode(features)
        n = mask.shape[1]
        hidden = self.score_hidden(torch.cat([encoded, trunk[:, None, :].expand(-1, n, -1)], 2))
        return torch.cat([trunk, mask, hidden.flatten(1)], dim=1)

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        """The trunk."""
        return self._encode(features)[0]

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Both latents (SB3's interface)."""
        return self.forward_actor(features), self.forward_critic(features)


class SetHead(nn.Module):
    """Actor latent → the flat logits of (instance, checkpoint interval): wait and on-demand
    from the trunk, one shared score per pool, a padded slot masked out."""

    def __init__(self, encoding: int, trunk: int, intervals: int) -> None:
        super().__init__()
        self.encoding, self.trunk = encoding, trunk
        self.fixed = nn.Linear(trunk, SPOT0)
        self.score = nn.Linear(encoding, 1)
        self.interval = nn.Linear(trunk, intervals)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        trunk = latent[:, : self.trunk]
        n = (latent.shape[1] - self.trunk) // (1 + self.encoding)
        mask = latent[:, self.trunk : self.trunk + n]
        hidden = latent[:, self.trunk + n :].reshape(-1, n, self.encoding)
        scores = self.score(hidden).squeeze(2)
        scores = torch.where(mask > 0.5, scores, torch.full_like(scores, MASKED))
        return torch.cat([self.fixed(trunk), scores, self.interval(trunk)], dim=1)


class SetActorCritic(ActorCriticPolicy):
    """SB3's actor-critic with the set encoder and head (``encoding``, ``trunk``: widths)."""

    def __init__(self, *args: Any, encoding: int = 32, trunk: int = 64, **kwargs: Any) -> None:
        self.encoding, self.trunk = encoding, trunk
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = SetEncoder(self.encoding, self.trunk)  # type: ignore[assignment]

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        intervals = int(self.action_space.nvec[1])  # type: ignore[attr-defined]
        self.action_net = SetHead(self.encoding, self.trunk, intervals)
        if self.ortho_init:
            self.action_net.apply(partial(self.init_weights, gain=0.01))
        self.optimizer = self.optimizer_class(  # type: ignore[call-arg]
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {
            **super()._get_constructor_parameters(),
            "encoding": self.encoding,
            "trunk": self.trunk,
        }
