"""Spot availability and preemption traces: CBL JSON, Bamboo event and count logs, Parcae.

Trace files hold relative time only. CBL traces take their start from the folder name
(``aws-02-15-2023`` = 2023-02-15, UTC midnight); Bamboo count files from their file name;
files with no date at all (Bamboo's ``p3-trace.csv``, Parcae) start at the Unix epoch, so
their timestamps are offsets, not dates. CBL traces of a source known to give no date at all
(:data:`RELATIVE_TIME`, e.g. SpotHedge's ``GCP1``) are read and checked but not stored: the
store keeps calendar time, and the policy suite reads them in hours from their start. Where a
count file has several rows at one instant (a step drawn as two points), the last row is the
state after that instant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from spotwise.pricing.errors import InputError
from spotwise.pricing.frames import ROW, region_of_zone, validate
from spotwise.pricing.sources import FileFormat, Parsed
from spotwise.pricing.sources.tabular import read_csv, read_json

EPOCH = pd.Timestamp("1970-01-01", tz="UTC")
CBL_INSTANCE_TYPES = {
    "v100_1": "p3.2xlarge",
    "v100_8": "p3.16xlarge",
    "k80_1": "p2.xlarge",
    "k80_8": "p2.16xlarge",
    "intel_64": "r5.16xlarge",
    "c3-88": "c3-highcpu-88",
}
"""CBL's file-name codes for instance types (see data/README.md)."""


def cbl_pool(name: str) -> tuple[str, str]:
    """Zone and instance type of a CBL trace name (``us-east-1a_v100_1`` → ``us-east-1a``,
    ``p3.2xlarge``; an unknown code is kept as it is)."""
    zone, _, code = name.partition("_")
    return zone, CBL_INSTANCE_TYPES.get(code, code)


RELATIVE_TIME = {
    "spothedge": "SpotHedge (EuroSys'25) traces give no calendar date, only hours from their start"
}
"""Folders of CBL traces with no date: the reason, by folder name."""
_CBL_FOLDER = re.compile(r"^(aws|gcp|azure)-(\d\d)-(\d\d)-(\d{4})$")
_NODES_FOLDER = re.compile(r"^(\d+)-node$")


@dataclass(frozen=True, slots=True, kw_only=True)
class CblTrace:
    """The raw content of one CBL JSON trace."""

    gap_seconds: int
    data: np.ndarray
    prices: np.ndarray | None


def read_cbl_json(path: Path) -> CblTrace:
    """Read a CBL trace file: ``{"metadata": {"gap_seconds": G}, "data": [...], "prices"?: [...]}``.

    Raises:
        InputError: malformed JSON, missing keys, or non-numeric entries.
    """
    doc = read_json(path)
    if not isinstance(doc, dict) or "data" not in doc or "metadata" not in doc:
        raise InputError(
            path,
            "top level",
            "not a CBL trace (needs 'metadata' and 'data')",
            "Give a CBL trace or name the right --format; nothing was stored",
        )
    gap = _gap_seconds(path, doc["metadata"])
    data = _numbers(path, "data", doc["data"])
    prices = _numbers(path, "prices", doc["prices"]) if "prices" in doc else None
    if prices is not None and len(prices) != len(data):
        raise InputError(
            path,
            "prices",
            f"{len(prices)} prices for {len(data)} ticks",
            "Give one price per tick; nothing was stored",
        )
    return CblTrace(gap_seconds=gap, data=data, prices=prices)


def _gap_seconds(path: Path, metadata: object) -> int:
    """The trace's tick in whole seconds, from ``metadata.gap_seconds``.

    Raises:
        InputError: when it is missing or not a number of seconds in (0, 86400].
    """
    gap = metadata.get("gap_seconds") if isinstance(metadata, dict) else None
    if not isinstance(gap, int | float) or isinstance(gap, bool) or not 0 < gap <= 86_400:
        raise InputError(
            path,
            "metadata.gap_seconds",
            f"must be a number of seconds in (0, 86400], got {gap!r}",
            "Fix the trace's metadata; nothing was stored",
        )
    return int(gap)


