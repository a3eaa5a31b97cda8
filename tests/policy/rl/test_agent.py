"""The learned policy acting in the simulator: the shipped set encoder on more pools than it
ever trained on, and a fixed-slot model's fallback to the pools it has slots for."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from spotwise.policy import load
from spotwise.policy.job import REFERENCE
from spotwise.policy.policies.base import Policy
from spotwise.policy.rl.catalog import ModelCatalog
from spotwise.policy.rl.train import trace_scenarios, train_ppo
from spotwise.policy.simulate import JobRun, Visibility, context_for
from spotwise.policy.traces import Pool, TraceSet

PROBE = Visibility(observe="probe")


def _market(n: int) -> TraceSet:
    """``n`` pools, the k-th up more often than the one before."""
    rng = np.random.default_rng(0)
    available = rng.random((n, 2000)) < np.linspace(0.3, 0.9, n)[:, None]
    return TraceSet(
        pools=tuple(Pool(name=f"p{i}") for i in range(n)), gap_seconds=600, available=available
    )


def _asked(chosen: Policy, market: TraceSet) -> set[int]:
    """Every pool the policy named while it played a job to its end (which it must reach)."""
    run = JobRun(market, REFERENCE, 800, visibility=PROBE)
    chosen.reset(context_for(market, REFERENCE, 800, visibility=PROBE))
    asked: set[int] = set()
    while not run.over:
        action = chosen.act(run.observe())
        asked |= set(action.named_pools())
        run.step(action)
    assert run.result().done
    return asked


def test_the_shipped_model_plays_every_pool_of_a_market_larger_than_any_it_trained_on() -> None:
    chosen = load("ppo")
    assert chosen.config.encoder == "set" and chosen.config.max_pools < 40  # type: ignore[attr-defined]
    asked = _asked(chosen, _market(40))
    assert max(asked) >= chosen.config.max_pools  # type: ignore[attr-defined]


def test_a_fixed_slot_model_plays_a_larger_market_on_its_most_available_pools(
    bundled: TraceSet, tmp_path: Path
) -> None:
    weights = train_ppo(
        trace_scenarios(bundled, REFERENCE, 480),
        out=tmp_path,
        timesteps=0,
        seed=3,
        imitation_episodes=2,
        imitation_epochs=1,
        encoder="mlp",
    )
    chosen = load("ppo", ModelCatalog(weights.parent))
    assert chosen.config.max_pools == 9  # type: ignore[attr-defined]
    asked = _asked(chosen, _market(13))
    assert asked and asked <= set(range(4, 13))  # the 9 most available: the last nine
