"""Preemption-risk features and labels: nothing from the future, labels inside the horizon."""

from __future__ import annotations

import numpy as np
import pandas as pd

from spotwise.pricing.forecast.features import FEATURES, lose_within, pool_features


def test_labels_look_only_inside_the_horizon() -> None:
    available = np.array([[True, True, False, True, True, True]])
    assert lose_within(available, 1).tolist() == [[False, True, False, False, False, False]]
    assert lose_within(available, 2).tolist() == [[True, True, False, False, False, False]]


def test_features_never_use_the_future() -> None:
    rng = np.random.default_rng(0)
    available = rng.random((3, 500)) < 0.8
    changed = available.copy()
    changed[:, 300:] = ~changed[:, 300:]
    start = pd.Timestamp("2023-02-15", tz="UTC")
    a = pool_features(available, 195, start)
    b = pool_features(changed, 195, start)
    before = a["tick"] < 300
    assert np.allclose(a.loc[before, list(FEATURES)], b.loc[before, list(FEATURES)])
    assert not np.allclose(a.loc[~before, list(FEATURES)], b.loc[~before, list(FEATURES)])