def _numbers(path: Path, key: str, values: object) -> np.ndarray:
    if not isinstance(values, list) or not values:
        raise InputError(
            path, key, "must be a non-empty list of numbers", "Fix the trace; nothing was stored"
        )
    for i, v in enumerate(values):
        if not isinstance(v, int | float) or isinstance(v, bool) or not 0 <= v < 1e15:
            raise InputError(
                path,
                f"{key}[{i}]",
                f"not a non-negative number below 1e15: {str(v)[:40]}",
                "Fix the trace; nothing was stored",
            )
    return np.asarray(values, dtype=float)


def _cbl_context(path: Path) -> tuple[str, pd.Timestamp, str, int | None]:
    """Provider, start, kind ('availability'/'preemption') and node count from the path."""
    start = provider = None
    kind, nodes = "availability", None
    for folder in path.parents:
        if (m := _CBL_FOLDER.match(folder.name)) and start is None:
            provider = m.group(1)
            start = pd.Timestamp(f"{m.group(4)}-{m.group(2)}-{m.group(3)}", tz="UTC")
        elif (m := _NODES_FOLDER.match(folder.name)) and nodes is None:
            nodes = int(m.group(1))
        elif folder.name in ("availability", "preemption"):
            kind = folder.name
    if start is None or provider is None:
        raise InputError(
            path,
            "folder name",
            "a CBL trace's start date comes from its folder",
            "Put the file in a folder named like aws-02-15-2023; nothing was stored",
        )
    return provider, start, kind, nodes


def _relative_time(path: Path) -> str | None:
    """Why a CBL trace has no calendar date (None: it has one, from its folder)."""
    return next((RELATIVE_TIME[f.name] for f in path.parents if f.name in RELATIVE_TIME), None)


def read_cbl(path: Path) -> Parsed:
    """A CBL trace as availability rows (and spot price change points when it has prices);
    a trace with relative time only is checked, not stored."""
    if reason := _relative_time(path):
        trace = read_cbl_json(path)
        return Parsed(
            path=path,
            format="cbl",
            rows_read=len(trace.data),
            note=f"{reason}: not stored (the store keeps calendar time, never 1970); "
            "`spotwise bench suite` reads it",
        )
    provider, start, kind, nodes = _cbl_context(path)
    trace = read_cbl_json(path)
    zone, instance_type = cbl_pool(path.stem)
    ts = start + pd.to_timedelta(np.arange(len(trace.data)) * trace.gap_seconds, unit="s")
    single = (nodes or 1) == 1
    if single and trace.data.max() > 1:
        raise InputError(
            path,
            "data",
            "a 1-node trace holds only 0 and 1",
            "Put N-node traces in a folder named N-node; nothing was stored",
        )
    target = 1 if single else int(nodes or trace.data.max())
    # 1-node traces mark 0 = available / running; N-node traces count the nodes obtained.
    available = (1 - trace.data) if single else trace.data
    source = f"cbl-{kind}-{'1' if single else target}node"
    frames = {
        "availability": validate(
            "availability",
            pd.DataFrame(
                {
                    "source": source,
                    "provider": provider,
                    "zone": zone,
                    "instance_type": instance_type,
                    "ts": ts,
                    "available_nodes": available.astype(int),
                    "target_nodes": target,
                    ROW: np.arange(len(ts)),
                }
            ),
            origin=str(path),
            where="data[{}]",
        )
    }
    if trace.prices is not None:
        change = np.r_[True, np.diff(trace.prices) != 0]
        frames["prices"] = validate(
            "prices",
            pd.DataFrame(
                {
                    "source": "cbl-prices",
                    "provider": provider,
                    "region": region_of_zone(provider, zone),
                    "zone": zone,
                    "instance_type": instance_type,
                    "market": "spot",
                    "ts": ts[change],
                    "price": trace.prices[change],
                    ROW: np.flatnonzero(change),
                }
            ),
            origin=str(path),
            where="prices[{}]",
        )
    return Parsed(path=path, format="cbl", frames=frames, rows_read=len(trace.data))


def _sniff_cbl(path: Path, head: str) -> bool:
    return path.suffix == ".json" and '"metadata"' in head and '"gap_seconds"' in head


def _last_per_instant(frame: pd.DataFrame) -> pd.DataFrame:
    """Several rows at one instant: the last one is the state after it."""
    return frame.drop_duplicates("ts", keep="last").sort_values("ts", kind="stable")


