"""The learned models of one folder: their names, configs and weight hashes, read when the
program starts, without torch.

:class:`ModelCatalog` lists a folder's models (:mod:`spotwise.policy.rl.model_files`) and
checks every hash at start-up; a network is built (and torch imported) the first time a policy
asks for it, after its hash is checked again. A request or flag names a model, never a path to load.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from spotwise.policy.errors import PolicyError, UnknownPolicy
from spotwise.policy.rl.model_files import MODEL_NAME, verified_config

if TYPE_CHECKING:
    from spotwise.policy.rl.agent import LearnedPolicy, LoadedModel

SHIPPED_MODELS = Path(__file__).parent / "models"


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
        """The names of the models this catalog holds."""
        return tuple(self._configs)

    def policy(self, name: str) -> LearnedPolicy:
        """A fresh policy acting with the model ``name`` (its network built on first use).

        Raises:
            UnknownPolicy: naming the models this catalog has.
        """
        from spotwise.policy.rl.agent import LearnedPolicy, load_model

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
