"""The learned policy: a network built from its :class:`~policy.rl.catalog.AgentConfig` and
its weights read with ``torch.load(weights_only=True)`` (nothing is unpickled), acting inside
the safety net. Models are found and named by :class:`~policy.rl.catalog.ModelCatalog`.
"""

from __future__ import annotations

import pickle
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from spotwise.policy.errors import PolicyError
from spotwise.policy.policies.base import SPOT0, Action, JobContext, Observation, Policy
from spotwise.policy.policies.rules import Guardrails
from spotwise.policy.rl.env import instance_action, launch, spaces
from spotwise.policy.rl.features import FeatureBuilder
from spotwise.policy.rl.model_files import MODEL_NAME, AgentConfig, sha256_of, verified_config


def build_network(config: AgentConfig) -> Any:
    """The untrained policy network a config describes (SB3's actor-critic MLP, or the set
    encoder)."""
    from stable_baselines3.common.policies import ActorCriticPolicy

    observations, actions = spaces(config.max_pools)
    if config.encoder == "set":
        from spotwise.policy.rl.set_network import SetActorCritic

        encoding, trunk = config.net_arch
        return SetActorCritic(
            observations, actions, lr_schedule=lambda _: 0.0, encoding=encoding, trunk=trunk
        )
    return ActorCriticPolicy(
        observations, actions, lr_schedule=lambda _: 0.0, net_arch=list(config.net_arch)
    )


def save_model(network: torch.nn.Module, config: AgentConfig, folder: Path, name: str) -> Path:
    """Write ``folder/name.pt`` (the network's tensors) and ``name.json`` (``config`` with the
    weights' sha256); returns the ``.pt`` path."""
    if not MODEL_NAME.match(name):
        raise PolicyError(f"model name {name!r}: use lower-case letters, digits, - and _")
    folder.mkdir(parents=True, exist_ok=True)
    weights = folder / f"{name}.pt"
    torch.save(network.state_dict(), weights)
    doc = {**asdict(config), "weights_sha256": sha256_of(weights)}
    AgentConfig(**doc).write(weights.with_suffix(".json"))
    return weights


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """A model's network (in inference mode) and its config."""

    network: Any
    config: AgentConfig


def load_model(weights: Path) -> LoadedModel:
    """The network from ``weights`` (a ``.pt``) and its ``.json``, after the hash check.

    Raises:
        PolicyError: see :func:`~policy.rl.catalog.verified_config`, or weights that are not
            plain tensors fitting the configured network.
    """
    config = verified_config(weights)
    # A tick's network is tiny: one intra-op thread runs it as fast, never spins against a busy
    # host, and never enters the pool a forked process inherits (a suite worker hung there).
    torch.set_num_threads(1)
    network = build_network(config)
    try:
        state = torch.load(weights, map_location="cpu", weights_only=True)
        network.load_state_dict(state)
    except (pickle.UnpicklingError, RuntimeError, ValueError, TypeError, KeyError, EOFError) as exc:
        raise PolicyError(
            f"{weights}: not plain weights that fit the network in its config ({exc})"
        ) from exc
    network.set_training_mode(False)
    return LoadedModel(network, config)


class LearnedPolicy(Policy):
    """Acts with a trained model, inside the safety net."""

    name = "ppo"

    def __init__(self, model: LoadedModel) -> None:
        self.network, self.config = model.network, model.config

    def _mode(self, vector: Any) -> Any:
        """The network's most likely action (per dimension) for one feature vector: the
        actor's logits, split by action dimension, argmax of each (as SB3's
        ``get_distribution(...).mode()``, without building distributions every tick)."""
        network = self.network
        with torch.no_grad():
            tensor = torch.as_tensor(vector[None, :])
            latent = network.mlp_extractor.forward_actor(network.extract_features(tensor))
            logits = network.action_net(latent)[0]
        intervals = len(self.config.checkpoint_minutes)
        return [int(logits[:-intervals].argmax()), int(logits[-intervals:].argmax())]

    def reset(self, context: JobContext) -> None:
        """Start a job: fit the features' risk forecast on the past. A set encoder plays every
        pool; a fixed-slot model given more pools than it was trained for plays the ones most
        often up in the job's past (the others are never asked)."""
        every = self.config.encoder == "set"
        self._pools = None if every else _kept_pools(context, self.config.max_pools)
        if self._pools is not None:
            context = _only(context, self._pools)
        slots = len(context.pools) if every else self.config.max_pools
        self._features = FeatureBuilder(context, slots)
        self.forecast = self._features.forecast
        self._rules = Guardrails(context, moves=self.config.moves)
        self._n_pools = len(context.pools)
        self._blind = context.observe != "all"
        self._ticks_per_minute = 60.0 / (context.job.hours_per_tick * 3600.0)
        self._checkpoint_ticks: int | None = None

    def act(self, obs: Observation) -> Action:
        """The rules' action where they fix one, else the model's deterministic choice (its
        last checkpoint interval holds while the rules decide)."""
        if self._pools is None:
            return self._act(obs)
        kept = self._pools
        view = replace(
            obs,
            # it asks only kept pools, so it runs only in them
            state=obs.state if obs.state < SPOT0 else SPOT0 + kept.index(obs.state - SPOT0),
            available=obs.available[kept],
            prices=obs.prices[kept],
            last_seen=None if obs.last_seen is None else obs.last_seen[kept],
            seen_age=None if obs.seen_age is None else obs.seen_age[kept],
        )
        action = self._act(view)
        if action.instance < SPOT0:
            return action
        return replace(
            action,
            instance=SPOT0 + kept[action.instance - SPOT0],
            also=tuple(kept[z] for z in action.also),
        )

    def _act(self, obs: Observation) -> Action:
        self._features.observe(obs)  # the risk forecast sees every tick
        fixed = self._rules.fixed(obs)
        if fixed is not None:
            return Action(fixed, checkpoint_ticks=self._checkpoint_ticks)
        action = self._mode(self._features.vector(obs))
        minutes = self.config.checkpoint_minutes[int(action[1])]
        self._checkpoint_ticks = max(1, round(minutes * self._ticks_per_minute))
        return launch(
            instance_action(int(action[0]), self._n_pools),
            obs,
            self._blind,
            self._checkpoint_ticks,
            self._features.ranking,
        )


def _kept_pools(context: JobContext, most: int) -> list[int] | None:
    """The ``most`` pools most often up in the job's past (None: the job has no more)."""
    if len(context.pools) <= most:
        return None
    share = context.past_available.mean(axis=1) if context.past_available.shape[1] else None
    order = (
        list(range(len(context.pools)))
        if share is None
        else list(np.argsort(-share, kind="stable"))
    )
    return sorted(int(z) for z in order[:most])


def _only(context: JobContext, kept: list[int]) -> JobContext:
    """The job's context over the ``kept`` pools alone."""
    return replace(
        context,
        pools=tuple(context.pools[z] for z in kept),
        spot_price=context.spot_price[kept],
        speed=context.speed[kept],
        past_available=context.past_available[kept],
        future_available=None,
        future_prices=None,
        regions=None,
        past_fit=None,
    )
