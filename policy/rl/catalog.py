"""The learned models of one folder: their names, configs and weight hashes, read when the
program starts, without torch.

A model is ``NAME.pt`` (the policy network's tensors) plus ``NAME.json`` (:class:`AgentConfig`,
with the sha256 of the ``.pt`` recorded at training time). :class:`ModelCatalog` lists a
folder's models and checks every hash at start-up; a network is built (and torch imported) the
first time a policy asks for it, after its hash is checked again. A request or flag names a
model, never a path to load.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policy.errors import PolicyError, UnknownPolicy

if TYPE_CHECKING:
    from policy.rl.agent import LearnedPolicy, LoadedModel

SHIPPED_MODELS = Path(__file__).parent / "models"
FEATURES_VERSION = 1
"""The version of :mod:`policy.rl.features` this Spotwise computes."""
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
    checkpoint_minutes: tuple[float, ...]
    half_life_hours: float
    net_arch: tuple[int, ...] = NET_ARCH
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


class ModelCatalog:
    """The learned models of one folder, found and hash-checked once, when the program starts.

    Policies are asked for by name only; nothing a request says reaches the file system.
    """

    def __init__(self, folder: Path) -> None:
        if not folder.is_dir():
            raise PolicyError(f"--models {folder}: not a folder of NAME.pt + NAME.json models")
        self.folder = folder
        self._configs = {
            path.stem: verified_config(path)
            for path in sorted(folder.glob("*.pt"))
            if MODEL_NAME.match(path.stem)
        }
        self._loaded: dict[str, LoadedModel] = {}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._configs)

    def policy(self, name: str) -> LearnedPolicy:
        """A fresh policy acting with the model ``name`` (its network built on first use).

        Raises:
            UnknownPolicy: naming the models this catalog has.
        """
        from policy.rl.agent import LearnedPolicy, load_model

        if name not in self._configs:
            raise UnknownPolicy(
                f"no model {name!r} in {self.folder}; it has {list(self._configs) or 'none'}"
            )
        if name not in self._loaded:
            self._loaded[name] = load_model(self.folder / f"{name}.pt")
        return LearnedPolicy(self._loaded[name])


_shipped: ModelCatalog | None = None


def shipped_models() -> ModelCatalog:
    """The models bundled with Spotwise (read once per process)."""
    global _shipped
    if _shipped is None:
        _shipped = ModelCatalog(SHIPPED_MODELS)
    return _shipped
