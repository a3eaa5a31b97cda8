"""Spot capacity as node counts: how many nodes of a pool could be had at each tick.

The bundled N-node CBL traces (``availability/16-node``) hold, per tick, how many of 16
p3.2xlarge could be obtained (0..16). One file is one pool; every file of a folder shares one
tick grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spotwise.policy.errors import TraceError
from spotwise.pricing.errors import InputError
from spotwise.pricing.sources.traces import read_cbl_json


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityTraces:
    """Obtainable spot nodes of several pools on one tick grid."""

    names: tuple[str, ...]
    gap_seconds: int
    capacity: np.ndarray
    """int [pools, ticks]: spot nodes that could be had."""
    cluster_size: int
    """The most nodes the traces ever counted (16 for the CBL 16-node traces)."""

    @property
    def n_ticks(self) -> int:
        return int(self.capacity.shape[1])


def load_capacity_traces(folder: Path) -> CapacityTraces:
    """Read every ``*.json`` N-node CBL trace in ``folder`` (sorted by name).

    Raises:
        TraceError: no traces, unreadable ones, different tick gaps, or negative counts.
    """
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        raise TraceError(
            f"{folder}: no *.json traces here; give a folder of N-node CBL traces "
            "(e.g. data/traces/cbl/availability/16-node/aws-08-27-2023)"
        )
    counts, gaps = [], set()
    for path in files:
        try:
            trace = read_cbl_json(path)
        except InputError as exc:
            raise TraceError(str(exc)) from exc
        if (trace.data < 0).any() or not np.allclose(trace.data, np.round(trace.data)):
            raise TraceError(f"{path}: node counts must be whole numbers >= 0")
        counts.append(trace.data.astype(int))
        gaps.add(trace.gap_seconds)
    if len(gaps) != 1:
        raise TraceError(f"{folder}: traces have different tick gaps {sorted(gaps)}; use one gap")
    n = min(len(c) for c in counts)
    capacity = np.stack([c[:n] for c in counts])
    return CapacityTraces(
        names=tuple(p.stem for p in files),
        gap_seconds=int(gaps.pop()),
        capacity=capacity,
        cluster_size=int(capacity.max()),
    )
