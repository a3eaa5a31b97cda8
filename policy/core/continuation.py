"""What the rest of a job is expected to cost, from the work and the slack it has left: the
value every option of a tick is priced against once its own segment ends.

The market is a portfolio of pools, cheapest per tick of work first (a run of ``L`` ticks works
``L − D`` of them and bills ``L``; a launch pays its request, and a checkpoint moved from another
region its egress). Pursuing the cheapest ``k`` pools, the job works ``α_k`` ticks per tick of
wall time (the share of time one of them is up, less a changeover per run) at ``c_k`` per tick of
work; the work spot cannot supply in the time left is done on demand at ``c_o``. Over ``T`` ticks
left, spot supplies ``U ~ N(α·T, σ²)`` ticks of work (``σ²`` an alternating process's variance of
up time), and the work done on demand is ``x = (W − U)⁺ / (1 − α)``: each tick moved from spot to
on demand gains ``1 − α`` ticks of time. So

    V_k(W, S) = W·c_k + (c_o − c_k)·min(W, E[(W − U)⁺] / (1 − α_k)),   V = min(W·c_o, min_k V_k)

with ``S = T − W`` the slack. A tick of slack is worth ``(c_o − c_k)·α·Φ(z)/(1 − α)``: nothing when
spot surely covers the work, the full saving of spot over on demand per tick it buys when it
surely does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

_SQRT_2PI = float(np.sqrt(2 * np.pi))


@dataclass(frozen=True, slots=True)
class Continuation:
    """The market's portfolios: per prefix of pools (cheapest first) its cost per tick of work,
    its work per tick of wall time and the variance of its supply per tick; on demand's cost."""

    cost: np.ndarray
    """float [prefixes]: $ per tick of work on spot."""
    rate: np.ndarray
    """float [prefixes]: ticks of work per tick of wall time."""
    variance: np.ndarray
    """float [prefixes]: variance of the work supplied per tick of wall time."""
    on_demand: float
    """$ per tick of work on demand (the cheapest region)."""

    @classmethod
    def of(
        cls,
        cost: np.ndarray,
        share: np.ndarray,
        run: np.ndarray,
        changeover: float,
        on_demand: float,
        *,
        any_share: float,
        spread: float,
    ) -> Continuation:
        """The portfolios of pools with ``cost`` $/tick of work, up ``share`` of the time, runs of
        ``run`` ticks; ``any_share`` the share of time some pool is up (it places the pools
        between moving together and apart), ``spread`` a factor on the supply's deviation."""
        usable = np.flatnonzero(np.isfinite(cost) & (cost < on_demand))
        if not len(usable):
            return cls(np.zeros(0), np.zeros(0), np.zeros(0), on_demand)
        apart = _apartness(share, any_share)
        order = usable[np.argsort(cost[usable], kind="stable")]
        a, c, L = share[order], cost[order], run[order]
        together = np.maximum.accumulate(a)
        independent = 1.0 - np.cumprod(1.0 - a)
        any_up = together + apart * (independent - together)
        used = np.diff(any_up, prepend=0.0)  # what each pool adds: up while the cheaper are down
        weight = np.maximum(any_up, 1e-9)
        mean_cost = np.cumsum(used * c) / weight
        mean_run = np.cumsum(used * L) / weight
        work_share = np.clip(1.0 - changeover / mean_run, 0.0, 1.0)
        rate = np.clip(any_up * work_share, 1e-6, 1.0 - 1e-6)
        outage = mean_run * (1.0 - any_up) / np.maximum(any_up, 1e-6)
        up_var = 2.0 * mean_run**2 * outage**2 / (mean_run + outage) ** 3
        variance = (spread * work_share) ** 2 * up_var
        return cls(mean_cost, rate, variance, on_demand)

    def value(self, work: np.ndarray, slack: np.ndarray) -> np.ndarray:
        """Expected $ to finish ``work`` ticks of work with ``slack`` ticks of slack (arrays of
        one shape; a negative slack is a job that cannot finish on time: all on demand)."""
        work = np.maximum(work, 0.0)
        all_od = work * self.on_demand
        if not len(self.cost):
            return all_od
        w, s = work[..., None], slack[..., None]
        time = np.maximum(w + s, 0.0)
        sd = np.sqrt(np.maximum(time * self.variance, 1e-12))
        z = (w - self.rate * time) / sd
        short = sd * (z * ndtr(z) + np.exp(-0.5 * z * z) / _SQRT_2PI)
        forced = np.minimum(w, short / (1.0 - self.rate))
        value = w * self.cost + (self.on_demand - self.cost) * forced
        return np.minimum(all_od, value.min(axis=-1))


def _apartness(share: np.ndarray, any_share: float) -> float:
    """Where pools of ``share`` lie between moving together (0: some pool is up as often as the
    best one) and apart (1: independent), from the share of time some pool is up."""
    best = float(share.max())
    independent = 1.0 - float(np.prod(1.0 - share))
    if independent - best <= 1e-9:
        return 0.0
    return float(np.clip((any_share - best) / (independent - best), 0.0, 1.0))