def read_bamboo_events(path: Path) -> Parsed:
    """Bamboo's ``time_ms,add|remove,nodeK`` cluster logs as launched/preempted events."""
    raw = read_csv(path, columns=("time_ms", "action", "node"), header=False)
    millis = pd.to_numeric(raw["time_ms"], errors="coerce")
    _require(path, raw, millis.notna() & (millis >= 0), "time_ms", "not a non-negative number")
    _require_offsets(path, raw, millis, "ms", "time_ms")
    _require(path, raw, raw["action"].isin(["add", "remove"]), "action", "must be add or remove")
    family = path.stem.split("-")[0]
    frame = pd.DataFrame(
        {
            "source": "bamboo-events",
            "provider": "aws",
            "zone": "",
            "instance_type": "p3.2xlarge" if family == "p3" else family,
            "node": raw["node"],
            "ts": EPOCH + pd.to_timedelta(millis, unit="ms"),
            "event": raw["action"].map({"add": "launched", "remove": "preempted"}),
            ROW: raw[ROW],
        }
    )
    return Parsed(
        path=path,
        format="bamboo-events",
        rows_read=len(raw),
        frames={"events": validate("events", frame, origin=str(path), where="line {}")},
    )


def _sniff_bamboo_events(path: Path, head: str) -> bool:
    return (
        path.suffix == ".csv"
        and re.match(r"^\d+,(add|remove),\S+\s*$", head.split("\n")[0]) is not None
    )


def read_node_counts(path: Path) -> Parsed:
    """Node-count logs (``time,count``): Parcae's available nodes, Bamboo's AWS spot counts."""
    raw = read_csv(path, columns=("time", "count"), header=False)
    times = pd.to_numeric(raw["time"], errors="coerce")
    counts = pd.to_numeric(raw["count"], errors="coerce")
    _require(path, raw, times.notna() & (times >= 0), "time", "not a non-negative number")
    _require(
        path,
        raw,
        counts.notna() & (counts >= 0) & (counts % 1 == 0),
        "count",
        "not a whole number of nodes",
    )
    name = path.stem
    if m := re.match(
        r"aws-spot-instances-([a-z0-9]+)-([a-z0-9]+)-(?:([a-z]+-[a-z]+-\d[a-z])-)?"
        r"(\d{4}-\d\d-\d\d)(?:-(\d\d):?(\d\d))?-to-",
        name,
    ):
        instance_type = f"{m.group(1)}.{m.group(2)}"
        zone = m.group(3) or ""
        start = pd.Timestamp(m.group(4), tz="UTC")
        if m.group(5):
            start += pd.Timedelta(hours=int(m.group(5)), minutes=int(m.group(6)))
        # Bamboo logged most files in seconds; the multi-day file in fractional hours.
        unit = "h" if raw["time"].str.contains(".", regex=False).any() else "s"
        source = "bamboo-aws-counts"
    else:
        instance_type, zone, start, unit, source = "p3.2xlarge", "", EPOCH, "ms", "parcae"
    _require_offsets(path, raw, times, unit, "time")
    frame = _last_per_instant(
        pd.DataFrame(
            {
                "ts": start + pd.to_timedelta(times, unit=unit),
                "available_nodes": counts.astype(int),
                ROW: raw[ROW],
            }
        )
    )
    frame = frame.assign(
        source=source,
        provider="aws",
        zone=zone,
        instance_type=instance_type,
        target_nodes=max(1, int(counts.max())),
    )
    return Parsed(
        path=path,
        format="node-counts",
        rows_read=len(raw),
        frames={"availability": validate("availability", frame, origin=str(path), where="line {}")},
    )


def _sniff_node_counts(path: Path, head: str) -> bool:
    return (
        path.suffix == ".csv" and re.match(r"^\d+(\.\d+)?,\d+\s*$", head.split("\n")[0]) is not None
    )


