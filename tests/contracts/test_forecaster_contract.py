"""The forecaster contracts, for every registered model:

- one-series price forecasters (``FORECASTERS``) and panel forecasters (``PANEL_FORECASTERS``:
  the per-series ones over a panel, and the global GBM): ``h`` finite steps per series after
  its last value, ``lo <= mean <= hi``, the same answer twice, and a constant series forecast
  as that constant;
- risk models (``RISK_MODELS``): one probability in [0, 1] per row, computed from that row
  alone, the same answer twice, and better than a coin where the rows carry the signal.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from spotwise.pricing.forecast.models import FORECASTERS
from spotwise.pricing.forecast.panel import PANEL_FORECASTERS
from spotwise.pricing.forecast.risk import RISK_MODELS

H, LEVEL = 12, 90


def walk(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 2.0 + np.cumsum(rng.normal(0, 0.01, n)) + 0.05 * np.sin(np.arange(n) * 2 * np.pi / 24)


def panel(values: list[np.ndarray]) -> pd.DataFrame:
    frames = [
        pd.DataFrame(
            {
                "unique_id": f"s{i}",
                "ds": pd.date_range("2026-01-01", periods=len(y), freq="h", tz="UTC"),
                "y": y,
            }
        )
        for i, y in enumerate(values)
    ]
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("alias", sorted(FORECASTERS))
def test_a_series_forecaster_gives_h_ordered_steps_and_repeats_itself(alias: str) -> None:
    y = walk(300, 0)
    first, second = (FORECASTERS[alias]().fit(y).predict(H, LEVEL) for _ in range(2))
    for part in ("mean", "lo", "hi"):
        values = getattr(first, part)
        assert values.shape == (H,) and np.isfinite(values).all()
        assert np.array_equal(values, getattr(second, part))
    assert (first.lo <= first.mean + 1e-12).all() and (first.mean <= first.hi + 1e-12).all()


@pytest.mark.parametrize("alias", sorted(FORECASTERS))
def test_a_series_forecaster_forecasts_a_constant_as_that_constant(alias: str) -> None:
    result = FORECASTERS[alias]().fit(np.full(200, 3.25)).predict(H, LEVEL)
    assert np.allclose(result.mean, 3.25)


@pytest.mark.slow
@pytest.mark.parametrize("alias", sorted(PANEL_FORECASTERS))
def test_a_panel_forecaster_gives_h_steps_after_each_series_and_repeats_itself(
    alias: str,
) -> None:
    df = panel([walk(220, 1), walk(200, 2), walk(240, 3)])  # GBM needs 168 h of history
    first, second = (
        PANEL_FORECASTERS[alias]().fit(df, H, LEVEL).predict(df, H, freq="h") for _ in range(2)
    )
    columns = [alias, f"{alias}-lo-{LEVEL}", f"{alias}-hi-{LEVEL}"]
    assert list(first.columns) == ["unique_id", "ds", *columns]
    pd.testing.assert_frame_equal(first, second)
    for uid, rows in first.groupby("unique_id"):
        last = df.loc[df["unique_id"] == uid, "ds"].max()
        assert list(rows["ds"]) == list(pd.date_range(last, periods=H + 1, freq="h")[1:])
    values = first[columns].to_numpy()
    assert np.isfinite(values).all()
    assert (values[:, 1] <= values[:, 0] + 1e-12).all() and (
        values[:, 0] <= values[:, 2] + 1e-12
    ).all()


@pytest.mark.parametrize("alias", sorted(PANEL_FORECASTERS))
def test_a_panel_forecaster_forecasts_constant_series_as_those_constants(alias: str) -> None:
    df = panel([np.full(200, 1.5), np.full(200, 0.75)])
    result = PANEL_FORECASTERS[alias]().fit(df, H, LEVEL).predict(df, H, freq="h")
    expected = result["unique_id"].map({"s0": 1.5, "s1": 0.75})
    assert np.allclose(result[alias], expected)


def risk_rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose first column (the one every kind of risk model reads) carries the risk."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    y = (rng.random(n) < 1 / (1 + np.exp(-3 * x[:, 0]))).astype(int)
    return x, y


@pytest.mark.parametrize("name", sorted(RISK_MODELS))
def test_a_risk_model_gives_one_probability_per_row_from_that_row_alone(name: str) -> None:
    x, y = risk_rows(2000, 0)
    test, _ = risk_rows(500, 1)
    model = RISK_MODELS[name]().fit(x, y)
    p = model.predict_proba(test)
    assert p.shape == (500,) and ((p >= 0) & (p <= 1)).all()
    assert np.allclose(model.predict_proba(test[::-1]), p[::-1])  # no row sees another
    assert np.allclose(model.predict_proba(test[:7]), p[:7])
    assert np.array_equal(RISK_MODELS[name]().fit(x, y).predict_proba(test), p)


@pytest.mark.parametrize("name", sorted(RISK_MODELS))
def test_a_risk_model_beats_a_coin_where_the_rows_carry_the_risk(name: str) -> None:
    x, y = risk_rows(2000, 0)
    test, truth = risk_rows(1000, 2)
    assert roc_auc_score(truth, RISK_MODELS[name]().fit(x, y).predict_proba(test)) > 0.75
