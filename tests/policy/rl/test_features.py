"""The learned policy's features: training sees what inference sees."""

from __future__ import annotations

import numpy as np

from spotwise.policy.job import REFERENCE
from spotwise.policy.policies.base import Action
from spotwise.policy.rl.env import SpotJobEnv
from spotwise.policy.traces import TraceSet

SPEC = REFERENCE


def test_the_env_features_match_inference_which_sees_every_tick(bundled: TraceSet) -> None:
    """Training and inference must see the same features: the env's risk forecast observes the
    ticks the guardrails play (a spot run) as the deployed policy does."""
    from spotwise.policy.rl.features import FeatureBuilder
    from spotwise.policy.simulate import JobRun, context_for

    start = 3000
    env = SpotJobEnv(bundled, SPEC, max_pools=9, starts=[start], single_share=0.0)
    env.reset(seed=0)
    spot_in_1a = np.array([2, 1])  # runs until preempted: many ticks without a choice
    seen, _, _, _, _ = env.step(spot_in_1a)
    played = env._run.tick
    assert played > 5
    # the deployed policy's view: the same job, its features fed every tick
    run = JobRun(bundled, SPEC, start, env.checkpoint)
    features = FeatureBuilder(context_for(bundled, SPEC, start, env.checkpoint), 9)
    for tick in range(played + 1):
        obs = run.observe()
        expected = features.vector(obs)
        if tick < played:
            run.step(Action(2 if tick == 0 else obs.state, checkpoint_ticks=env._interval))
    np.testing.assert_allclose(seen, expected, rtol=1e-6)
