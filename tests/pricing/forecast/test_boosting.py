"""The global gradient-boosting price forecaster: one model for every series."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spotwise.pricing.forecast.boosting import GlobalBoosting


def test_gbm_forecasts_each_series_the_same_alone_or_in_a_batch() -> None:
    rng = np.random.default_rng(0)
    ds = pd.date_range("2024-01-01", periods=400, freq="h", tz="UTC")
    grid = pd.concat(
        pd.DataFrame({"unique_id": uid, "ds": ds, "y": 1 + np.cumsum(rng.random(400) < 0.05) * s})
        for uid, s in (("a", 0.1), ("b", -0.001), ("c", 0.02))
    )
    model = GlobalBoosting().fit(grid, 6)
    batch = model.predict(grid, 6, freq="h")
    alone = pd.concat(
        model.predict(grid[grid["unique_id"] == uid], 6, freq="h") for uid in ("a", "b", "c")
    )
    pd.testing.assert_frame_equal(batch, alone.reset_index(drop=True))
    assert list(batch["ds"].iloc[:6]) == list(pd.date_range(ds[-1], periods=7, freq="h")[1:])
    assert (batch["GBM-lo-90"] <= batch["GBM"]).all() and (batch["GBM"] <= batch["GBM-hi-90"]).all()
    assert batch.groupby("unique_id")["GBM"].first().nunique() == 3
    with pytest.raises(ValueError, match="empty"):
        model.predict(grid.iloc[:0], 6, freq="h")
    assert model.training_rows > 1000  # every fourth origin, six steps ahead, three series
    capped = GlobalBoosting(max_rows=500).fit(grid, 6)
    assert 400 < capped.training_rows <= 500  # origins further apart, as many as fit