def read_gcloud_counts(path: Path) -> Parsed:
    """Bamboo's GCP preemptible live-instance counts (``date, time, count``, taken as UTC)."""
    raw = read_csv(path, columns=("date", "time", "count"), header=False)
    ts = pd.to_datetime(
        raw["date"] + " " + raw["time"], format="%Y-%m-%d %H:%M:%S", errors="coerce", utc=True
    )
    counts = pd.to_numeric(raw["count"], errors="coerce")
    storable = ts.notna() & ts.dt.year.between(1678, 2261)  # what a nanosecond stamp holds
    _require(path, raw, storable, "time", "not a date and time like 2021-12-10, 13:07:45")
    _require(
        path,
        raw,
        counts.notna() & (counts >= 0) & (counts % 1 == 0),
        "count",
        "not a whole number of instances",
    )
    shape, _, place = path.stem.partition("-")
    zone = f"us-{place[:-1]}-{place[-1]}" if re.match(r"^[a-z]+\d[a-z]$", place) else place
    frame = _last_per_instant(
        pd.DataFrame(
            {
                "ts": ts.astype("datetime64[ns, UTC]"),
                "available_nodes": counts.astype(int),
                ROW: raw[ROW],
            }
        )
    )
    frame = frame.assign(
        source="bamboo-gcp-counts",
        provider="gcp",
        zone=zone,
        instance_type=shape,
        target_nodes=max(1, int(counts.max())),
    )
    return Parsed(
        path=path,
        format="gcloud-counts",
        rows_read=len(raw),
        frames={"availability": validate("availability", frame, origin=str(path), where="line {}")},
    )


def _sniff_gcloud_counts(path: Path, head: str) -> bool:
    return re.match(r"^\d{4}-\d\d-\d\d, \d\d:\d\d:\d\d, \d+\s*$", head.split("\n")[0]) is not None


MAX_OFFSET_DAYS = 365 * 50
"""Longest time from a trace's start that a row may lie (any more is a damaged number)."""
_UNIT_DAYS = {"ms": 86_400_000.0, "s": 86_400.0, "h": 24.0}


def _require_offsets(
    path: Path, raw: pd.DataFrame, values: pd.Series, unit: str, column: str
) -> None:
    """Offsets from the trace's start must lie within :data:`MAX_OFFSET_DAYS`."""
    days = values / _UNIT_DAYS[unit]
    _require(
        path,
        raw,
        days <= MAX_OFFSET_DAYS,
        column,
        f"more than {MAX_OFFSET_DAYS // 365} years after the trace's start",
    )


def _require(path: Path, raw: pd.DataFrame, ok: pd.Series, column: str, problem: str) -> None:
    if not ok.all():
        i = int(np.flatnonzero(~ok.to_numpy(dtype=bool))[0])
        raise InputError(
            path,
            f"line {raw[ROW].iloc[i]}, field {column!r}",
            f"{problem}, got {raw[column].iloc[i]!r}",
            "Fix or remove that line; nothing was stored",
        )


CBL_PRICE_CHANGES_HEADER = "trace_dir,zone,instance_type,tick_index,seconds_from_trace_start"


def read_cbl_price_changes(path: Path) -> Parsed:
    """The change-point list of the CBL ``prices`` arrays: checked; the arrays are stored."""
    raw = read_csv(path, columns=tuple(CBL_PRICE_CHANGES_HEADER.split(",")), header=True)
    return Parsed(
        path=path,
        format="cbl-price-changes",
        rows_read=len(raw),
        note="derived from the CBL traces' prices arrays, which are loaded from "
        "the JSON traces; nothing to store",
    )


FORMATS = (
    FileFormat(
        name="cbl",
        description="CBL spot availability/preemption trace (JSON)",
        sniff=_sniff_cbl,
        read=read_cbl,
    ),
    FileFormat(
        name="bamboo-events",
        description="Bamboo cluster log time_ms,add|remove,node",
        sniff=_sniff_bamboo_events,
        read=read_bamboo_events,
    ),
    FileFormat(
        name="node-counts",
        description="node counts time,count (Parcae, Bamboo AWS)",
        sniff=_sniff_node_counts,
        read=read_node_counts,
    ),
    FileFormat(
        name="gcloud-counts",
        description="Bamboo GCP live instances 'date, time, count'",
        sniff=_sniff_gcloud_counts,
        read=read_gcloud_counts,
    ),
    FileFormat(
        name="cbl-price-changes",
        description="CBL price change-point list (derived, CSV)",
        sniff=lambda p, head: head.startswith(CBL_PRICE_CHANGES_HEADER),
        read=read_cbl_price_changes,
    ),
)
