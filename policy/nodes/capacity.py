"""Spot capacity as node counts: how many nodes of a pool could be had at each tick.

The bundled N-node CBL traces (``availability/16-node``) hold, per tick, how many of 16
p3.2xlarge could be obtained (0..16). One file is one pool; every file of a folder shares one
tick grid. A count log (``time_ms,available_node_count``, as Parcae's p3 trace of a 32-node
cluster) is one pool too, put on a one-minute grid: a count holds until the next row, and of
several rows at one instant the last is the state after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from spotwise.policy.errors import TraceError
from spotwise.policy.traces import Pool, TraceSet
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
        """Ticks in the traces."""
        return int(self.capacity.shape[1])

    def availability(self) -> TraceSet:
        """The same pools as 1-node traces: up wherever at least one node can be had."""
        return TraceSet(
            pools=tuple(Pool(name=name) for name in self.names),
            gap_seconds=self.gap_seconds,
            available=self.capacity > 0,
        )


COUNT_LOG_GAP_SECONDS = 60


def load_capacity_traces(folder: Path) -> CapacityTraces:
    """Read every ``*.json`` N-node CBL trace in ``folder`` (sorted by name), or one count log
    (a ``.csv`` file).

    Raises:
        TraceError: no traces, unreadable ones, different tick gaps, or negative counts.
    """
    if folder.suffix == ".csv" and folder.is_file():
        return _count_log(folder)
    return _cbl_folder(folder)


def _cbl_folder(folder: Path) -> CapacityTraces:
    """Every ``*.json`` N-node CBL trace in ``folder``, cut to the shortest, as one pool each."""
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        raise TraceError(
            f"{folder}: no *.json traces here; give a folder of N-node CBL traces "
            "(e.g. data/traces/cbl/availability/16-node/aws-08-27-2023)"
        )
    traces = [_node_counts(path) for path in files]
    counts = [count for count, _ in traces]
    gaps = {gap for _, gap in traces}
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


def _node_counts(path: Path) -> tuple[np.ndarray, int]:
    """One N-node CBL trace's node counts per tick, and its tick gap (s)."""
    try:
        trace = read_cbl_json(path)
    except InputError as exc:
        raise TraceError(str(exc)) from exc
    if (trace.data < 0).any() or not np.allclose(trace.data, np.round(trace.data)):
        raise TraceError(f"{path}: node counts must be whole numbers >= 0")
    return trace.data.astype(int), trace.gap_seconds


def _count_log(path: Path) -> CapacityTraces:
    """One pool from a ``time_ms,count`` log, on a one-minute grid."""
    try:
        frame = pd.read_csv(path, header=None, names=["time_ms", "nodes"])
        times = pd.to_numeric(frame["time_ms"], errors="raise").to_numpy(dtype=float)
        counts = pd.to_numeric(frame["nodes"], errors="raise").to_numpy(dtype=float)
    except (ValueError, pd.errors.ParserError) as exc:
        raise TraceError(
            f"{path}: not a count log of 'time_ms,available_node_count' rows ({exc})"
        ) from exc
    bad = np.flatnonzero((counts < 0) | (counts != np.round(counts)) | np.isnan(times))
    if len(frame) == 0 or len(bad):
        where = f"line {bad[0] + 1}" if len(bad) else "no rows"
        raise TraceError(f"{path}: {where}: node counts must be whole numbers >= 0")
    if (np.diff(times) < 0).any():
        raise TraceError(f"{path}: times must not go back; sort the log by time")
    gap_ms = COUNT_LOG_GAP_SECONDS * 1000
    ticks = np.arange(times[0], times[-1] + 1, gap_ms)
    last_row = np.searchsorted(times, ticks, side="right") - 1
    capacity = counts[last_row].astype(int)[None, :]
    return CapacityTraces(
        names=(path.stem,),
        gap_seconds=COUNT_LOG_GAP_SECONDS,
        capacity=capacity,
        cluster_size=int(capacity.max()),
    )
