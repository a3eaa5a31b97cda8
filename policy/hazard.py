"""Per-pool preemption risk from availability history: a recency-weighted empirical survival
model of spot availability runs.

A run is a stretch of consecutive available ticks; it ends in a preemption. Given that a pool
has been available for ``age`` ticks, the expected remaining run is the weighted mean of
``L - age`` over past runs longer than ``age`` (weights halve every ``half_life`` ticks since
the run ended, so the model follows regime shifts). The hazard per tick is its inverse. Only
ticks already observed enter the model, so it never looks ahead.
"""

from __future__ import annotations

import numpy as np


class AvailabilityHazard:
    """Run lengths of every pool seen so far, and the age of each pool's current run."""

    def __init__(self, past_available: np.ndarray, half_life_ticks: float) -> None:
        """Learn from ``past_available`` (bool [pools, ticks]) and continue with :meth:`observe`."""
        n_pools, n_past = past_available.shape
        self.half_life = float(half_life_ticks)
        self._lengths: list[list[int]] = [[] for _ in range(n_pools)]
        self._ends: list[list[int]] = [[] for _ in range(n_pools)]
        self._age = np.zeros(n_pools, dtype=int)
        self._now = -1
        for z in range(n_pools):
            edges = np.diff(np.r_[0, past_available[z].astype(np.int8), 0])
            starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
            for s, e in zip(starts, ends, strict=True):
                if e < n_past:
                    self._lengths[z].append(int(e - s))
                    self._ends[z].append(int(e) - n_past)
                else:
                    self._age[z] = int(e - s)
        self._arrays: list[tuple[np.ndarray, np.ndarray]] = [
            (np.array(lengths, dtype=float), np.array(ends, dtype=float))
            for lengths, ends in zip(self._lengths, self._ends, strict=True)
        ]

    @property
    def age(self) -> np.ndarray:
        """int [pools]: ticks each pool has been available without a break (0 = unavailable)."""
        return self._age

    def observe(self, tick: int, available: np.ndarray) -> None:
        """Add tick ``tick`` (ticks since the job started; each tick counted once)."""
        if tick == self._now:
            return
        self._now = tick
        for z in np.flatnonzero(~available & (self._age > 0)):
            self._lengths[z].append(int(self._age[z]))
            self._ends[z].append(tick)
            self._arrays[z] = (
                np.array(self._lengths[z], dtype=float),
                np.array(self._ends[z], dtype=float),
            )
        self._age = np.where(available, self._age + 1, 0)

    def expected_remaining(self, pool: int, age: int | None = None) -> float:
        """Expected further available ticks of ``pool`` given it has been up ``age`` ticks.

        With no past run longer than ``age`` the current age is the estimate (a run that has
        lasted a while is expected to last as long again).
        """
        age = int(self._age[pool]) if age is None else age
        lengths, ends = self._arrays[pool]
        longer = lengths > age
        if not longer.any():
            return float(max(age, 1))
        weights = 0.5 ** ((self._now - ends[longer]) / self.half_life)
        return float(np.sum(weights * (lengths[longer] - age)) / np.sum(weights))

    def mean_run(self, pool: int) -> float:
        """Recency-weighted mean run length of ``pool`` in ticks (the MTBF while on spot)."""
        return self.expected_remaining(pool, age=0)
