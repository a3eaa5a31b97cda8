"""The hourly grid the price forecasts read: each price held until the next change."""

from __future__ import annotations

import pandas as pd

from spotwise.pricing.forecast.grid import to_grid


def changes(*points: tuple[str, float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "unique_id": "a",
            "ts": pd.to_datetime([p[0] for p in points], utc=True),
            "price": [p[1] for p in points],
        }
    )


def test_grid_holds_each_price_until_the_next_change_without_look_ahead() -> None:
    grid = to_grid(
        changes(("2024-01-01 00:30", 1.0), ("2024-01-01 02:00", 2.0), ("2024-01-01 03:59", 3.0)),
        "h",
    )
    assert grid["ds"].dt.hour.tolist() == [1, 2, 3]
    assert grid["y"].tolist() == [1.0, 2.0, 2.0]  # 03:59's price is not known at 03:00
