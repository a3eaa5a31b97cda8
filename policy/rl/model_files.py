"""A learned model's files: ``NAME.pt`` (the policy network's tensors) plus ``NAME.json``
(:class:`AgentConfig`, with the sha256 of the ``.pt`` recorded at training time), and how a
model is checked before anything reads its weights. No torch here."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from spotwise.policy.errors import PolicyError

FEATURES_VERSION = 4
"""The version of :mod:`spotwise.policy.rl.features` this Spotwise computes."""
NET_ARCH = (64, 64)
SET_ARCH = (32, 64)
"""A set encoder's widths: each pool's encoding, and the job's trunk."""
ENCODERS = ("mlp", "set")
"""``mlp``: one network over a fixed number of pool slots (``max_pools``); ``set``: the set
encoder (:mod:`~spotwise.policy.rl.set_network`, ``net_arch`` = its encoding and trunk widths),
trained on ``max_pools`` slots, playing any number of pools."""
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
    checkpoint_minutes: tuple[float, ...]
    half_life_hours: float
    net_arch: tuple[int, ...] = NET_ARCH
    encoder: str = "mlp"
    moves: bool = False
    """Whether the model chooses while a spot instance runs (stay, or move to another pool);
    else the instance runs until preempted."""
    features_version: int = FEATURES_VERSION
    trained: dict[str, Any] = field(default_factory=dict)

    def write(self, path: Path) -> None:
        """Write this config to ``path`` as indented JSON."""
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> AgentConfig:
        """The config in ``path``; PolicyError unless it is a sound ppo config of these features."""
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
        widths = len(config.net_arch)
        if config.encoder not in ENCODERS or (config.encoder == "set" and widths != 2):
            raise PolicyError(
                f"{path}: encoder must be one of {', '.join(ENCODERS)} (a set encoder's net_arch "
                "is its encoding and trunk widths)"
            )
        if not isinstance(config.moves, bool):
            raise PolicyError(f"{path}: moves must be true or false, got {config.moves!r}")
        return config


def verified_config(weights: Path) -> AgentConfig:
    """The config of ``weights`` (a ``.pt``), once the weights' hash matches it.

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
    return config
