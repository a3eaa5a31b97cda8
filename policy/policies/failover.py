"""Choosing a spot pool: the one with the best availability so far.

Seeing every pool (``all``), that is the available pool with the most available ticks. Seeing
only what launch requests teach (``current``, ``probe``), it is a fleet request naming every
pool not just seen down, best availability first, as an engineer would ask EC2 for capacity.
"""

from __future__ import annotations

import numpy as np

from spotwise.policy.policies.base import NONE, Action, JobContext, Observation, request, spot


class FailoverChooser:
    """Counts each pool's available ticks (past and present, as last seen) and picks a pool."""

    def __init__(self, context: JobContext) -> None:
        self._blind = context.observe != "all"
        self._available_ticks = context.past_available.sum(axis=1).astype(float)
        self._last_tick = -1

    def observe(self, obs: Observation) -> None:
        """Count this tick once (call on every tick)."""
        if obs.tick != self._last_tick:
            self._available_ticks += obs.belief()
            self._last_tick = obs.tick

    def best_available(self, obs: Observation) -> int:
        """spot(z) for the available pool with the highest availability so far, else NONE."""
        if not obs.available.any():
            return NONE
        score = np.where(obs.available, self._available_ticks, -1.0)
        return spot(int(np.argmax(score)))

    def choose(self, obs: Observation) -> Action:
        """The best available pool, or, blind, a request for every pool worth asking."""
        if not self._blind:
            return Action(self.best_available(obs))
        askable = obs.askable()
        return request(sorted(askable, key=lambda z: -self._available_ticks[z]))
