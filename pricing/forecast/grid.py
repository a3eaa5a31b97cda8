"""Change-point price series put on a regular grid, without look-ahead.

A price holds until the next change point, so the value at grid time ``ds`` is the last change
point at or before ``ds``; the grid starts at the first grid time on or after a series' first
change point.
"""

from __future__ import annotations

import pandas as pd


def to_grid(changes: pd.DataFrame, freq: str, end: pd.Timestamp | None = None) -> pd.DataFrame:
    """Long frame ``unique_id, ds, y`` on a ``freq`` grid ('h' or 'D') from change points
    ``unique_id, ts, price``; each series runs to ``end`` (default: its own last change)."""
    frames = []
    for uid, group in changes.sort_values("ts").groupby("unique_id", sort=True):
        series = group.drop_duplicates("ts", keep="last").set_index("ts")["price"]
        first = series.index[0].ceil(freq)
        last = (end or series.index[-1]).floor(freq)
        if last < first:
            continue
        grid = pd.date_range(first, last, freq=freq)
        values = series.reindex(series.index.union(grid)).ffill().loc[grid]
        frames.append(pd.DataFrame({"unique_id": uid, "ds": grid, "y": values.to_numpy()}))
    if not frames:
        return pd.DataFrame(
            {
                "unique_id": pd.Series(dtype=str),
                "ds": pd.Series(dtype="datetime64[ns, UTC]"),
                "y": pd.Series(dtype=float),
            }
        )
    return pd.concat(frames, ignore_index=True)
