"""The policy lab: cost model, simulator, policies and the policy API.

``policy.load(name)`` is the one entry point for every policy: the object it returns has
``reset(context)`` (the job: compute, deadline and changeover in ticks, prices, the pools and
their past availability) and ``act(observation) -> action`` (wait, on-demand or spot in a pool,
with the policy's ``bid`` and ``checkpoint_ticks``). The bench, the API and the executor all use
it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policy.policies.base import Policy
    from policy.rl.catalog import ModelCatalog


def load(name: str, models: ModelCatalog | None = None) -> Policy:
    """A fresh policy by name (``best``, ``risk_aware``, ``ppo``, ... or a model in
    ``models``, a folder read when the program started)."""
    from policy.policies.base import make

    return make(name, models)
