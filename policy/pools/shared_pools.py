"""Spot pools that several jobs share: each pool holds a number of nodes at each tick.

A launch lands only where a node is free; when a pool's capacity shrinks, the cloud takes
back its newest instances first. The N-node CBL traces count the obtainable nodes per tick;
a fleet's jobs running on them compete for those nodes (one node per job).
"""

from __future__ import annotations

import numpy as np


class SharedPools:
    """Who holds a node of which pool, against each pool's capacity (int [pools, ticks])."""

    def __init__(self, capacity: np.ndarray) -> None:
        if capacity.ndim != 2 or (capacity < 0).any():
            raise ValueError("capacity must be whole node counts >= 0, [pools, ticks]")
        self.capacity = capacity.astype(int)
        self._holders: list[list[object]] = [[] for _ in range(capacity.shape[0])]
        self._taken: set[int] = set()
        self._settled = -1

    def settle(self, now: int) -> None:
        """Take back the newest instances of every pool over its capacity at tick ``now``
        (once per tick; later calls of the same tick do nothing)."""
        if now == self._settled:
            return
        self._settled = now
        for pool, holders in enumerate(self._holders):
            while len(holders) > self.capacity[pool, now]:
                self._taken.add(id(holders.pop()))

    def took_back(self, holder: object) -> bool:
        """Whether ``holder``'s instance was taken back (answered once)."""
        if id(holder) in self._taken:
            self._taken.discard(id(holder))
            return True
        return False

    def free(self, now: int) -> np.ndarray:
        """int [pools]: nodes a new launch could have at tick ``now``."""
        held = np.fromiter((len(h) for h in self._holders), dtype=int, count=len(self._holders))
        return self.capacity[:, now] - held

    def open_to(self, holder: object, now: int) -> np.ndarray:
        """bool [pools]: where ``holder`` has a node or could launch one at tick ``now``."""
        open_ = self.free(now) > 0
        for pool, holders in enumerate(self._holders):
            if holder in holders:
                open_[pool] = True
        return open_

    def holders(self, pool: int) -> list[object]:
        """Who holds a node of ``pool``, oldest first."""
        return list(self._holders[pool])

    def hold(self, pool: int, holder: object) -> None:
        """Record that ``holder`` now holds a node of ``pool`` (the newest)."""
        self._holders[pool].append(holder)

    def release(self, pool: int, holder: object) -> None:
        """Let ``holder``'s node of ``pool`` go (nothing if it holds none there)."""
        if holder in self._holders[pool]:
            self._holders[pool].remove(holder)
