"""The policy: cost model, simulator, markets, plan and the policies, on the pools' clouds,
regions and shared nodes (:mod:`.pools`); the decision service that serves them
(:mod:`.service`) and the lab that benches them (:mod:`.lab`) sit beside it.

``policy.load(name)`` is the one entry point for every policy: the object it returns has
``reset(context)`` (the job: compute, deadline and changeover in ticks, prices, the pools and
their past availability) and ``act(observation) -> action`` (wait, on-demand or spot in a pool,
with the policy's ``bid`` and ``checkpoint_ticks``). ``policy.names()`` lists them. The bench,
the API and the executor all use it.
"""

from __future__ import annotations

from spotwise.policy.registry import load, names

__all__ = ["load", "names"]
