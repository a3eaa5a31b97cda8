"""Synthetic markets for training and tuning only: a generator fitted on the training part of
every trace set (before its held-back cut), with regime knobs.

Per pool it keeps the lengths of the up and down spells the training part holds, by the
hour of day they began (where the set has a calendar clock; a set in relative time has one
bin), and a pool's next spell is drawn from those that began at the same time of day. Pools
are tied by a correlation: when one goes down, each other pool of the set that is up goes
down with it with probability ``correlation`` (fitted: the share of the set's drops that
another pool shared within a tick), and gets the up time it lost back on its next up spell,
so each pool keeps its fitted share of up time. Storms are the set's worst stretches (the lowest
availability over every pool, :data:`STORM_HOURS` long), resampled whole into the synthetic
trace at ``storms_per_day``.

Regime knobs (:class:`Regime`): ``mean_spell`` scales the up spells, ``storms_per_day`` and
``correlation`` as above. A synthetic trace's name and every pool in it say ``synthetic``:
nothing it produces is ever a claim (those are made on real held-back windows only).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from spotwise.policy.traces import Pool, TraceSet

if TYPE_CHECKING:
    from spotwise.policy.lab.trace_sets import SuiteSet

SYNTHETIC = "synthetic"
STORM_HOURS = 6.0
STORM_TEMPLATES = 3
TIME_BINS = 4
"""Bins of the day a spell's start falls in (6 h each)."""
MIN_PER_BIN = 3
"""Spells a bin needs before it is drawn from alone (else every spell of the pool is)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Regime:
    """How a synthetic market differs from the fitted one (1, the fitted rate, 1× = as fitted;
    ``correlation`` None = the fitted one)."""

    name: str = "fitted"
    mean_spell: float = 1.0
    """Factor on every up spell's length (< 1: flickers, > 1: calm)."""
    storms_per_day: float = 0.0
    """Resampled worst stretches added per day."""
    correlation: float | None = None
    """P(an up pool goes down when another of its set does)."""


REGIMES = (
    Regime(),
    Regime(name="calm", mean_spell=2.0),
    Regime(name="flickering", mean_spell=0.3),
    Regime(name="stormy", storms_per_day=0.5),
    Regime(name="correlated", correlation=0.8),
    Regime(name="stormy-flickering", mean_spell=0.5, storms_per_day=0.5, correlation=0.5),
)
"""The regimes training and tuning draw from."""


@dataclass(frozen=True, slots=True)
class _Spells:
    """One pool's spell lengths (ticks) of one kind, by the time-of-day bin they began in."""

    by_bin: tuple[np.ndarray, ...]
    every: np.ndarray

    def draw(self, rng: np.random.Generator, time_bin: int) -> int:
        """One spell length: of those begun in ``time_bin``, or of all where that bin has few."""
        pool = self.by_bin[time_bin] if len(self.by_bin[time_bin]) >= MIN_PER_BIN else self.every
        return int(pool[rng.integers(len(pool))])


@dataclass(frozen=True, slots=True, kw_only=True)
class MarketModel:
    """What the generator learned from one set's training part."""

    name: str
    pools: tuple[str, ...]
    gap_seconds: int
    calendar: bool
    """Whether tick 0 is midnight UTC (time of day means something)."""
    up: tuple[_Spells | None, ...]
    """None: the pool was never up (or never down, see ``always_up``)."""
    down: tuple[_Spells | None, ...]
    always_up: tuple[bool, ...]
    up_share: tuple[float, ...]
    correlation: float
    storms: tuple[np.ndarray, ...] = field(default_factory=tuple)
    """bool [pools, ticks] blocks: the worst stretches."""


def _spells(row: np.ndarray) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(start, length) of the up and down spells of ``row``. The first and last are cut by
    the window and kept as they are: left out, a calm pool's long spells would be lost."""
    edges = np.flatnonzero(np.diff(row.astype(np.int8))) + 1
    bounds = np.concatenate([[0], edges, [len(row)]])
    spells: tuple[list[tuple[int, int]], list[tuple[int, int]]] = ([], [])
    for start, end in itertools.pairwise(bounds):
        spells[0 if row[start] else 1].append((int(start), int(end - start)))
    return spells


