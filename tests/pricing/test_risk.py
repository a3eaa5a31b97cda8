"""Preemption-risk features, labels and the risk backtest."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from pricing.forecast.features import FEATURES, lose_within, pool_features
from tests.conftest import CliRun


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


def test_bench_risk_beats_climatology_and_persistence_on_bundled_traces(cli: CliRun) -> None:
    result = cli("bench", "risk", "--test-from-hours", "480", "--horizon-minutes", "60", "--json")
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    assert set(scores) >= {"models", "climatology_brier", "persistence_auc", "n"}
    best_auc = max(m["auc"] for m in scores["models"].values())
    best_brier = min(m["brier"] for m in scores["models"].values())
    assert best_auc > scores["persistence_auc"] + 0.03
    assert best_brier < scores["climatology_brier"] - 0.05
    assert scores["n"] > 5000


def test_bench_risk_rejects_a_test_start_past_the_traces(cli: CliRun) -> None:
    result = cli("bench", "risk", "--test-from-hours", "5000")
    assert result.returncode != 0 and "no training or no test" in result.stderr
