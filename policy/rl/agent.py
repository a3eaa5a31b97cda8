"""The learned policy: a stable-baselines3 model (.zip) plus a JSON config, loaded by name.

Nothing custom is pickled: the .zip holds the network weights and SB3's own settings, the JSON
the feature layout and how the model was trained. The safety net wraps the model's choices.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

from policy.errors import PolicyError
from policy.policies.base import JobContext, Observation, Policy
from policy.rl.env import CHECKPOINT_MINUTES, Guardrails, instance_action
from policy.rl.features import HALF_LIFE_HOURS, FeatureBuilder

SHIPPED_MODELS = Path(__file__).parent / "models"
FEATURES_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentConfig:
    """What the model expects and how it was trained (the .json next to the .zip)."""

    algo: str
    max_pools: int
    checkpoint_minutes: tuple[float, ...] = CHECKPOINT_MINUTES
    half_life_hours: float = HALF_LIFE_HOURS
    features_version: int = FEATURES_VERSION
    trained: dict[str, Any] = field(default_factory=dict)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> AgentConfig:
        try:
            doc = json.loads(path.read_text())
            doc["checkpoint_minutes"] = tuple(doc["checkpoint_minutes"])
            config = cls(**doc)
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise PolicyError(f"{path}: not a Spotwise model config ({exc})") from exc
        if config.features_version != FEATURES_VERSION:
            raise PolicyError(
                f"{path}: model built for features v{config.features_version}, this Spotwise "
                f"computes v{FEATURES_VERSION}; retrain with `spotwise policy train`"
            )
        return config


@lru_cache(maxsize=8)
def load_model(zip_path: Path) -> tuple[Any, AgentConfig]:
    """The SB3 model and its config (cached: models are read-only at inference)."""
    config_path = zip_path.with_suffix(".json")
    if not zip_path.is_file() or not config_path.is_file():
        raise PolicyError(
            f"{zip_path}: a model needs the .zip and its .json; train one with "
            "`spotwise policy train --algo ppo --out DIR`"
        )
    config = AgentConfig.read(config_path)
    from stable_baselines3 import PPO

    if config.algo != "ppo":
        raise PolicyError(f"{config_path}: unknown algo {config.algo!r}; Spotwise trains ppo")
    return PPO.load(zip_path, device="cpu"), config


class LearnedPolicy(Policy):
    """Acts with a trained model, inside the safety net."""

    name = "ppo"

    def __init__(self, zip_path: Path | None = None) -> None:
        self.model, self.config = load_model(zip_path or SHIPPED_MODELS / "ppo.zip")

    def reset(self, context: JobContext) -> None:
        """Start a job: fit the features' risk forecast on the past."""
        self._features = FeatureBuilder(context, self.config.max_pools)
        self._rules = Guardrails(context)
        self._n_pools = len(context.pools)
        self._ticks_per_minute = 60.0 / (context.job.hours_per_tick * 3600.0)
        self.checkpoint_ticks = None

    def act(self, obs: Observation) -> int:
        """The rules' action where they fix one, else the model's deterministic choice."""
        vector = self._features.vector(obs)  # updates the risk forecast on every tick
        fixed = self._rules.fixed(obs)
        if fixed is not None:
            return fixed
        with torch.no_grad():
            tensor = torch.as_tensor(vector[None, :])
            action = self.model.policy.get_distribution(tensor).mode()[0].numpy()
        minutes = self.config.checkpoint_minutes[int(action[1])]
        self.checkpoint_ticks = max(1, round(minutes * self._ticks_per_minute))
        return instance_action(int(action[0]), self._n_pools)