def _by_bin(spells: list[tuple[int, int]], hours: float, calendar: bool) -> _Spells | None:
    if not spells:
        return None
    bins = [[] for _ in range(TIME_BINS)]  # type: list[list[int]]
    for start, length in spells:
        b = int((start * hours % 24) // (24 / TIME_BINS)) if calendar else 0
        bins[b].append(length)
    return _Spells(
        tuple(np.array(b, dtype=int) for b in bins),
        np.array([length for _, length in spells], dtype=int),
    )


def _shared_drops(available: np.ndarray) -> float:
    """Share of the drops (up → down) that another pool of the set made within a tick."""
    if available.shape[0] < 2:
        return 0.0
    drops = np.diff(available.astype(np.int8), axis=1) == -1
    near = drops.copy()
    near[:, 1:] |= drops[:, :-1]
    near[:, :-1] |= drops[:, 1:]
    total = shared = 0
    for z in range(available.shape[0]):
        others = np.delete(near, z, axis=0).any(axis=0)
        total += int(drops[z].sum())
        shared += int((drops[z] & others).sum())
    return shared / total if total else 0.0


def _worst_stretches(available: np.ndarray, ticks: int) -> tuple[np.ndarray, ...]:
    """The :data:`STORM_TEMPLATES` non-overlapping ``ticks``-long stretches with the lowest
    availability over every pool."""
    if available.shape[1] < 2 * ticks:
        return ()
    share = available.mean(axis=0)
    window = np.convolve(share, np.ones(ticks) / ticks, mode="valid")
    order = np.argsort(window, kind="stable")
    chosen: list[int] = []
    for start in order:
        if all(abs(int(start) - c) >= ticks for c in chosen):
            chosen.append(int(start))
        if len(chosen) == STORM_TEMPLATES:
            break
    return tuple(available[:, c : c + ticks].copy() for c in chosen)


def fit_market(name: str, traces: TraceSet, end_tick: int, *, calendar: bool) -> MarketModel:
    """Learn one set's spells, correlation and storms from its ticks before ``end_tick`` (the
    held-back cut: nothing after it is read)."""
    past = traces.available[:, :end_tick]
    hours = traces.gap_seconds / 3600
    ups, downs = [], []
    for row in past:
        up, down = _spells(row)
        ups.append(_by_bin(up, hours, calendar))
        downs.append(_by_bin(down, hours, calendar))
    storm_ticks = max(2, round(STORM_HOURS / hours))
    return MarketModel(
        name=name,
        pools=traces.names,
        gap_seconds=traces.gap_seconds,
        calendar=calendar,
        up=tuple(ups),
        down=tuple(downs),
        always_up=tuple(bool(row.all()) for row in past),
        up_share=tuple(float(row.mean()) for row in past),
        correlation=_shared_drops(past),
        storms=_worst_stretches(past, storm_ticks),
    )


def generate(model: MarketModel, regime: Regime, hours: float, seed: int) -> TraceSet:
    """A synthetic market of ``hours`` like ``model``'s, in ``regime``; seeded (same seed, same
    market). Its pools are named ``synthetic:<set>:<regime>:<pool>``."""
    n_ticks = max(1, math.ceil(hours / (model.gap_seconds / 3600)))
    walk = _SpellWalk(model, regime, n_ticks, np.random.default_rng(seed))
    available = walk.run()
    _add_storms(model, regime, hours, walk.rng, available)
    label = f"{SYNTHETIC}:{model.name}:{regime.name}"
    return TraceSet(
        pools=tuple(Pool(name=f"{label}:{p}") for p in model.pools),
        gap_seconds=model.gap_seconds,
        available=available,
    )


class _SpellWalk:
    """Each pool's up and down spells drawn one after another, a pool's drop taking each
    other pool down with it with the correlation's chance."""

    def __init__(
        self, model: MarketModel, regime: Regime, n_ticks: int, rng: np.random.Generator
    ) -> None:
        self.model, self.regime, self.n_ticks, self.rng = model, regime, n_ticks, rng
        n_pools = len(model.pools)
        self.per_tick = model.gap_seconds / 3600
        self.rho = model.correlation if regime.correlation is None else regime.correlation
        self.up = np.array([rng.random() < s for s in model.up_share])
        self.left = np.zeros(n_pools, dtype=int)
        self.credit = np.zeros(n_pools, dtype=int)
        self.fixed = [model.always_up[z] or model.up[z] is None for z in range(n_pools)]

    def _time_bin(self, tick: int) -> int:
        """The time-of-day bin of ``tick`` (0 without a calendar)."""
        if not self.model.calendar:
            return 0
        return int((tick * self.per_tick % 24) // (24 / TIME_BINS))

    def _draw(self, z: int, is_up: bool, tick: int) -> int:
        """The length of a spell of pool ``z`` that starts at ``tick``."""
        spells = self.model.up[z] if is_up else self.model.down[z]
        if spells is None:
            return self.n_ticks + 1
        length = spells.draw(self.rng, self._time_bin(tick))
        if is_up:
            length = max(1, round(length * self.regime.mean_spell))
        return length

    def _start(self) -> None:
        """Each pool's first spell, entered at a random point of it."""
        for z in range(len(self.model.pools)):
            if self.fixed[z]:
                self.up[z] = self.model.always_up[z]  # never seen to change: it stays as it was
                self.left[z] = self.n_ticks + 1
            else:
                first = self._draw(z, bool(self.up[z]), 0)
                self.left[z] = max(1, int(self.rng.integers(1, first + 1)))

    def _dragged_down(self, ends: list[int]) -> None:
        """Pools still up that go down with the ones whose up spell ends now."""
        if not (self.rho > 0 and any(self.up[z] for z in ends)):
            return
        for y in np.flatnonzero(self.up & (self.left > 0)):
            z = int(y)
            if self.rng.random() < self.rho and not self.fixed[z]:
                # it goes down with the others now, and gets the up time it lost back on
                # its next up spell: the pool's share of up time stays the fitted one
                self.credit[z] += self.left[z]
                self.left[z] = 0
                ends.append(int(z))

    def _turn(self, ends: list[int], tick: int) -> None:
        """Pools whose spell ended flip, each with a fresh spell from ``tick``."""
        for z in ends:
            self.up[z] = not self.up[z]
            self.left[z] = self._draw(z, bool(self.up[z]), tick)
            if self.up[z]:
                self.left[z] += self.credit[z]
                self.credit[z] = 0

    def run(self) -> np.ndarray:
        """Availability, bool [pool, tick]."""
        self._start()
        available = np.zeros((len(self.model.pools), self.n_ticks), dtype=bool)
        for t in range(self.n_ticks):
            available[:, t] = self.up
            self.left -= 1
            ends = [int(z) for z in np.flatnonzero(self.left <= 0)]
            self._dragged_down(ends)
            self._turn(ends, t + 1)
        return available


def _add_storms(
    model: MarketModel,
    regime: Regime,
    hours: float,
    rng: np.random.Generator,
    available: np.ndarray,
) -> None:
    """Paste the regime's number of resampled worst stretches at random ticks."""
    if not model.storms or regime.storms_per_day <= 0:
        return
    n_ticks = available.shape[1]
    days = hours / 24
    for _ in range(int(rng.poisson(regime.storms_per_day * days))):
        block = model.storms[int(rng.integers(len(model.storms)))]
        at = int(rng.integers(n_ticks))
        width = min(block.shape[1], n_ticks - at)
        available[:, at : at + width] = block[:, :width]


def is_synthetic(traces: TraceSet) -> bool:
    """Whether ``traces`` came from :func:`generate`."""
    return all(p.name.startswith(f"{SYNTHETIC}:") for p in traces.pools)


def synthetic_markets(
    sets: Sequence[SuiteSet],
    regimes: Sequence[Regime] = REGIMES,
    hours: float = 24 * 30,
    seed: int = 0,
) -> list[TraceSet]:
    """One synthetic market per set and regime, each fitted on the set's training part (before
    the suite's held-back cut) and ``hours`` long."""
    from spotwise.policy.lab.suite import CUT
    from spotwise.policy.lab.trace_sets import RELATIVE

    markets = []
    for i, s in enumerate(sets):
        traces = s.traces
        model = fit_market(s.name, traces, int(traces.n_ticks * CUT), calendar=s.clock != RELATIVE)
        for j, regime in enumerate(regimes):
            markets.append(generate(model, regime, hours, seed=seed + 1000 * i + j))
    return markets
