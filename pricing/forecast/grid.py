"""Change-point price series put on a regular grid, without look-ahead.

A price holds until the next change point, so the value at grid time ``ds`` is the last change
point at or before ``ds``; the grid starts at the first grid time on or after a series' first
change point.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def to_grid(changes: pd.DataFrame, freq: str, end: pd.Timestamp | None = None) -> pd.DataFrame:
    """Long frame ``unique_id, ds, y`` on a ``freq`` grid ('h' or 'D') from change points
    ``unique_id, ts, price``; each series runs to ``end`` (default: its own last change).

    All series at once: the grid times of every series, then the last change at or before each
    (``merge_asof`` by series), so thousands of series cost one sort, not a loop each."""
    points = changes.sort_values("ts", kind="stable").drop_duplicates(
        ["unique_id", "ts"], keep="last"
    )
    spans = points.groupby("unique_id", sort=True)["ts"].agg(["min", "max"])
    first = spans["min"].dt.ceil(freq)
    last = (spans["max"] if end is None else pd.Series(end, index=spans.index)).dt.floor(freq)
    step = pd.Timedelta(1, unit=freq)
    counts = ((last - first) // step + 1).clip(lower=0).astype(int)
    if counts.sum() == 0:
        return pd.DataFrame(
            {
                "unique_id": pd.Series(dtype=str),
                "ds": pd.Series(dtype="datetime64[ns, UTC]"),
                "y": pd.Series(dtype=float),
            }
        )
    n = counts.to_numpy()
    tz = first.dt.tz
    starts = (first.dt.tz_localize(None) if tz is None else first.dt.tz_convert(None)).to_numpy()
    offsets = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    times = pd.DatetimeIndex(np.repeat(starts, n) + offsets * step.to_timedelta64())
    grid = pd.DataFrame(
        {
            "unique_id": np.repeat(spans.index.to_numpy(), n),
            "ds": times if tz is None else times.tz_localize("UTC").tz_convert(tz),
        }
    )
    filled = pd.merge_asof(
        grid.sort_values("ds", kind="stable"),
        points.rename(columns={"ts": "ds", "price": "y"})[["unique_id", "ds", "y"]],
        on="ds",
        by="unique_id",
    )
    return filled.sort_values(["unique_id", "ds"], kind="stable").reset_index(drop=True)
