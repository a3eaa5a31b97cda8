"""The learned policy: network weights (``NAME.pt``) plus a JSON config (``NAME.json``).

Nothing is unpickled when a model loads: the ``.pt`` file holds only the policy network's
tensors and is read with ``torch.load(weights_only=True)``, after its sha256 is checked against
the one the config recorded at training time; the network is built from the config. Models are
found in one folder chosen when the program starts (:class:`ModelCatalog`), and are named by
the file stem: a request or flag can name a model, never a path to load.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from policy.errors import PolicyError, UnknownPolicy
from policy.policies.base import JobContext, Observation, Policy
from policy.rl.env import CHECKPOINT_MINUTES, Guardrails, instance_action, spaces
from policy.rl.features import HALF_LIFE_HOURS, FeatureBuilder

SHIPPED_MODELS = Path(__file__).parent / "models"
FEATURES_VERSION = 1
NET_ARCH = (64, 64)
MODEL_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
"""What a model's file stem may be (and so what a request may call it)."""


def sha256_of(path: Path) -> str:
    """The file's sha256 as hex."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentConfig:
    """What the model expects, its weights' hash and how it was trained (``NAME.json``)."""

    algo: str
    max_pools: int
    weights_sha256: str
    net_arch: tuple[int, ...] = NET_ARCH
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
            doc["checkpoint_minutes"] = tuple(float(m) for m in doc["checkpoint_minutes"])
            doc["net_arch"] = tuple(int(n) for n in doc.get("net_arch", NET_ARCH))
            config = cls(**doc)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise PolicyError(f"{path}: not a Spotwise model config ({exc})") from exc
        if config.features_version != FEATURES_VERSION:
            raise PolicyError(
                f"{path}: model built for features v{config.features_version}, this Spotwise "
                f"computes v{FEATURES_VERSION}; retrain with `spotwise policy train`"
            )
        if config.algo != "ppo":
            raise PolicyError(f"{path}: unknown algo {config.algo!r}; Spotwise trains ppo")
        if not 1 <= config.max_pools <= 64 or not config.net_arch:
            raise PolicyError(f"{path}: max_pools must be 1..64 and net_arch not empty")
        return config


def build_network(config: AgentConfig) -> Any:
    """The untrained policy network a config describes (SB3's actor-critic MLP)."""
    from stable_baselines3.common.policies import ActorCriticPolicy

    observations, actions = spaces(config.max_pools)
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
        PolicyError: a missing file, a config that is not ours, or weights whose hash differs
            from the one recorded at training time.
    """
    config_path = weights.with_suffix(".json")
    if not weights.is_file() or not config_path.is_file():
        raise PolicyError(
            f"{weights}: a model needs NAME.pt and NAME.json side by side; train one with "
            "`spotwise policy train --algo ppo --out DIR`"
        )
    config = AgentConfig.read(config_path)
    if sha256_of(weights) != config.weights_sha256:
        raise PolicyError(
            f"{weights}: sha256 differs from the one recorded at training time in "
            f"{config_path.name}; the weights were changed or damaged: retrain or restore them"
        )
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


class ModelCatalog:
    """The learned models of one folder, found and hash-checked once, when the program starts.

    Policies are asked for by name only; nothing a request says reaches the file system.
    """

    def __init__(self, folder: Path) -> None:
        if not folder.is_dir():
            raise PolicyError(f"--models {folder}: not a folder of NAME.pt + NAME.json models")
        self.folder = folder
        self._models = {
            path.stem: load_model(path)
            for path in sorted(folder.glob("*.pt"))
            if MODEL_NAME.match(path.stem)
        }

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._models)

    def policy(self, name: str) -> LearnedPolicy:
        """A fresh policy acting with the model ``name``.

        Raises:
            UnknownPolicy: naming the models this catalog has.
        """
        if name not in self._models:
            raise UnknownPolicy(
                f"no model {name!r} in {self.folder}; it has {list(self._models) or 'none'}"
            )
        return LearnedPolicy(self._models[name])


_shipped: ModelCatalog | None = None


def shipped_models() -> ModelCatalog:
    """The models bundled with Spotwise (read once per process)."""
    global _shipped
    if _shipped is None:
        _shipped = ModelCatalog(SHIPPED_MODELS)
    return _shipped


class LearnedPolicy(Policy):
    """Acts with a trained model, inside the safety net."""

    name = "ppo"

    def __init__(self, model: LoadedModel) -> None:
        self.network, self.config = model.network, model.config

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
            action = self.network.get_distribution(tensor).mode()[0].numpy()
        minutes = self.config.checkpoint_minutes[int(action[1])]
        self.checkpoint_ticks = max(1, round(minutes * self._ticks_per_minute))
        return instance_action(int(action[0]), self._n_pools)
