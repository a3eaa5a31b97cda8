"""The trace sets of the scenario suite: every bundled availability and capacity trace, each
read as pools a 1-node job can run in, with its clock and how it was read.

- CBL 1-node availability (``traces/cbl/availability/1-node/<set>``): as they are.
- Capacity counts that say how many nodes *could be had* (the CBL 16-node set, SpotHedge's
  ``GCP1``: VMs held of 4 requested): a pool is up where at least one node can be had.
- Cluster logs that count the nodes *a cluster held* (Parcae's 32-node p3 log, which Bamboo's
  ``p3-trace.csv`` holds as events too, so it is read once; Bamboo's g4dn event log): the cluster
  never lets go of every node, so "one node" would never be down. They are read for a gang job of
  half the cluster (16 of 32 p3.2xlarge): up while the cluster holds at least that many.

A set whose files give no calendar date (SpotHedge's, the cluster logs) has relative time:
hours from its start, said so in :attr:`SuiteSet.clock`, never a 1970 stand-in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spotwise.policy.nodes.capacity import load_capacity_traces
from spotwise.policy.traces import Pool, TraceSet, load_traces
from spotwise.pricing.sources.traces import read_bamboo_events

RELATIVE = "relative: hours from the trace's start (the files give no calendar date)"
COUNT_LOG_GAP_SECONDS = 60
"""The grid cluster logs are put on (a count holds until the next row)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SetDescription:
    """What the suite's JSON says of a trace set."""

    name: str
    source: str
    pools: tuple[str, ...]
    gap_seconds: int
    hours: float
    reading: str
    clock: str

    def to_dict(self) -> dict[str, object]:
        """The set as the suite's JSON lists it under ``trace_sets``."""
        return {
            "name": self.name,
            "source": self.source,
            "pools": list(self.pools),
            "gap_seconds": self.gap_seconds,
            "hours": self.hours,
            "reading": self.reading,
            "clock": self.clock,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SuiteSet:
    """One trace set of the suite: its pools, where it came from and how it was read."""

    name: str
    traces: TraceSet
    source: str
    """The folder or file under the data folder."""
    reading: str
    """How the files became pools that are up or down."""
    clock: str
    """The calendar start (UTC) or :data:`RELATIVE`."""

    def describe(self) -> SetDescription:
        """What the suite's JSON says of the set."""
        return SetDescription(
            name=self.name,
            source=self.source,
            pools=tuple(self.traces.names),
            gap_seconds=self.traces.gap_seconds,
            hours=round(self.traces.n_ticks * self.traces.gap_seconds / 3600, 1),
            reading=self.reading,
            clock=self.clock,
        )


def _capacity_set(name: str, folder: Path, data: Path, need: int, clock: str) -> SuiteSet:
    capacity = load_capacity_traces(folder)
    return _counted(
        name,
        capacity.names,
        capacity.gap_seconds,
        capacity.capacity,
        need,
        clock,
        str(folder.relative_to(data)),
        capacity.cluster_size,
    )


def _counted(
    name: str,
    pools: tuple[str, ...],
    gap_seconds: int,
    counts: np.ndarray,
    need: int,
    clock: str,
    source: str,
    size: int,
) -> SuiteSet:
    reading = (
        f"node counts (of {size}): up where at least {need} node{'s' if need > 1 else ''} "
        "can be had"
    )
    traces = TraceSet(
        pools=tuple(Pool(name=p) for p in pools),
        gap_seconds=gap_seconds,
        available=counts >= need,
    )
    return SuiteSet(name=name, traces=traces, source=source, reading=reading, clock=clock)


def _event_counts(path: Path) -> np.ndarray:
    """int [ticks]: nodes a cluster held per minute, from Bamboo's add/remove log."""
    events = read_bamboo_events(path).frames["events"]
    minutes = ((events["ts"] - events["ts"].iloc[0]).dt.total_seconds() / 60).to_numpy()
    step = np.where(events["event"].to_numpy() == "launched", 1, -1)
    held = np.cumsum(step)
    ticks = np.arange(0, math.floor(minutes[-1]) + 1)
    last = np.searchsorted(minutes, ticks, side="right") - 1
    return np.where(last >= 0, held[np.maximum(last, 0)], 0)


def suite_sets(data: Path) -> list[SuiteSet]:
    """Every bundled trace set the suite runs on, from the data folder ``data``."""
    sets = []
    one_node = data / "traces/cbl/availability/1-node"
    for folder in sorted(p for p in one_node.iterdir() if p.is_dir()):
        sets.append(
            SuiteSet(
                name=folder.name,
                traces=load_traces(folder),
                source=str(folder.relative_to(data)),
                reading="1-node availability (0 = spot available)",
                clock=f"{_date(folder.name)} UTC",
            )
        )
    for folder in sorted((data / "traces/cbl/availability/16-node").iterdir()):
        if folder.is_dir():
            sets.append(
                _capacity_set(
                    f"16-node-{folder.name}", folder, data, 1, f"{_date(folder.name)} UTC"
                )
            )
    gcp1 = data / "traces/spothedge/GCP1"
    if gcp1.is_dir():
        sets.append(_capacity_set("spothedge-GCP1", gcp1, data, 1, RELATIVE))
    parcae = data / "traces/parcae/p3-available-nodes.csv"
    if parcae.is_file():
        log = load_capacity_traces(parcae)
        sets.append(
            _counted(
                "parcae-p3",
                ("p3.2xlarge",),
                log.gap_seconds,
                log.capacity,
                math.ceil(log.cluster_size / 2),
                RELATIVE,
                str(parcae.relative_to(data)),
                log.cluster_size,
            )
        )
    g4dn = data / "traces/bamboo/g4dn-trace.csv"
    if g4dn.is_file():
        counts = _event_counts(g4dn)[None, :]
        size = int(counts.max())
        sets.append(
            _counted(
                "bamboo-g4dn",
                ("g4dn",),
                COUNT_LOG_GAP_SECONDS,
                counts,
                math.ceil(size / 2),
                RELATIVE,
                str(g4dn.relative_to(data)),
                size,
            )
        )
    return sets


def _date(folder: str) -> str:
    """``aws-02-15-2023`` → ``2023-02-15``."""
    _, month, day, year = folder.split("-")
    return f"{year}-{month}-{day}"
