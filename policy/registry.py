"""The policy registry: every policy by name, as lazy ``"module:Class"`` entry points (as
gymnasium registers environments), plus ``best`` and the learned models of a catalog.

A name from a request or a flag is only ever looked up here; it never selects a module or a
file. Entry points are the project's own strings, imported the first time a policy is built.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spotwise.policy.errors import UnknownPolicy

if TYPE_CHECKING:
    from spotwise.policy.policies.base import Policy
    from spotwise.policy.rl.catalog import ModelCatalog


@dataclass(frozen=True, slots=True)
class PolicySpec:
    """A registered policy: its name, where its class lives, and whether it reads the future
    (only the omniscient bound: the simulator then shows it the whole job)."""

    name: str
    entry_point: str
    reads_future: bool = False

    def load(self) -> Policy:
        """A fresh instance of the policy its entry point names."""
        module, _, attribute = self.entry_point.partition(":")
        cls = getattr(importlib.import_module(module), attribute)
        return cls()


SPECS: dict[str, PolicySpec] = {}

BEST = "core"
"""The policy the project recommends: the bench and the API accept ``best`` for it."""


def register(name: str, entry_point: str, *, reads_future: bool = False) -> None:
    """Make the policy class at ``entry_point`` (``"package.module:Class"``) buildable as
    ``name``."""
    if name in SPECS or name == "best":
        raise ValueError(f"policy {name!r} is registered already")
    SPECS[name] = PolicySpec(name, entry_point, reads_future)


register("on_demand", "spotwise.policy.policies.on_demand:OnDemand")
register("greedy", "spotwise.policy.policies.greedy:Greedy")
register("uniform_progress", "spotwise.policy.policies.uniform_progress:UniformProgress")
register("risk_aware", "spotwise.policy.policies.risk_aware:RiskAware")
register("core", "spotwise.policy.core.policy:CorePolicy")
register("core_flat", "spotwise.policy.core.policy:FlatCorePolicy")
register("omniscient", "spotwise.policy.policies.omniscient:Omniscient", reads_future=True)


def _catalog(models: ModelCatalog | None) -> ModelCatalog:
    from spotwise.policy.rl.catalog import shipped_models

    return models or shipped_models()


def names(models: ModelCatalog | None = None, *, causal: bool = False) -> list[str]:
    """Every name :func:`load` accepts: the registered policies, ``best`` and the models of
    ``models`` (default: the shipped ones); with ``causal``, none that reads the future."""
    registered = {n for n, spec in SPECS.items() if not (causal and spec.reads_future)}
    return sorted({*registered, "best", *_catalog(models).names})


def reads_future(name: str) -> bool:
    """Whether the policy called ``name`` reads the future (unknown names do not)."""
    spec = SPECS.get(BEST if name == "best" else name)
    return spec is not None and spec.reads_future


def load(name: str, models: ModelCatalog | None = None) -> Policy:
    """A fresh policy by registered name, ``best``, or the name of a learned model in
    ``models`` (default: the shipped models, e.g. ``ppo``).

    Raises:
        UnknownPolicy: naming the policies there are.
    """
    if name == "best":
        name = BEST
    if name in SPECS:
        return SPECS[name].load()
    catalog = _catalog(models)
    if name in catalog.names:
        return catalog.policy(name)
    raise UnknownPolicy(f"unknown policy {name[:80]!r}; choose from {', '.join(names(catalog))}")
