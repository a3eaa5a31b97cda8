"""``spotwise bench price``: the price backtest on the bundled AWS price history."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CliRun


@pytest.mark.slow
def test_bench_price_gbm_beats_last_value_with_calibrated_intervals(cli: CliRun) -> None:
    result = cli("bench", "price", "--test-from", "2020-01-24", "--horizon-hours", "24", "--json")
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    assert scores["n_series"] == 98
    assert scores["models"]["Naive"]["mase"] == 1.0
    assert scores["models"]["GBM"]["mase"] < 0.98
    assert 0.8 <= scores["models"]["GBM"]["coverage_90"] <= 0.98


@pytest.mark.slow
@pytest.mark.parametrize("bad", ["yesterday", "2030-01-01"])
def test_bench_price_rejects_a_bad_start(cli: CliRun, bad: str) -> None:
    result = cli("bench", "price", "--test-from", bad)
    assert result.returncode != 0 and "--test-from" in result.stderr
