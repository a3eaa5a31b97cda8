"""Choosing a spot pool to fail over to: the available one with the best availability so far."""

from __future__ import annotations

import numpy as np

from spotwise.policy.policies.base import NONE, JobContext, Observation, spot


class FailoverChooser:
    """Counts each pool's available ticks (past and present) and picks the best available pool."""

    def __init__(self, context: JobContext) -> None:
        self._available_ticks = context.past_available.sum(axis=1).astype(float)
        self._seen = float(context.past_available.shape[1])
        self._last_tick = -1

    def observe(self, obs: Observation) -> None:
        """Count this tick once (call on every tick)."""
        if obs.tick != self._last_tick:
            self._available_ticks += obs.available
            self._seen += 1
            self._last_tick = obs.tick

    def best_available(self, obs: Observation) -> int:
        """spot(z) for the available pool with the highest availability so far, else NONE."""
        if not obs.available.any():
            return NONE
        score = np.where(obs.available, self._available_ticks, -1.0)
        return spot(int(np.argmax(score)))
