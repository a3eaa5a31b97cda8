"""Pools (zone × instance type) with their availability per tick, read from CBL trace files.

A trace folder holds one 1-node CBL JSON trace per pool (file stem = pool name, 0 = spot
available). Where a trace carries a ``prices`` array, spot ticks are billed at that price.
An optional pools file gives per-pool ``spot_price`` and ``speed``, and where the pool runs:
its ``cloud``, its ``region`` and that region's ``on_demand_price`` (else the job's), so that
moves between regions pay the checkpoint's egress (:mod:`spotwise.policy.pools.regions`). A market
class of the suite (:mod:`spotwise.policy.lab.markets`) gives the same from the bundled prices.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spotwise.policy.errors import TraceError
from spotwise.pricing.errors import InputError
from spotwise.pricing.sources.traces import read_cbl_json


@dataclass(frozen=True, slots=True, kw_only=True)
class Pool:
    """One pool's terms; None = the job's spot price, speed 1 = the reference instance."""

    name: str
    spot_price: float | None = None
    speed: float = 1.0
    cloud: str = ""
    region: str = ""
    """Where its instances run and write their checkpoints ("": the one region of every pool
    that names none)."""
    on_demand_price: float | None = None
    """$/h of the same instance on demand in its region (None: the job's on-demand price)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceSet:
    """Availability (and optional spot prices) of several pools on one tick grid."""

    pools: tuple[Pool, ...]
    gap_seconds: int
    available: np.ndarray
    """bool [pools, ticks]: True where the pool's spot capacity can be had."""
    prices: np.ndarray | None = None
    """float [pools, ticks] spot USD/h per tick where the traces carry prices, NaN elsewhere."""

    @property
    def names(self) -> tuple[str, ...]:
        """The pools' names, in trace order."""
        return tuple(p.name for p in self.pools)

    @property
    def n_ticks(self) -> int:
        """How many ticks the traces hold."""
        return int(self.available.shape[1])

    def subset(self, names: list[str] | tuple[str, ...]) -> TraceSet:
        """The same traces restricted to some pools, in the given order.

        Raises:
            TraceError: naming the unknown pools and the known ones.
        """
        unknown = [n for n in names if n not in self.names]
        if unknown:
            raise TraceError(f"unknown pool(s) {unknown}; the traces hold {list(self.names)}")
        index = [self.names.index(n) for n in names]
        return TraceSet(
            pools=tuple(self.pools[i] for i in index),
            gap_seconds=self.gap_seconds,
            available=self.available[index],
            prices=None if self.prices is None else self.prices[index],
        )

    def spot_prices(self, default: float) -> np.ndarray:
        """float [pools, ticks]: each tick's spot price (trace price, else pool, else default)."""
        base = np.array([p.spot_price if p.spot_price is not None else default for p in self.pools])
        out = np.repeat(base[:, None], self.n_ticks, axis=1)
        if self.prices is not None:
            known = ~np.isnan(self.prices)
            out[known] = self.prices[known]
        return out


def load_traces(folder: Path, pools_file: Path | None = None) -> TraceSet:
    """Read every ``*.json`` trace in ``folder`` (sorted by name) onto one tick grid.

    Raises:
        TraceError: no traces, different tick gaps, N-node traces, or a bad pools file.
    """
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        raise TraceError(f"{folder}: no *.json traces here; give a folder of 1-node CBL traces")
    traces = {}
    for path in files:
        try:
            traces[path.stem] = read_cbl_json(path)
        except InputError as exc:
            raise TraceError(str(exc)) from exc
    gaps = {t.gap_seconds for t in traces.values()}
    if len(gaps) != 1:
        raise TraceError(f"{folder}: traces have different tick gaps {sorted(gaps)}; use one gap")
    for name, trace in traces.items():
        if trace.data.max() > 1:
            raise TraceError(f"{folder / name}.json: not a 1-node trace (values above 1)")
    n = min(len(t.data) for t in traces.values())
    available = np.stack([t.data[:n] == 0 for t in traces.values()])
    prices = None
    if any(t.prices is not None for t in traces.values()):
        prices = np.stack(
            [t.prices[:n] if t.prices is not None else np.full(n, np.nan) for t in traces.values()]
        )
    terms = _read_pools(pools_file, list(traces)) if pools_file else {}
    pools = tuple(terms.get(name, Pool(name=name)) for name in traces)
    return TraceSet(pools=pools, gap_seconds=gaps.pop(), available=available, prices=prices)


NUMBERS = ("spot_price", "speed", "on_demand_price")
NAMES = ("cloud", "region")
_PLACE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


def _read_pools(path: Path, names: list[str]) -> dict[str, Pool]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise TraceError(f"{path}: cannot read the pools file ({exc})") from exc
    if not isinstance(doc, dict):
        raise TraceError(f'{path}: expected {{"pool name": {{"spot_price": ..., "speed": ...}}}}')
    pools = {}
    for name, terms in doc.items():
        if name not in names:
            raise TraceError(f"{path}: pool {name!r} has no trace; pools are {names}")
        if not isinstance(terms, dict) or set(terms) - {*NUMBERS, *NAMES}:
            raise TraceError(
                f"{path}: pool {name!r}: give only {', '.join((*NUMBERS, *NAMES))} (a region's "
                "on-demand price is its pools'; the job's --on-demand-price where none is given)"
            )
        for key, value in terms.items():
            if key in NUMBERS and (
                isinstance(value, bool) or not isinstance(value, int | float) or not value > 0
            ):
                raise TraceError(f"{path}: pool {name!r}: {key} must be a positive number")
            if key in NAMES and not (isinstance(value, str) and _PLACE.match(value)):
                raise TraceError(
                    f"{path}: pool {name!r}: {key} must be a name of lower-case letters, digits "
                    "and -, like us-east-1"
                )
        pools[name] = Pool(name=name, **terms)
    return pools
