"""Training the learned policy: reproducible runs, and the suite's training jobs."""

from __future__ import annotations

from pathlib import Path

import pytest

from spotwise.policy import load
from spotwise.policy.job import REFERENCE
from spotwise.policy.rl.catalog import ModelCatalog
from spotwise.policy.rl.env import SpotJobEnv
from spotwise.policy.rl.train import trace_scenarios, train_ppo
from spotwise.policy.simulate import simulate
from spotwise.policy.traces import TraceSet

SPEC = REFERENCE


@pytest.mark.slow
def test_seeded_training_is_reproducible_and_loadable_from_its_folder(
    bundled: TraceSet, tmp_path: Path
) -> None:
    weights = [
        train_ppo(
            trace_scenarios(bundled, SPEC, 480),
            out=tmp_path / f"run{i}",
            timesteps=2048,
            seed=7,
            imitation_episodes=3,
            imitation_epochs=2,
            trained={"until_hours": 480},
        )
        for i in range(2)
    ]
    assert weights[0].name == "ppo.pt" and weights[0].read_bytes() != b""
    config = weights[0].with_suffix(".json").read_text()
    assert '"until_hours": 480' in config and '"algo": "ppo"' in config
    assert '"expert": "risk_aware"' in config
    results = [simulate(load("ppo", ModelCatalog(w.parent)), bundled, SPEC, 3000) for w in weights]
    assert results[0] == results[1]
    assert list((tmp_path / "run0" / "tensorboard").rglob("events.out.tfevents*"))


def test_suite_training_jobs_cover_every_class_and_end_before_the_held_back_cut(
    bundled: TraceSet,
) -> None:
    from spotwise.policy.lab.suite import CUT, SHAPES, classes
    from spotwise.policy.rl.train import suite_scenarios

    sets = {"aws-02-15-2023": bundled}
    scenarios = suite_scenarios(sets, start_every_hours=24.0, stormy_copies=1)
    together = [c for c in classes(sets, quick=False) if c.pools == "every"]
    alone = [c for c in classes(sets, quick=False) if c.pools == "each"]
    assert len(scenarios) == 2 * (len(together) + len(alone) * len(bundled.names))
    cut = int(bundled.n_ticks * CUT)
    for scenario in scenarios:
        deadline = scenario.spec.ticks(bundled.gap_seconds).deadline
        assert max(scenario.starts) + deadline <= cut
    assert {s.visibility.observe for s in scenarios} == {"all", "probe"}
    assert {s.visibility.history_hours for s in scenarios} == {0.0, 168.0}
    assert {s.spec.changeover_hours for s in scenarios} == {0.05, 0.2}
    assert {len(s.traces.pools) for s in scenarios} == {1, len(bundled.names)}
    env = SpotJobEnv(bundled, SPEC, max_pools=9, starts=[0], single_share=0.0, scenarios=scenarios)
    shapes = set()
    for seed in range(200):
        env.reset(seed=seed)
        shapes.add((env.job_spec.compute_hours, env.job_spec.deadline_hours))
    assert shapes == set(SHAPES)  # every shape is drawn
